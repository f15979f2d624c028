// All-gather through the cuco comm API: every rank puts its shard into every peer's symmetric
// buffer, synchronises (cuco_barrier, or -DUSE_SIGNALS: signal every peer and wait for all),
// then copies its symmetric buffer to its output. -DNO_SYNC deletes the barrier / the wait.
#include "cuco_comm.h"

__global__ void allgather(const cuco_ctx c) {
  const size_t shard = (size_t)c.dims[0] * sizeof(float);
  for (int p = 0; p < c.world; ++p) cuco_put_cta(c, p, c.rank * shard, c.in[0], shard);
  __syncthreads();
#if defined(USE_SIGNALS)
  if (threadIdx.x == 0)
    for (int p = 0; p < c.world; ++p) cuco_signal_add(c, p, 0, 1);
#ifndef NO_SYNC
  if (threadIdx.x == 0) cuco_wait(c, 0, c.epoch * c.world);  // signals count up across calls
  __syncthreads();
#endif
#elif !defined(NO_SYNC)
  cuco_barrier(c, 0);
#endif
  cuco_copy_group(c.out[0], c.symm, shard * c.world, threadIdx.x, blockDim.x);
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  allgather<<<1, 128, 0, stream>>>(*ctx);
  return cudaGetLastError() != cudaSuccess;
}
