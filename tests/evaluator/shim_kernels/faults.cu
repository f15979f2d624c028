// Failure modes, one per macro: FAULT_NULL (rank 1 writes through a null pointer),
// FAULT_PAST_END (rank 0 writes one element past its output), FAULT_INPUT (writes an input),
// FAULT_DEADLOCK (rank 0 waits for a signal nobody sends), FAULT_SPIN (a loop that never yields),
// FAULT_COOP (a cooperative launch, which cannot be emulated), FAULT_RETURN (cuco_run fails).
#include "cuco_comm.h"

__global__ void poke(const cuco_ctx c, float* p, long idx) {
  if (blockIdx.x == 1 && threadIdx.x == 3) p[idx] = 1.f;
}

__global__ void wait_forever(const cuco_ctx c) {
  if (c.rank == 0 && threadIdx.x == 0) cuco_wait(c, 7, 1);
  __syncthreads();
}

__device__ int g_never_set;

__global__ void spin() {
  volatile int* f = &g_never_set;
  while (*f == 0) {
  }
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const long n = ctx->dims[0];
#if defined(FAULT_NULL)
  poke<<<2, 32, 0, stream>>>(*ctx, ctx->rank == 1 ? nullptr : (float*)ctx->out[0], 0);
#elif defined(FAULT_PAST_END)
  poke<<<2, 32, 0, stream>>>(*ctx, (float*)ctx->out[0], ctx->rank == 0 ? n : 0);
#elif defined(FAULT_INPUT)
  poke<<<2, 32, 0, stream>>>(*ctx, (float*)ctx->in[0], 0);
#elif defined(FAULT_DEADLOCK)
  wait_forever<<<2, 64, 0, stream>>>(*ctx);
#elif defined(FAULT_SPIN)
  spin<<<1, 1, 0, stream>>>();
#elif defined(FAULT_COOP)
  void* args[] = {(void*)ctx};
  cudaLaunchCooperativeKernel(wait_forever, dim3(1), dim3(32), args, 0, stream);
#elif defined(FAULT_RETURN)
  return 17;
#endif
  (void)n;
  return 0;
}
