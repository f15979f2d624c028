// Memory-ordering primitives of the cuco comm API on real GPUs (system scope: peers over NVLink).
#ifndef CUCO_COMM_GPU_H_
#define CUCO_COMM_GPU_H_
#include <cuda/atomic>
#include <stdint.h>

static __device__ __forceinline__ uint64_t cuco_ld_acquire(const uint64_t* p) {
  cuda::atomic_ref<uint64_t, cuda::thread_scope_system> r(*const_cast<uint64_t*>(p));
  return r.load(cuda::memory_order_acquire);
}
static __device__ __forceinline__ void cuco_st_release(uint64_t* p, uint64_t v) {
  cuda::atomic_ref<uint64_t, cuda::thread_scope_system> r(*p);
  r.store(v, cuda::memory_order_release);
}
static __device__ __forceinline__ void cuco_add_release(uint64_t* p, uint64_t v) {
  cuda::atomic_ref<uint64_t, cuda::thread_scope_system> r(*p);
  r.fetch_add(v, cuda::memory_order_release);
}
static __device__ __forceinline__ void cuco_fence_system() { __threadfence_system(); }
// Back off while spinning; the arguments only serve the CPU emulator's deadlock report.
static __device__ __forceinline__ void cuco_pause_on(const char*, long, unsigned long long, unsigned long long) {
  __nanosleep(32);
}
// The CPU emulator's trace of comm operations: nothing on a GPU.
#define CUCO_EMU_TRACE(kind, bytes, slot) ((void)0)
#define CUCO_EMU_TILE_RESULT(acc, n) ((void)0)
#endif  // CUCO_COMM_GPU_H_
