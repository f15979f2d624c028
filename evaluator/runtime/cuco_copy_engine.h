// Copy-engine transfers in the cuco comm API: peer copies driven by the DMA engines (no SMs),
// issued from the host side of cuco_run and ordered by streams.
//
//   cuco_ce_put(c, peer, dst_offset, src, bytes, s)   src -> peer's symmetric buffer at dst_offset
//   cuco_ce_get(c, peer, dst, src_offset, bytes, s)   peer's symmetric buffer at src_offset -> dst
//   cuco_ce_signal(c, peer, slot, inc, s)  after all earlier work on s, add inc to the peer's pad slot
//   cuco_ce_wait(c, slot, at_least, s)     later work on s waits until this rank's pad slot >= at_least
//
// The harness fills ctx.peer_symm on every backend whose peers share the node (CUDA IPC / the
// emulator's shared arena), so the host can address peer buffers. Signals and waits are one-thread
// kernels (a DMA engine cannot write a device flag in stream order by itself portably).
#ifndef CUCO_COPY_ENGINE_H_
#define CUCO_COPY_ENGINE_H_

__global__ void __launch_bounds__(32) cuco_ce_signal_kernel(cuco_ctx c, int peer, int slot, uint64_t inc) {
  if (threadIdx.x == 0) cuco_signal_add(c, peer, slot, inc);
}
__global__ void __launch_bounds__(32) cuco_ce_wait_kernel(cuco_ctx c, int slot, uint64_t at_least) {
  if (threadIdx.x == 0) cuco_wait(c, slot, at_least);
}

static inline cudaError_t cuco_ce_put(const cuco_ctx& c, int peer, size_t dst_offset, const void* src, size_t bytes,
                                      cudaStream_t s) {
  return cudaMemcpyAsync(static_cast<char*>(c.peer_symm[peer]) + dst_offset, src, bytes, cudaMemcpyDeviceToDevice, s);
}
static inline cudaError_t cuco_ce_get(const cuco_ctx& c, int peer, void* dst, size_t src_offset, size_t bytes,
                                      cudaStream_t s) {
  return cudaMemcpyAsync(dst, static_cast<const char*>(c.peer_symm[peer]) + src_offset, bytes,
                         cudaMemcpyDeviceToDevice, s);
}
static inline cudaError_t cuco_ce_signal(const cuco_ctx& c, int peer, int slot, uint64_t inc, cudaStream_t s) {
  CUCO_LAUNCH(cuco_ce_signal_kernel, 1, 32, s, c, peer, slot, inc);
  return cudaGetLastError();
}
static inline cudaError_t cuco_ce_wait(const cuco_ctx& c, int slot, uint64_t at_least, cudaStream_t s) {
  CUCO_LAUNCH(cuco_ce_wait_kernel, 1, 32, s, c, slot, at_least);
  return cudaGetLastError();
}

#endif  // CUCO_COPY_ENGINE_H_
