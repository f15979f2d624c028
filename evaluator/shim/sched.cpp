// cuco CPU emulator: the deterministic cooperative scheduler of one rank.
//
// Order (adversarial, to expose missing synchronisation the same way on every run):
//   1. the host fiber, whenever it can run (so all of cuco_run's launches are queued first);
//   2. among the kernels running at their streams' heads, the most recently launched one
//      (consumers are usually launched after producers);
//   3. within a kernel, the highest linear block index that has a runnable thread; all blocks
//      exist at once, as in a co-resident persistent grid;
//   4. within a block, the lowest runnable thread index.
// A fiber runs until it yields. Fibers that spin on a condition (cuco_wait, barriers across
// ranks, atomics polling, __nanosleep) are parked and re-polled only when nothing else can
// run; a poll round in which no parked fiber gets anywhere means this rank is blocked.
#include <string.h>
#include <algorithm>
#include "emu_internal.h"

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace cuco_emu {
unsigned atomic_count = 0;  // changing atomics (counted as progress)

namespace {
constexpr size_t kHostStack = 1 << 20;
constexpr uint64_t kSliceYields = 200000;  // hand the baton on after this many yields in a hold

struct Sched {
  Fiber host;
  void (*host_fn)(void*) = nullptr;
  void* host_arg = nullptr;
  Fiber* cur = nullptr;
  std::vector<Launch*> active;  // running kernels, newest first
  std::vector<Fiber*> spinners;
  uint64_t progress = 0;
  uint64_t round_start = 0;
  uint64_t switches = 0;  // read by the runaway watchdog (coord.cpp)
  bool dirty = false;
};
Sched S;

inline uint64_t progress_now() { return S.progress + atomic_count; }
inline void bit_set(uint64_t* w, uint64_t i) { w[i >> 6] |= 1ull << (i & 63); }
inline void bit_clear(uint64_t* w, uint64_t i) { w[i >> 6] &= ~(1ull << (i & 63)); }

void set_block_bit(Launch* L, uint64_t b) {
  bit_set(L->bbits.data(), b);
  L->top_word = std::max<long>(L->top_word, (long)(b >> 6));
}

long highest_block(Launch* L) {
  while (L->top_word >= 0 && L->bbits[L->top_word] == 0) --L->top_word;
  if (L->top_word < 0) return -1;
  return L->top_word * 64 + 63 - __builtin_clzll(L->bbits[L->top_word]);
}

unsigned lowest_thread(const Block* b) {
  for (unsigned w = 0;; ++w)
    if (b->rbits[w]) return w * 64 + __builtin_ctzll(b->rbits[w]);
}
}  // namespace

// ------------------------------------------------------------------ runnable bookkeeping

static void make_runnable(Fiber* f) {
  f->state = St::Runnable;
  f->wait = kNoWait;
  Block* b = f->block;
  if (!b) return;
  bit_set(b->rbits, f->linear);
  if (b->nrunnable++ == 0) set_block_bit(b->L, b->linear);
}

static void make_unrunnable(Fiber* f, St s) {
  f->state = s;
  Block* b = f->block;
  if (!b) return;
  bit_clear(b->rbits, f->linear);
  if (--b->nrunnable == 0) bit_clear(b->L->bbits.data(), b->linear);
}

Fiber* current() { return S.cur; }
uint64_t switch_count() { return S.switches; }
void wake_fiber(Fiber* f) { make_runnable(f); }
void note_progress() { ++S.progress; }
void mark_streams_dirty() { S.dirty = true; }

void yield_as(St s) {
  Fiber* f = S.cur;
  if (s != St::Runnable) make_unrunnable(f, s);
  if (s != St::Spin) ++S.progress;
  fiber_switch_out(f);
}

// ------------------------------------------------------------------ blocks and launches

static void thread_main(void* arg) {
  Fiber* f = static_cast<Fiber*>(arg);
  Launch* L = f->block->L;
  L->thunk(L->pack);
  yield_as(St::Done);
}

static void host_main(void* arg) {
  (void)arg;
  S.host_fn(S.host_arg);
  yield_as(St::Done);
}

static Block* start_block(Launch* L, uint64_t i) {
  Block* b = new Block;
  b->L = L;
  b->linear = i;
  const uint64_t gx = L->grid.x, gxy = gx * L->grid.y;
  b->bid = uint3{(unsigned)(i % gx), (unsigned)((i / gx) % L->grid.y), (unsigned)(i / gxy)};
  const unsigned n = L->nthreads, bx = L->block.x, bxy = bx * L->block.y;
  b->nthreads = b->live = b->nrunnable = n;
  b->threads = new Fiber[n];
  for (unsigned t = 0; t < n; ++t) {
    Fiber& f = b->threads[t];
    f.block = b;
    f.linear = t;
    f.tid = uint3{t % bx, (t / bx) % L->block.y, t / bxy};
  }
  const unsigned nw = (n + 31) / 32;
  b->warps = new Warp[nw];
  for (unsigned w = 0; w < nw; ++w) {
    const unsigned lanes = std::min(32u, n - w * 32);
    b->warps[w].live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
  }
  const unsigned words = (n + 63) / 64;
  b->rbits = new uint64_t[words]();
  for (unsigned t = 0; t < n; ++t) bit_set(b->rbits, t);
  block_arena_get(b, L->smem);
  L->blocks[i] = b;
  return b;
}

static void finish_block(Block* b) {
  Launch* L = b->L;
  trace_block_done(b);
  block_arena_put(b);
  L->blocks[b->linear] = nullptr;
  delete[] b->threads;
  delete[] b->warps;
  delete[] b->rbits;
  delete b;
  if (++L->blocks_done < L->nblocks) return;
  S.active.erase(std::find(S.active.begin(), S.active.end(), L));
  kernel_done(L);  // pops the stream op
  L->del(L->pack);
  delete L;
}

void activate_launch(Launch* L) {
  L->blocks.assign(L->nblocks, nullptr);
  L->bbits.assign((L->nblocks + 63) / 64, 0);
  for (uint64_t i = 0; i < L->nblocks; ++i) bit_set(L->bbits.data(), i);
  L->top_word = (long)L->bbits.size() - 1;
  auto pos = std::find_if(S.active.begin(), S.active.end(), [L](Launch* o) { return o->seq < L->seq; });
  S.active.insert(pos, L);
}

// ------------------------------------------------------------------ block barrier

static void release_block_barrier(Block* b) {
  const int n = (int)b->bar_arrived;
  b->bar_res = b->bar_op == 1 ? b->bar_acc : b->bar_op == 2 ? (b->bar_acc == n) : b->bar_op == 3 ? (b->bar_acc > 0) : 0;
  b->bar_acc = 0;
  b->bar_arrived = 0;
  for (unsigned t = 0; t < b->nthreads; ++t) {
    Fiber& f = b->threads[t];
    if (f.state == St::Barrier && f.wait == kBlockBar) make_runnable(&f);
  }
}

int block_barrier(int op, int pred) {
  Fiber* f = S.cur;
  if (!f || !f->block) not_emulatable("__syncthreads() outside a kernel");
  Block* b = f->block;
  b->bar_op = op;
  b->bar_acc += pred;
  if (++b->bar_arrived == b->live) {
    release_block_barrier(b);
    yield_as(St::Runnable);  // let lower threads go first, as after any barrier
  } else {
    f->wait = kBlockBar;
    yield_as(St::Barrier);
  }
  return b->bar_res;  // stays valid until the next release, which needs this thread again
}

static void on_fiber_done(Fiber* f) {
  fiber_release(f);
  Block* b = f->block;
  if (!b) return;
  const unsigned w = f->linear / 32, bit = 1u << (f->linear % 32);
  b->warps[w].live &= ~bit;
  b->warps[w].arrived &= ~bit;
  --b->live;
  check_warp_groups(b, w);  // exited lanes no longer hold back warp operations
  if (b->bar_arrived > 0 && b->bar_arrived == b->live) release_block_barrier(b);
  if (b->live == 0) finish_block(b);
}

// ------------------------------------------------------------------ spin waits

extern "C" void cuco_emu_block_wait(const char* what, long slot, unsigned long long have, unsigned long long want) {
  Fiber* f = S.cur;
  if (!f) return;
  // Re-checking the same unchanged condition is not progress; a new or changed one is.
  if (f->what != what || f->slot != slot || f->have != have || f->want != want) ++S.progress;
  f->what = what;
  f->slot = slot;
  f->have = have;
  f->want = want;
  make_unrunnable(f, St::Spin);
  S.spinners.push_back(f);
  fiber_switch_out(f);
}

void atomic_yield(bool modified, const void* addr, unsigned long long value) {
  if (!S.cur) return;
  if (modified) {
    yield_as(St::Runnable);
  } else {
    (void)addr;
    cuco_emu_block_wait("atomic poll", -1, value, 0);
  }
}

void fence_yield() {
  static unsigned fences = 0;
  if (S.cur && (++fences & 63u) == 0) cuco_emu_block_wait("__threadfence (polling?)", -1, 0, 0);
}

unsigned long long clock_tick() {
  static unsigned long long t = 0;
  return t += 1000;  // deterministic: never use clocks to decide anything in the emulator
}

// ------------------------------------------------------------------ the loop

// Asynchronous work outside the SMs (the emulated GIN "NIC" of cuco_gin.h registers its delivery
// here): returns non-zero when it did something. The coordinator calls it only when no rank got
// anywhere in a whole round (coord.cpp), so a put lands as late as the semantics allow.
static int (*g_progress_hook)(void) = nullptr;
extern "C" void cuco_emu_set_progress_hook(int (*hook)(void)) { g_progress_hook = hook; }
bool nic_deliver_one() { return g_progress_hook && g_progress_hook(); }

static Fiber* pick() {
  if (S.host.state == St::Runnable || S.host.state == St::Fresh) return &S.host;
  for (Launch* L : S.active) {
    const long bi = highest_block(L);
    if (bi < 0) continue;
    Block* b = L->blocks[bi] ? L->blocks[bi] : start_block(L, bi);
    return &b->threads[lowest_thread(b)];
  }
  return nullptr;
}

static void resume(Fiber* f) {
  if (f->state == St::Fresh) {
    fiber_prepare(f, f->block ? thread_main : host_main, f->block ? thread_stack_bytes() : kHostStack);
    f->state = St::Runnable;
  }
  if (f->block) {
    threadIdx = f->tid;
    blockIdx = f->block->bid;
    blockDim = f->block->L->block;
    gridDim = f->block->L->grid;
  }
  S.cur = f;
  ++S.switches;
  fiber_switch_in(f);
  S.cur = nullptr;
  if (f->state == St::Done) on_fiber_done(f);
}

static void begin_poll_round() {
  S.round_start = progress_now();
  for (Fiber* f : S.spinners) make_runnable(f);
  S.spinners.clear();
}

void sched_start_host(void (*fn)(void*), void* arg) {
  S.host_fn = fn;
  S.host_arg = arg;
  S.host.state = St::Fresh;
}

Hold sched_run_hold(bool* progressed) {
  const uint64_t start = progress_now();
  uint64_t yields = 0;
  begin_poll_round();  // other ranks may have changed what our parked fibers wait for
  for (;;) {
    if (S.host.state == St::Done) {
      *progressed = true;
      return Hold::HostDone;
    }
    if (S.dirty) {
      S.dirty = false;
      advance_streams();
    }
    if (Fiber* f = pick()) {
      resume(f);
      if (++yields >= kSliceYields) {
        *progressed = true;
        return Hold::Slice;
      }
      continue;
    }
    if (S.dirty) continue;
    if (!S.spinners.empty() && progress_now() != S.round_start) {
      begin_poll_round();
      continue;
    }
    *progressed = progress_now() != start;
    return Hold::Blocked;
  }
}

const Fiber& host_fiber() { return S.host; }
const std::vector<Launch*>& active_launches() { return S.active; }

}  // namespace cuco_emu
