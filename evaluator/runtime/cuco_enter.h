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
//   cuco_gin_enter(c, gctx)          the same over GIN signals (peers beyond the node) ...
//   cuco_gin_wait_entered(c, peer)   ... and its wait
//   cuco_ce_enter(c, s)              host side, in stream order on s (copy-engine designs) ...
//   cuco_ce_wait_entered(c, peer, s) ... and its wait on s
//
// They use the pad's last CUCO_MAX_RANKS user slots (CUCO_ENTER_BASE + source rank) and the last
// CUCO_MAX_RANKS GIN signals (CUCO_GIN_ENTER_BASE + source rank; both in cuco_ctx.h): keep other
// signals out of them. Signals count up across calls (ctx.epoch = 1, 2, ...), so a wait asks for at
// least c.epoch. The emulator's trace leaves them out: they are not the design's own synchronisation.
#ifndef CUCO_ENTER_H_
#define CUCO_ENTER_H_

static __device__ __forceinline__ void cuco_enter(const cuco_ctx& c) {
  for (int p = 0; p < c.world; ++p)
    if (p != c.rank) cuco_signal_add(c, p, CUCO_ENTER_BASE + c.rank, 1);
}
static __device__ __forceinline__ void cuco_wait_entered(const cuco_ctx& c, int peer) {
  if (peer != c.rank) cuco_wait(c, CUCO_ENTER_BASE + peer, c.epoch);
}
static __device__ __forceinline__ void cuco_wait_all_entered(const cuco_ctx& c) {
  for (int p = 0; p < c.world; ++p) cuco_wait_entered(c, p);
}
static __device__ __forceinline__ void cuco_gin_enter(const cuco_ctx& c, int gctx) {
  for (int p = 0; p < c.world; ++p)
    if (p != c.rank) cuco_gin_signal(c, gctx, p, CUCO_GIN_ENTER_BASE + c.rank, 1);
}
static __device__ __forceinline__ void cuco_gin_wait_entered(const cuco_ctx& c, int peer) {
  if (peer != c.rank) cuco_gin_wait(c, CUCO_GIN_ENTER_BASE + peer, c.epoch);
}

__global__ void __launch_bounds__(32) cuco_ce_enter_kernel(cuco_ctx c) {
  if (threadIdx.x == 0) cuco_enter(c);
}
static inline cudaError_t cuco_ce_enter(const cuco_ctx& c, cudaStream_t s) {
  CUCO_LAUNCH(cuco_ce_enter_kernel, 1, 32, s, c);
  return cudaGetLastError();
}
static inline cudaError_t cuco_ce_wait_entered(const cuco_ctx& c, int peer, cudaStream_t s) {
  return peer == c.rank ? cudaSuccess : cuco_ce_wait(c, CUCO_ENTER_BASE + peer, c.epoch, s);
}

#endif  // CUCO_ENTER_H_
