// cuco CPU emulator: what the ranks (processes) share in the arena besides the buffers.
#ifndef CUCO_EMU_HARNESS_H_
#define CUCO_EMU_HARNESS_H_
#include <stdint.h>
#include "cuco_ctx.h"

namespace cuco_emu {

struct alignas(64) RankShared {
  int turn;                 // futex word: 1 while this rank holds (or is handed) the baton
  int exited;               // finished its harness loop; skipped when passing the baton
  int done_ok;              // wrote its outputs and reached the final barrier
  int pad;
  uint64_t epoch_started;   // rank gating: the last iteration this rank has started
};

struct SharedHeader {
  uint64_t progress;        // bumped by a rank that got anywhere while holding the baton
  int64_t last_progress_ns;
  int deadlock;             // set by the rank that detects a stall: everyone reports and exits 3
  int world;
  double stall_seconds;
  uint64_t barrier_count;   // harness barrier arrivals
  RankShared ranks[CUCO_MAX_RANKS];
};

// coord.cpp: run this rank's scheduler under the baton until the host fiber finishes.
[[noreturn]] void rank_main_loop(SharedHeader* hdr, int rank);
int64_t monotonic_ns();

}  // namespace cuco_emu
#endif  // CUCO_EMU_HARNESS_H_
