// cuco CPU emulator: fibers. A small x86-64 context switch (callee-saved registers, MXCSR and
// the x87 control word) because ucontext's swapcontext makes a signal-mask system call on every
// switch, and a kernel run switches hundreds of thousands of times. Other CPUs use ucontext.
// Stacks are mmap'd with a PROT_NONE guard page at the bottom and reused through a free list.
#include <sys/mman.h>
#include <unistd.h>
#include <vector>
#include "emu_internal.h"

namespace cuco_emu {
namespace {
size_t g_thread_stack = 64 * 1024;
std::vector<std::pair<size_t, char*>> g_free_stacks;  // (length, mapping)
size_t g_page = 4096;

char* stack_get(size_t len) {
  for (size_t i = 0; i < g_free_stacks.size(); ++i) {
    if (g_free_stacks[i].first == len) {
      char* s = g_free_stacks[i].second;
      g_free_stacks[i] = g_free_stacks.back();
      g_free_stacks.pop_back();
      return s;
    }
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) fail(5, "cannot map a %zu-byte fiber stack", len);
  mprotect(p, g_page, PROT_NONE);  // overflow hits the guard and is reported as a crash
  return static_cast<char*>(p);
}
}  // namespace

size_t thread_stack_bytes() { return g_thread_stack; }
void set_thread_stack_bytes(size_t n) { g_thread_stack = n; }
}  // namespace cuco_emu

#if defined(__x86_64__)
extern "C" void cuco_emu_ctx_switch(void** save_sp, void* load_sp);
extern "C" void cuco_emu_ctx_entry();
asm(R"(
.text
.globl cuco_emu_ctx_switch
.type cuco_emu_ctx_switch,@function
cuco_emu_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size cuco_emu_ctx_switch,.-cuco_emu_ctx_switch
.globl cuco_emu_ctx_entry
.type cuco_emu_ctx_entry,@function
cuco_emu_ctx_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
.size cuco_emu_ctx_entry,.-cuco_emu_ctx_entry
)");

namespace cuco_emu {
namespace {
void* g_sched_sp = nullptr;
}
void fiber_prepare(Fiber* f, void (*entry)(void*), size_t stack_bytes) {
  g_page = (size_t)sysconf(_SC_PAGESIZE);
  f->stack_len = stack_bytes + g_page;
  f->stack = stack_get(f->stack_len);
  uintptr_t top = ((uintptr_t)f->stack + f->stack_len) & ~(uintptr_t)15;
  uint64_t* sp = reinterpret_cast<uint64_t*>(top);
  // Frame popped by cuco_emu_ctx_switch: ret lands in cuco_emu_ctx_entry with rsp 16-aligned.
  sp[-1] = (uint64_t)&cuco_emu_ctx_entry;  // return address
  sp[-2] = 0;                              // rbp
  sp[-3] = 0;                              // rbx
  sp[-4] = (uint64_t)f;                    // r12: argument
  sp[-5] = (uint64_t)entry;                // r13: function
  sp[-6] = 0;                              // r14
  sp[-7] = 0;                              // r15
  sp[-8] = 0x1F80;                         // MXCSR default (at rsp + 8)
  sp[-9] = 0x037F;                         // x87 control word default (at rsp)
  f->sp = sp - 9;
}
void fiber_switch_in(Fiber* f) { cuco_emu_ctx_switch(&g_sched_sp, f->sp); }
void fiber_switch_out(Fiber* f) { cuco_emu_ctx_switch(&f->sp, g_sched_sp); }
}  // namespace cuco_emu

#else  // portable fallback
#include <ucontext.h>
#include <unordered_map>
namespace cuco_emu {
namespace {
struct UcFiber {
  ucontext_t uc;
  void (*entry)(void*);
};
ucontext_t g_sched_uc;
std::unordered_map<Fiber*, UcFiber> g_ucs;
void uc_entry(unsigned hi, unsigned lo) {
  Fiber* f = reinterpret_cast<Fiber*>(((uintptr_t)hi << 32) | lo);
  g_ucs[f].entry(f);
}
}  // namespace
void fiber_prepare(Fiber* f, void (*entry)(void*), size_t stack_bytes) {
  g_page = (size_t)sysconf(_SC_PAGESIZE);
  f->stack_len = stack_bytes + g_page;
  f->stack = stack_get(f->stack_len);
  UcFiber& u = g_ucs[f];
  u.entry = entry;
  getcontext(&u.uc);
  u.uc.uc_stack.ss_sp = f->stack + g_page;
  u.uc.uc_stack.ss_size = stack_bytes;
  u.uc.uc_link = nullptr;
  makecontext(&u.uc, (void (*)())uc_entry, 2, (unsigned)((uintptr_t)f >> 32), (unsigned)(uintptr_t)f);
  f->sp = &u.uc;
}
void fiber_switch_in(Fiber* f) { swapcontext(&g_sched_uc, &g_ucs[f].uc); }
void fiber_switch_out(Fiber* f) { swapcontext(&g_ucs[f].uc, &g_sched_uc); }
}  // namespace cuco_emu
#endif

namespace cuco_emu {
void fiber_release(Fiber* f) {
  if (!f->stack) return;
  g_free_stacks.emplace_back(f->stack_len, f->stack);
  f->stack = nullptr;
  f->sp = nullptr;
}
}  // namespace cuco_emu
