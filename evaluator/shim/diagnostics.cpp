// cuco CPU emulator: describing fibers for crash and deadlock reports.
#include <stdio.h>
#include "emu_internal.h"

namespace cuco_emu {

void describe_fiber(const Fiber* f, char* buf, size_t n) {
  if (!f || !f->block) {  // no fiber: the scheduler itself, running a stream copy/memset/host function
    snprintf(buf, n, f ? "host" : "stream operation (copy, memset or host function)");
    return;
  }
  const uint3 b = f->block->bid, t = f->tid;
  snprintf(buf, n, "block (%u,%u,%u) thread (%u,%u,%u)", b.x, b.y, b.z, t.x, t.y, t.z);
}

static const char* wait_name(const Fiber& f) {
  if (f.wait == kBlockBar) return "__syncthreads";
  static const char* names[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                                "__ballot_sync", "__all_sync", "__any_sync", "__match_any_sync", "__match_all_sync"};
  return f.wop < sizeof(names) / sizeof(names[0]) ? names[f.wop] : "__reduce_*_sync";
}

static void print_spinner(int rank, const Fiber& f) {
  char who[96];
  describe_fiber(&f, who, sizeof who);
  fprintf(stderr, "deadlock: rank %d %s: %s slot %ld have %llu want %llu\n", rank, who, f.what ? f.what : "?", f.slot,
          f.have, f.want);
}

// One line per block for threads parked at barriers: they wait for the spinners above.
static void print_barrier_group(int rank, const Block* b, const Fiber& first, unsigned count) {
  char who[96];
  describe_fiber(&first, who, sizeof who);
  unsigned have = b->bar_arrived, want = b->live;
  if (first.wait == kWarpBar) {
    const Warp& w = b->warps[first.linear / 32];
    have = (unsigned)__builtin_popcount(w.arrived);
    want = (unsigned)__builtin_popcount(first.wmask & w.live);
  }
  fprintf(stderr, "deadlock: rank %d %s: %s slot -1 have %u want %u%s", rank, who, wait_name(first), have, want,
          count > 1 ? "" : "\n");
  if (count > 1) fprintf(stderr, " (and %u more threads of this block)\n", count - 1);
}

int dump_blocked(int rank, int max_lines) {
  int lines = 0, more = 0;
  auto budget = [&]() { return lines < max_lines ? (++lines, true) : (++more, false); };
  for (Launch* L : active_launches())
    for (Block* b : L->blocks)
      if (b)
        for (unsigned t = 0; t < b->nthreads; ++t)
          if (b->threads[t].state == St::Spin && budget()) print_spinner(rank, b->threads[t]);
  for (Launch* L : active_launches())
    for (Block* b : L->blocks) {
      if (!b) continue;
      const Fiber* first = nullptr;
      unsigned count = 0;
      for (unsigned t = 0; t < b->nthreads; ++t) {
        if (b->threads[t].state != St::Barrier) continue;
        if (!first) first = &b->threads[t];
        ++count;
      }
      if (first && budget()) print_barrier_group(rank, b, *first, count);
    }
  if (host_fiber().state == St::Spin && budget()) print_spinner(rank, host_fiber());
  if (more) fprintf(stderr, "deadlock: rank %d: ... and %d more\n", rank, more);
  fflush(stderr);
  return lines;
}

bool addr_in_current_stack_guard(const void* addr) {
  const Fiber* f = current();
  return f && f->stack && (const char*)addr >= f->stack - 65536 && (const char*)addr < f->stack + 4096;
}
}  // namespace cuco_emu
