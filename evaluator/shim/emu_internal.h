// cuco CPU emulator runtime: internal structures shared by the runtime's translation units.
// One rank = one process = one OS thread. Every CUDA thread, and the host code, is a fiber;
// the scheduler (sched.cpp) runs them cooperatively in a fixed, adversarial order.
#ifndef CUCO_EMU_INTERNAL_H_
#define CUCO_EMU_INTERNAL_H_
#include <cuda_runtime.h>
#include <stdint.h>
#include <vector>

namespace cuco_emu {

enum class St : uint8_t { Fresh, Runnable, Spin, Barrier, Done };
enum WaitKind : uint8_t { kNoWait, kBlockBar, kWarpBar };

struct Block;
struct Launch;
struct Stream;

struct Fiber {
  void* sp = nullptr;        // saved stack pointer while switched out
  char* stack = nullptr;     // mapping base (the lowest page is a PROT_NONE guard)
  size_t stack_len = 0;
  St state = St::Fresh;
  uint8_t wait = kNoWait;    // what a St::Barrier fiber waits for
  uint8_t wop = 0;           // pending warp operation (cuco_emu::WarpOp)
  Block* block = nullptr;    // nullptr for the host fiber
  unsigned linear = 0;       // linear thread index in the block
  uint3 tid{0, 0, 0};
  int warg = 0, wwidth = 32;
  unsigned wmask = 0;
  unsigned long long wval = 0, wres = 0;
  const char* what = nullptr;  // last spin wait, for progress detection and deadlock reports
  long slot = 0;
  unsigned long long have = 0, want = 0;
};

struct Warp {
  unsigned live = 0;     // lanes that exist and have not exited
  unsigned arrived = 0;  // lanes waiting in a warp operation
};

struct Block {
  Launch* L = nullptr;
  uint64_t linear = 0;
  uint3 bid{0, 0, 0};
  unsigned nthreads = 0, live = 0, nrunnable = 0;
  unsigned bar_arrived = 0;
  int bar_acc = 0, bar_res = 0, bar_op = 0;
  Fiber* threads = nullptr;
  Warp* warps = nullptr;
  uint64_t* rbits = nullptr;  // runnable threads
  char* arena = nullptr;      // static shared region first, dynamic region ends at a guard page
  size_t arena_key = 0;
  char* dyn = nullptr;
  size_t static_wm = 0;       // static shared bytes poisoned so far in this block
  uint8_t did_comm = 0, did_mma = 0, did_xfer = 0;  // trace: communicated / ran GEMM tiles / moved data
  uint32_t* issuers = nullptr;        // trace: per warp, the lanes that issued transfers
};

struct Launch {
  uint64_t seq = 0;           // launch order: later launches run first
  dim3 grid, block;
  size_t smem = 0;
  unsigned nthreads = 0;
  uint64_t nblocks = 0, blocks_done = 0;
  void (*thunk)(void*) = nullptr;
  void (*del)(void*) = nullptr;
  void* pack = nullptr;
  Stream* stream = nullptr;
  std::vector<Block*> blocks;  // started and unfinished blocks
  std::vector<uint64_t> bbits; // blocks not started yet or with runnable threads
  long top_word = 0;           // no set bit above this word of bbits
  uint32_t comm_blocks = 0, mma_blocks = 0, xfer_blocks = 0;  // trace: blocks that did each
};

// fiber.cpp
void fiber_prepare(Fiber* f, void (*entry)(void*), size_t stack_bytes);
void fiber_release(Fiber* f);
void fiber_switch_in(Fiber* f);   // scheduler -> fiber; returns when the fiber switches out
void fiber_switch_out(Fiber* f);  // fiber -> scheduler
size_t thread_stack_bytes();
void set_thread_stack_bytes(size_t n);

// sched.cpp
enum class Hold { HostDone, Blocked, Slice };
void sched_start_host(void (*fn)(void*), void* arg);
Hold sched_run_hold(bool* progressed);
// Deliver one pending GIN put or signal (the NIC); false when none is pending.
bool nic_deliver_one();
Fiber* current();
uint64_t switch_count();
void yield_as(St s);
void wake_fiber(Fiber* f);  // St::Barrier -> St::Runnable
void check_warp_groups(Block* b, unsigned w);
void note_progress();
void mark_streams_dirty();
void activate_launch(Launch* L);
const Fiber& host_fiber();
const std::vector<Launch*>& active_launches();

// shared_mem.cpp
void block_arena_get(Block* b, size_t smem);
void block_arena_put(Block* b);

// diagnostics.cpp
int dump_blocked(int rank, int max_lines);
void describe_fiber(const Fiber* f, char* buf, size_t n);
bool addr_in_current_dyn_guard(const void* addr);
bool addr_in_current_stack_guard(const void* addr);

// streams.cpp
void advance_streams();
void kernel_done(Launch* L);
void require_host(const char* what);
void host_wait(const char* what, long slot, bool (*done)(void*), void* arg);
int unjoined_stream(cudaStream_t joined);  // id of a stream other than `joined` with work queued, or -1

// trace.cpp: the observed design point's raw facts (summary written into the trace region)
void trace_block_done(Block* b);
void trace_launch_done(Launch* L, int stream_id);
void trace_set_main_stream(int id);
void trace_set_rank(int rank);
void trace_begin_call(int call);  // ctx.epoch of the call starting (the enter checks)
void trace_set_perturb(int mode);  // the dependence probe (manifest perturb_tile: 0 off, 1, 2)
void trace_set_peer_ranges(const void* const* lo, const size_t* n, int count);
void trace_copy(const void* dst, const void* src, size_t n, int stream_id);
int trace_summary(char* buf, size_t cap, int calls);
int stream_id(cudaStream_t s);  // streams.cpp

// hostapi.cpp
void set_num_sms(int n);
void set_device_memory_budget(int rank, size_t bytes);  // cudaMalloc past it exits 7
void free_device(void* p);  // cudaFree without the implicit device sync (stream-ordered frees)

// coord.cpp: the process-level loop of one rank and its crash reports.
struct CrashRegion {
  uintptr_t lo, hi;     // the buffer
  uintptr_t region_lo;  // start of its mapping (red zone first)
  bool readonly;
  int owner;            // the rank whose memory it is; -1: shared by every rank (symmetric, signals)
  int call;             // the call (iteration) it belongs to; 0: every call
  char name[48];
};
void install_crash_handler(int rank, const CrashRegion* regions, int nregions, size_t page);
void set_current_call(int call);  // for crash reports: which call's buffers are accessible
void start_runaway_watchdog(int rank, int seconds);
[[noreturn]] void fail(int code, const char* fmt, ...);
// Exit codes beyond those of emu_main.cpp's header: the candidate broke its contract at run time.
constexpr int kExitMemory = 7;    // out-of-bounds write into a red zone, or over the allocation budget
constexpr int kExitContract = 8;  // work left on a stream that cuco_run never joined
}  // namespace cuco_emu

#endif  // CUCO_EMU_INTERNAL_H_
