// Calls back to back in the cuco comm API.
//
// Calls queued on one stream run back to back on a GPU, with no barrier between them (an exported
// op called layer after layer): a rank may start call e + 1 while a peer is still in call e. So a
// rank must not write into a peer's symmetric buffer, nor rewrite memory a peer reads, before that
// peer is done with the earlier call. The enter signal says so: a rank sends it at the start of each
// call, in stream order (after all its earlier calls' work), and a writer waits for it.
//
//   cuco_enter(c)                    ONE thread: tell every peer this rank entered call c.epoch
//   cuco_wait_entered(c, peer)       wait until `peer` entered this call (no-op for this rank)
//   cuco_wait_all_entered(c)         wait until every peer entered this call
//   cuco_cta_wait_all_entered(c, w)  CTA-collective: thread 0 waits for every peer (if w), then the CTA
//   cuco_gin_enter(c, gctx)          the same over GIN signals (peers beyond the node) ...
//   cuco_gin_wait_entered(c, peer)   ... and its wait
//   cuco_ce_enter(c, s)              host side, in stream order on s (copy-engine designs) ...
//   cuco_ce_wait_entered(c, peer, s) ... and its wait on s
//
// They use the pad's last CUCO_MAX_RANKS user slots (CUCO_ENTER_BASE + source rank) and the last
// CUCO_MAX_RANKS GIN signals (CUCO_GIN_ENTER_BASE + source rank; both in cuco_ctx.h): keep other
// signals out of them: the emulator refuses a plain signal or wait on them. Signals count up across
// calls (ctx.epoch = 1, 2, ...), so a wait asks for at least c.epoch, and a rank announces each call
// once (the emulator refuses a second announcement). The emulator traces them as their own kinds
// (enter, enter_wait): they are not the design's synchronisation, so the observed point ignores them.
#ifndef CUCO_ENTER_H_
#define CUCO_ENTER_H_

// The trace's slot for an enter event: the peer told or waited for, and the announcing rank.
#define CUCO_ENTER_EVENT(peer, from) ((long)(peer) * CUCO_MAX_RANKS + (from))

static __device__ __forceinline__ void cuco_enter(const cuco_ctx& c) {
  for (int p = 0; p < c.world; ++p)
    if (p != c.rank) {
      CUCO_EMU_TRACE(CUCO_EMU_TR_ENTER, 0, CUCO_ENTER_EVENT(p, c.rank));
      cuco_internal_signal_add(c, p, CUCO_ENTER_BASE + c.rank, 1);
    }
}
static __device__ __forceinline__ void cuco_wait_entered(const cuco_ctx& c, int peer) {
  if (peer == c.rank) return;
  CUCO_EMU_TRACE(CUCO_EMU_TR_ENTER_WAIT, 0, CUCO_ENTER_EVENT(c.rank, peer));
  cuco_internal_wait(c, CUCO_ENTER_BASE + peer, c.epoch);
}
static __device__ __forceinline__ void cuco_wait_all_entered(const cuco_ctx& c) {
  for (int p = 0; p < c.world; ++p) cuco_wait_entered(c, p);
}
static __device__ __forceinline__ void cuco_cta_wait_all_entered(const cuco_ctx& c, bool wait) {
  if (wait && cuco_cta_thread() == 0) cuco_wait_all_entered(c);
  __syncthreads();
}
static __device__ __forceinline__ void cuco_gin_enter(const cuco_ctx& c, int gctx) {
  for (int p = 0; p < c.world; ++p)
    if (p != c.rank) {
      CUCO_EMU_TRACE(CUCO_EMU_TR_ENTER, 0, CUCO_ENTER_EVENT(p, c.rank));
      cuco_internal_gin_signal(c, gctx, p, CUCO_GIN_ENTER_BASE + c.rank, 1);
    }
}
static __device__ __forceinline__ void cuco_gin_wait_entered(const cuco_ctx& c, int peer) {
  if (peer == c.rank) return;
  CUCO_EMU_TRACE(CUCO_EMU_TR_ENTER_WAIT, 0, CUCO_ENTER_EVENT(c.rank, peer));
  cuco_internal_gin_wait(c, CUCO_GIN_ENTER_BASE + peer, c.epoch);
}

__global__ void __launch_bounds__(32) cuco_ce_enter_kernel(cuco_ctx c) {
  if (threadIdx.x == 0) cuco_enter(c);
}
__global__ void __launch_bounds__(32) cuco_ce_wait_entered_kernel(cuco_ctx c, int peer) {
  if (threadIdx.x == 0) cuco_wait_entered(c, peer);
}
static inline cudaError_t cuco_ce_enter(const cuco_ctx& c, cudaStream_t s) {
  CUCO_LAUNCH(cuco_ce_enter_kernel, 1, 32, s, c);
  return cudaGetLastError();
}
static inline cudaError_t cuco_ce_wait_entered(const cuco_ctx& c, int peer, cudaStream_t s) {
  if (peer == c.rank) return cudaSuccess;
  CUCO_LAUNCH(cuco_ce_wait_entered_kernel, 1, 32, s, c, peer);
  return cudaGetLastError();
}

#endif  // CUCO_ENTER_H_
