// Block sums with a __shared__ tree reduction. Blocks are chained through a __device__ counter
// (block b waits for block b-1), so all blocks are alive at once and interleave: the result is
// only right if every block has its own `partial`. -DNO_SYNC deletes the reduction barriers.
#include "cuco_comm.h"
#define THREADS 128

__device__ unsigned int g_done;  // per rank (process), zero at start, never reset: use the epoch

__global__ void block_sum(const float* in, float* out, long n, unsigned epoch) {
  __shared__ float partial[THREADS];
  __shared__ int nonzero;
  const int tid = threadIdx.x;
  float acc = 0.f;
  for (long i = blockIdx.x * (long)THREADS + tid; i < n; i += (long)gridDim.x * THREADS) acc += in[i];
  partial[tid] = acc;
  const int count = __syncthreads_count(acc != 0.f);
  if (tid == 0) {
    nonzero = count;
    const unsigned target = (epoch - 1) * gridDim.x + blockIdx.x;  // blocks finish in order 0, 1, ...
    while (atomicAdd(&g_done, 0u) < target) {
    }
  }
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
#ifndef NO_SYNC
    __syncthreads();
#endif
  }
  if (tid == 0) {
    out[blockIdx.x] = partial[0];
    out[gridDim.x + blockIdx.x] = (float)nonzero;
    atomicAdd(&g_done, 1u);
  }
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const long n = ctx->dims[0];
  const int blocks = (int)ctx->dims[1];
  block_sum<<<blocks, THREADS, 0, stream>>>((const float*)ctx->in[0], (float*)ctx->out[0], n, (unsigned)ctx->epoch);
  return cudaGetLastError() != cudaSuccess;
}
