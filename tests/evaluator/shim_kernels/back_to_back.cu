// Calls back to back: every rank stores a value of this call (epoch * 1000 + rank) into slot
// `rank` of every peer's symmetric buffer, meets the others at a barrier, then checks that every
// slot holds this call's value. A peer that is already in the next call (no barrier between calls
// on a GPU) may have overwritten a slot before this rank read it: the check counts that, across
// calls, and the last call reports the count in out[0][0] (out[0][1]: calls seen).
// -DWAIT_ENTERED: announce the call (cuco_enter) and wait until every peer entered it before storing.
#include "cuco_comm.h"

__device__ float g_bad, g_calls;

__global__ void back_to_back(const cuco_ctx c) {
  __shared__ float v;
  if (threadIdx.x == 0) v = (float)(c.epoch * 1000 + c.rank);
#if defined(WAIT_ENTERED)
  if (threadIdx.x == 0) {
    cuco_enter(c);
    cuco_wait_all_entered(c);
  }
#endif
  __syncthreads();
  for (int p = 0; p < c.world; ++p) cuco_put_cta(c, p, c.rank * sizeof(float), &v, sizeof(float));
  cuco_barrier(c, 0);
  if (threadIdx.x == 0) {
    const float* got = static_cast<const float*>(c.symm);
    for (int p = 0; p < c.world; ++p) g_bad += got[p] != (float)(c.epoch * 1000 + p);
    g_calls += 1;
    float* out = static_cast<float*>(c.out[0]);
    out[0] = g_bad;
    out[1] = g_calls;
  }
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  back_to_back<<<1, 32, 0, stream>>>(*ctx);
  return cudaGetLastError() != cudaSuccess;
}
