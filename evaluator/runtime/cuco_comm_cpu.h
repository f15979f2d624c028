// Memory-ordering primitives of the cuco comm API in the CPU emulator (g++ + the CUDA shim).
// Ranks are processes over shared memory, so these are real cross-process atomics. Spinning
// yields the calling fiber to the emulator's scheduler, which also reports deadlocks.
#ifndef CUCO_COMM_CPU_H_
#define CUCO_COMM_CPU_H_
#include <stdint.h>

static inline uint64_t cuco_ld_acquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void cuco_st_release(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void cuco_add_release(uint64_t* p, uint64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELEASE); }
static inline void cuco_fence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void cuco_pause_on(const char* what, long slot, unsigned long long have, unsigned long long want) {
  cuco_emu_block_wait(what, slot, have, want);
}
// Every comm operation reports to the emulator's trace (the observed design point).
#define CUCO_EMU_TRACE(kind, bytes, slot) cuco_emu_trace((kind), (unsigned long long)(bytes), (long)(slot))
// The GEMM tile's finished accumulators (the evaluator's probe perturbs them: evaluator/shim/trace.cpp).
#define CUCO_EMU_TILE_RESULT(acc, n) cuco_emu_tile_result((acc), (n))
#endif  // CUCO_COMM_CPU_H_
