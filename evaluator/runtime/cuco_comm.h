// The cuco comm API: what candidate kernels use to talk to peers.
//
// One source, three implementations chosen at compile time:
//   CUCO_COMM_NCCL  thin wrappers over the NCCL device API (LSA pointers and barriers);
//   CUCO_COMM_SYMM  peer-pointer tables and signal pads in device memory (PyTorch
//                   SymmetricMemory ABI; also N virtual ranks on one GPU);
//   CUCO_COMM_CPU   the g++ CUDA shim: ranks are processes over shared memory. It checks logic,
//                   indexing and the signalling protocol, NOT memory ordering (x86 is stronger
//                   than the GPU memory model).
//
// Ordering contract (all backends): a signal is a release (everything the signalling thread
// wrote, and what its CTA/warp wrote before a __syncthreads/__syncwarp, is visible to a peer
// that observed the signal with cuco_wait, which is an acquire). Signals count: waiters ask
// for "at least" a value, so pads never need resetting (use ctx.epoch to scale targets).
#ifndef CUCO_COMM_H_
#define CUCO_COMM_H_
#include <cuda_runtime.h>
#include "cuco_ctx.h"
#include "cuco_types.h"

#if defined(CUCO_COMM_CPU)
#include "cuco_comm_cpu.h"
#elif defined(CUCO_COMM_SYMM) || defined(CUCO_COMM_NCCL)
#include "cuco_comm_gpu.h"
#else
#error "define one of CUCO_COMM_NCCL, CUCO_COMM_SYMM, CUCO_COMM_CPU"
#endif

#if defined(CUCO_COMM_NCCL)
#include <nccl_device.h>
// What the harness puts behind ctx.comm for the nccl backend (device memory).
typedef struct cuco_nccl_comm {
  ncclDevComm dev;        // created with lsaBarrierCount >= CUCO_MAX_BARRIERS
  ncclWindow_t symm_win;  // window over every rank's symmetric buffer
  ncclWindow_t signal_win;  // window over every rank's signal pad
} cuco_nccl_comm;

static __device__ __forceinline__ const cuco_nccl_comm& cuco_nccl(const cuco_ctx& c) {
  return *static_cast<const cuco_nccl_comm*>(c.comm);
}
static __device__ __forceinline__ void* cuco_peer(const cuco_ctx& c, int peer) {
  return ncclGetLsaPointer(cuco_nccl(c).symm_win, 0, peer);
}
static __device__ __forceinline__ uint64_t* cuco_peer_signals(const cuco_ctx& c, int peer) {
  return static_cast<uint64_t*>(ncclGetLsaPointer(cuco_nccl(c).signal_win, 0, peer));
}
#else
// Peer `peer`'s symmetric buffer (peer == ctx.rank gives this rank's own).
static __device__ __forceinline__ void* cuco_peer(const cuco_ctx& c, int peer) {
  if (peer != c.rank) CUCO_EMU_TRACE(CUCO_EMU_TR_PEER, 0, peer);
  return c.peer_symm[peer];
}
// Peer `peer`'s signal pad.
static __device__ __forceinline__ uint64_t* cuco_peer_signals(const cuco_ctx& c, int peer) {
  return c.peer_signals[peer];
}
#endif

// The signal and wait without a trace event: the API's own protocols (cuco_enter.h) report
// themselves under their own kinds, so the emulator's trace never mistakes them for the design's.
static __device__ __forceinline__ void cuco_internal_signal_add(const cuco_ctx& c, int peer, int slot, uint64_t inc) {
  cuco_fence_system();
  cuco_add_release(cuco_peer_signals(c, peer) + slot, inc);
}
static __device__ __forceinline__ void cuco_internal_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  const uint64_t* p = c.signals + slot;
  uint64_t have;
  while ((have = cuco_ld_acquire(p)) < at_least) cuco_pause_on("cuco_wait", slot, have, at_least);
  cuco_fence_system();
}

// Add `inc` to slot `slot` of `peer`'s signal pad, after everything this thread wrote.
static __device__ __forceinline__ void cuco_signal_add(const cuco_ctx& c, int peer, int slot, uint64_t inc) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_SIGNAL, 0, slot);
  cuco_internal_signal_add(c, peer, slot, inc);
}

// Spin (this thread) until slot `slot` of this rank's pad holds at least `at_least`.
static __device__ __forceinline__ void cuco_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_WAIT, 0, slot);
  cuco_internal_wait(c, slot, at_least);
}

static __device__ __forceinline__ unsigned cuco_cta_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned cuco_cta_threads() { return blockDim.x * blockDim.y * blockDim.z; }

// CTA-collective: every thread of the CTA calls it; CTA `index` of every rank meets here.
// Indices [0, CUCO_COLL_BARRIER) belong to the candidate, the rest to the library collectives.
// Everything written before the barrier on any rank is visible after it on every rank.
static __device__ __forceinline__ void cuco_barrier(const cuco_ctx& c, int index) {
#if defined(CUCO_COMM_NCCL)
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), cuco_nccl(c).dev, ncclTeamTagLsa(), (uint32_t)index);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
#else
  __syncthreads();
  if (cuco_cta_thread() == 0) {
    CUCO_EMU_TRACE(CUCO_EMU_TR_BARRIER, 0, index);
    uint64_t* count = c.signals + CUCO_BAR_COUNTS + index;  // only this CTA of this rank touches it
    const uint64_t gen = *count + 1;
    *count = gen;
    cuco_fence_system();
    for (int p = 0; p < c.world; ++p)
      cuco_st_release(cuco_peer_signals(c, p) + CUCO_BAR_FLAGS + index * CUCO_MAX_RANKS + c.rank, gen);
    for (int p = 0; p < c.world; ++p) {
      const uint64_t* flag = c.signals + CUCO_BAR_FLAGS + index * CUCO_MAX_RANKS + p;
      uint64_t have;
      while ((have = cuco_ld_acquire(flag)) < gen) cuco_pause_on("cuco_barrier", index, have, gen);
    }
    cuco_fence_system();
  }
  __syncthreads();
#endif
}

// Copy `bytes` from `src` to `dst` with the `width` threads of a group, this one being `lane`.
static __device__ __forceinline__ void cuco_copy_group(void* dst, const void* src, size_t bytes, unsigned lane,
                                                       unsigned width) {
  if ((((uintptr_t)dst | (uintptr_t)src | (uintptr_t)bytes) & 15) == 0) {
    uint4* d = static_cast<uint4*>(dst);
    const uint4* s = static_cast<const uint4*>(src);
    for (size_t i = lane; i < bytes / 16; i += width) d[i] = s[i];
  } else {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    for (size_t i = lane; i < bytes; i += width) d[i] = s[i];
  }
}

// Put `bytes` from local `src` at byte offset `dst_offset` of `peer`'s symmetric buffer.
// The issuer variants say who moves the bytes: one thread, the calling warp, or the whole CTA.
// The group variants must be called by every thread of the group; signal after a group sync.
static __device__ __forceinline__ void cuco_put_thread(const cuco_ctx& c, int peer, size_t dst_offset,
                                                       const void* src, size_t bytes) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_PUT_THREAD, bytes, peer);
  cuco_copy_group(static_cast<char*>(cuco_peer(c, peer)) + dst_offset, src, bytes, 0, 1);
}
static __device__ __forceinline__ void cuco_put_warp(const cuco_ctx& c, int peer, size_t dst_offset,
                                                     const void* src, size_t bytes) {
  if (cuco_cta_thread() % 32 == 0) CUCO_EMU_TRACE(CUCO_EMU_TR_PUT_WARP, bytes, peer);
  cuco_copy_group(static_cast<char*>(cuco_peer(c, peer)) + dst_offset, src, bytes, cuco_cta_thread() % 32, 32);
}
static __device__ __forceinline__ void cuco_put_cta(const cuco_ctx& c, int peer, size_t dst_offset,
                                                    const void* src, size_t bytes) {
  if (cuco_cta_thread() == 0) CUCO_EMU_TRACE(CUCO_EMU_TR_PUT_CTA, bytes, peer);
  cuco_copy_group(static_cast<char*>(cuco_peer(c, peer)) + dst_offset, src, bytes, cuco_cta_thread(),
                  cuco_cta_threads());
}

// GIN puts, multimem, copy-engine transfers and the host-driven baseline's library collectives.
#include "cuco_launch.h"
#include "cuco_gin.h"
#include "cuco_multimem.h"
#include "cuco_copy_engine.h"
#include "cuco_enter.h"  // calls back to back: a peer entered this call before we write into it
#include "cuco_coll.h"
#include "cuco_gemm.h"  // the tensor-core GEMM tile (docs/gemm_tile.md)

#endif  // CUCO_COMM_H_
