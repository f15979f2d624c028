// cuco CPU emulator: device intrinsics (block/warp synchronisation, warp exchange, shared
// memory, fences, math). Every CUDA thread is a fiber; anything that must wait for other
// threads yields to the rank's deterministic scheduler (shim/sched.cpp).
#ifndef CUCO_EMU_DEVICE_H_
#define CUCO_EMU_DEVICE_H_
#include "cuco_emu_defs.h"

// Called by cuco_comm_cpu.h (and the shim) whenever a thread spins waiting for a peer: yields
// the fiber and records what it waits for, for deadlock reports.
extern "C" void cuco_emu_block_wait(const char* what, long slot, unsigned long long have, unsigned long long want);

// One static __shared__ declaration site (a function-local static made by the source rewrite).
struct cuco_shared_site {
  size_t off_plus1;  // 0 until laid out: offset + 1 in every block's static shared region
};

namespace cuco_emu {
enum WarpOp { kSync, kIdx, kUp, kDown, kXor, kBallot, kAll, kAny, kMatchAny, kMatchAll,
              kRedAdd, kRedMin, kRedMax, kRedAnd, kRedOr, kRedXor, kRedMinS, kRedMaxS };
int block_barrier(int op, int pred);  // 0 plain, 1 count, 2 and, 3 or
unsigned long long warp_op(int op, unsigned mask, unsigned long long val, int arg, int width);
unsigned active_mask();
void* shared_alloc(cuco_shared_site* site, size_t bytes, size_t align, size_t natural_align);
void* dynamic_smem();
void atomic_yield(bool modified, const void* addr, unsigned long long value);
void fence_yield();
unsigned long long clock_tick();
[[noreturn]] void not_emulatable(const char* what);
[[noreturn]] void trap(const char* what);
extern unsigned atomic_count;
}  // namespace cuco_emu

static inline void* cuco_shared_alloc(cuco_shared_site* s, size_t n, size_t align, size_t natural) {
  return cuco_emu::shared_alloc(s, n, align, natural);
}
static inline void* cuco_dynamic_smem() { return cuco_emu::dynamic_smem(); }

// ---- block synchronisation
static inline void __syncthreads() { cuco_emu::block_barrier(0, 0); }
static inline int __syncthreads_count(int p) { return cuco_emu::block_barrier(1, p != 0); }
static inline int __syncthreads_and(int p) { return cuco_emu::block_barrier(2, p != 0); }
static inline int __syncthreads_or(int p) { return cuco_emu::block_barrier(3, p != 0); }

// ---- warp synchronisation and exchange (values up to 8 bytes travel as raw bits)
template <class T>
static inline unsigned long long cuco_emu_bits(const T& v) {
  static_assert(sizeof(T) <= 8, "cuco emulator: warp exchange of a value larger than 8 bytes");
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
static inline T cuco_emu_from_bits(unsigned long long b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) { cuco_emu::warp_op(cuco_emu::kSync, mask, 0, 0, 32); }
template <class T>
static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return cuco_emu_from_bits<T>(cuco_emu::warp_op(cuco_emu::kIdx, mask, cuco_emu_bits(v), src, width));
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return cuco_emu_from_bits<T>(cuco_emu::warp_op(cuco_emu::kUp, mask, cuco_emu_bits(v), (int)delta, width));
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return cuco_emu_from_bits<T>(cuco_emu::warp_op(cuco_emu::kDown, mask, cuco_emu_bits(v), (int)delta, width));
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return cuco_emu_from_bits<T>(cuco_emu::warp_op(cuco_emu::kXor, mask, cuco_emu_bits(v), lane_mask, width));
}
static inline unsigned __ballot_sync(unsigned mask, int p) {
  return (unsigned)cuco_emu::warp_op(cuco_emu::kBallot, mask, p != 0, 0, 32);
}
static inline int __all_sync(unsigned mask, int p) { return (int)cuco_emu::warp_op(cuco_emu::kAll, mask, p != 0, 0, 32); }
static inline int __any_sync(unsigned mask, int p) { return (int)cuco_emu::warp_op(cuco_emu::kAny, mask, p != 0, 0, 32); }
static inline int __uni_sync(unsigned mask, int p) { return __all_sync(mask, p) || !__any_sync(mask, p); }
static inline unsigned __activemask() { return cuco_emu::active_mask(); }
template <class T>
static inline unsigned __match_any_sync(unsigned mask, T v) {
  return (unsigned)cuco_emu::warp_op(cuco_emu::kMatchAny, mask, cuco_emu_bits(v), 0, 32);
}
template <class T>
static inline unsigned __match_all_sync(unsigned mask, T v, int* pred) {
  unsigned r = (unsigned)cuco_emu::warp_op(cuco_emu::kMatchAll, mask, cuco_emu_bits(v), 0, 32);
  *pred = r != 0;
  return r;
}
#define CUCO_EMU_REDUCE(NAME, OP, T)                                        \
  static inline T NAME(unsigned mask, T v) {                                \
    return (T)cuco_emu::warp_op(cuco_emu::OP, mask, (unsigned)v, 0, 32);    \
  }
CUCO_EMU_REDUCE(__reduce_add_sync, kRedAdd, unsigned)
CUCO_EMU_REDUCE(__reduce_add_sync, kRedAdd, int)
CUCO_EMU_REDUCE(__reduce_min_sync, kRedMin, unsigned)
CUCO_EMU_REDUCE(__reduce_min_sync, kRedMinS, int)
CUCO_EMU_REDUCE(__reduce_max_sync, kRedMax, unsigned)
CUCO_EMU_REDUCE(__reduce_max_sync, kRedMaxS, int)
CUCO_EMU_REDUCE(__reduce_and_sync, kRedAnd, unsigned)
CUCO_EMU_REDUCE(__reduce_or_sync, kRedOr, unsigned)
CUCO_EMU_REDUCE(__reduce_xor_sync, kRedXor, unsigned)
#undef CUCO_EMU_REDUCE

// ---- fences, sleeping, clocks, traps
// x86 is stronger than the GPU memory model: fences only order the compiler and the CPU here,
// which is exactly why the emulator cannot catch memory-ordering bugs. Fences inside polling
// loops yield now and then so volatile-flag spins make progress.
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); cuco_emu::fence_yield(); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); cuco_emu::fence_yield(); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __nanosleep(unsigned ns) { cuco_emu_block_wait("__nanosleep", -1, 0, ns); }
static inline long long clock64() { return (long long)cuco_emu::clock_tick(); }
static inline void __trap() { cuco_emu::trap("__trap()"); }
static inline void __brkpt() { cuco_emu::trap("__brkpt()"); }

// ---- cache-hinted loads and stores are plain accesses
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T __ldcg(const T* p) { return *p; }
template <class T> static inline T __ldca(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline T __ldlu(const T* p) { return *p; }
template <class T> static inline T __ldcv(const T* p) { return *(const volatile T*)p; }
template <class T> static inline void __stcg(T* p, T v) { *p = v; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
template <class T> static inline void __stwb(T* p, T v) { *p = v; }
template <class T> static inline void __stwt(T* p, T v) { *p = v; }

#include "cuco_emu_math.h"
#include "cuco_emu_atomic.h"
#endif  // CUCO_EMU_DEVICE_H_
