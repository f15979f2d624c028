// Dynamic shared memory (a file-scope `extern __shared__` array) with 2-D blocks and grids, plus
// a static __align__(16) tile: each block reverses its tile and transposes an 8x8 corner.
#include <cuda_runtime.h>
#include "cuco_comm.h"

extern __shared__ float dsm[];

__global__ void reverse_tiles(const float* in, float* rev, float* tr, int width) {
  __shared__ __align__(16) float tile[8][9];
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockIdx.x, by = blockIdx.y;
  const int lin = ty * blockDim.x + tx, n = blockDim.x * blockDim.y;
  const int gx = bx * blockDim.x + tx, gy = by * blockDim.y + ty;
  const float v = in[gy * width + gx];
  dsm[lin] = v;
  if (tx < 8 && ty < 8) tile[ty][tx] = v;
  __syncthreads();
  rev[gy * width + gx] = dsm[n - 1 - lin];
  if (tx < 8 && ty < 8) tr[(by * gridDim.x + bx) * 64 + ty * 8 + tx] = tile[tx][ty];
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const dim3 block(16, 8), grid(2, 3);
  const int width = (int)(block.x * grid.x);
  const size_t smem = block.x * block.y * sizeof(float);
  cudaFuncSetAttribute(reverse_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  float* out = (float*)ctx->out[0];
  reverse_tiles<<<grid, block, smem, stream>>>((const float*)ctx->in[0], out, out + width * 24, width);
  return cudaGetLastError() != cudaSuccess;
}
