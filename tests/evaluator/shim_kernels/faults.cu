// Failure modes, one per macro: FAULT_NULL (rank 1 writes through a null pointer),
// FAULT_PAST_END (rank 0 writes one element past its output), FAULT_INPUT (writes an input),
// FAULT_DEADLOCK (rank 0 waits for a signal nobody sends), FAULT_SPIN (a loop that never yields),
// FAULT_COOP (a cooperative launch, which cannot be emulated), FAULT_RETURN (cuco_run fails),
// FAULT_PEER_INPUT (rank 1 reads rank 0's input at the address rank 0 sees it: the same layout in
// every process), FAULT_OLD_OUTPUT (call 2 reads call 1's output, to reuse an earlier result),
// FAULT_PAD_PAST_USER / FAULT_GIN_NEGATIVE (signal-pad slots that belong to the runtime).
#include "cuco_comm.h"

__global__ void poke(const cuco_ctx c, float* p, long idx) {
  if (blockIdx.x == 1 && threadIdx.x == 3) p[idx] = 1.f;
}

__global__ void wait_forever(const cuco_ctx c) {
  if (c.rank == 0 && threadIdx.x == 0) cuco_wait(c, 7, 1);
  __syncthreads();
}

__global__ void peek(const float* p, float* out) {
  if (blockIdx.x == 1 && threadIdx.x == 3) out[0] = p[0];
}

__global__ void reserved_slots(const cuco_ctx c, int gin) {
  if (threadIdx.x != 0) return;
  if (gin)
    cuco_gin_wait(c, -1, 0);  // the last barrier counter, beneath the GIN signals
  else
    cuco_signal_add(c, c.rank, CUCO_USER_SIGNALS + 3, 1);  // a barrier flag
}

__device__ int g_never_set;
static const void* g_first_in;   // rank 0's input pointer, written where rank 1 can read it
static void* g_first_out;

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
#elif defined(FAULT_PAD_PAST_USER) || defined(FAULT_GIN_NEGATIVE)
#if defined(FAULT_GIN_NEGATIVE)
  reserved_slots<<<1, 32, 0, stream>>>(*ctx, 1);
#else
  reserved_slots<<<1, 32, 0, stream>>>(*ctx, 0);
#endif
#elif defined(FAULT_SPIN)
  spin<<<1, 1, 0, stream>>>();
#elif defined(FAULT_COOP)
  void* args[] = {(void*)ctx};
  cudaLaunchCooperativeKernel(wait_forever, dim3(1), dim3(32), args, 0, stream);
#elif defined(FAULT_RETURN)
  return 17;
#elif defined(FAULT_PEER_INPUT)
  // The pointer travels through the symmetric buffer, as any data may (rank 0 runs first: the
  // emulator's schedule is fixed); the memory behind it may not be touched by another rank.
  if (ctx->rank == 0) *(const void**)ctx->peer_symm[1] = ctx->in[0];
  if (ctx->rank == 1) {
    g_first_in = *(const void**)ctx->symm;
    peek<<<2, 32, 0, stream>>>((const float*)g_first_in, (float*)ctx->out[0]);
  }
#elif defined(FAULT_OLD_OUTPUT)
  if (ctx->epoch == 1) g_first_out = ctx->out[0];
  else peek<<<2, 32, 0, stream>>>((const float*)g_first_out, (float*)ctx->out[0]);
#endif
  (void)n;
  return 0;
}
