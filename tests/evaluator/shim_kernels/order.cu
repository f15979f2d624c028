// Records the order in which emulated threads first run: two kernels on two streams (the later
// launch should run first), 3 blocks of 4 threads each (highest block first, threads ascending).
#include "cuco_comm.h"

__device__ int g_ticket;

__global__ void stamp(int* order, int base) {
  order[base + blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(&g_ticket, 1);
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  static cudaStream_t other;
  if (!other) cudaStreamCreate(&other);
  int* order = (int*)ctx->out[0];
  int zero = 0;
  cudaMemcpyToSymbol(g_ticket, &zero, sizeof zero);
  stamp<<<3, 4, 0, other>>>(order, 0);
  stamp<<<3, 4, 0, stream>>>(order, 12);
  cudaStreamSynchronize(other);
  return 0;
}
