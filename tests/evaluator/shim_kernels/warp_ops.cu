// Warp intrinsics: shuffle reductions (down and xor), inclusive scan with shfl_up, broadcast,
// ballot/any/all, __reduce_add_sync and __syncwarp. 2 blocks of 96 threads = 6 warps.
#include "cuco_comm.h"

__global__ void warp_ops(const float* in, float* scan, float* per_warp, unsigned* votes) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x % 32, warp = i / 32;
  const float v = in[i];
  float down = v, all = v, inc = v;
  for (int off = 16; off > 0; off >>= 1) down += __shfl_down_sync(0xffffffffu, down, off);
  for (int off = 16; off > 0; off >>= 1) all += __shfl_xor_sync(0xffffffffu, all, off);
  for (int off = 1; off < 32; off <<= 1) {
    const float up = __shfl_up_sync(0xffffffffu, inc, off);
    if (lane >= off) inc += up;
  }
  const float third = __shfl_sync(0xffffffffu, v, 3);
  const unsigned ballot = __ballot_sync(0xffffffffu, v > 0.f);
  const int any = __any_sync(0xffffffffu, v > 100.f), every = __all_sync(0xffffffffu, v > -1000.f);
  const unsigned total = __reduce_add_sync(0xffffffffu, (unsigned)lane);
  __syncwarp();
  scan[i] = inc;
  if (lane == 0) per_warp[3 * warp + 0] = down;
  if (lane == 5) per_warp[3 * warp + 1] = all;
  if (lane == 7) per_warp[3 * warp + 2] = third;
  if (lane == 0) {
    votes[4 * warp + 0] = ballot;
    votes[4 * warp + 1] = (unsigned)any;
    votes[4 * warp + 2] = (unsigned)every;
    votes[4 * warp + 3] = total;
  }
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  float* out = (float*)ctx->out[0];
  warp_ops<<<2, 96, 0, stream>>>((const float*)ctx->in[0], out, out + 192, (unsigned*)ctx->out[1]);
  return cudaGetLastError() != cudaSuccess;
}
