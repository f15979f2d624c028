// Two streams joined by events: produce on a side stream (kernel + async copy), the main stream
// waits for the event, then consumes. -DNO_WAIT deletes the wait: the consumer (launched last)
// runs first and reads the poisoned workspace.
#include "cuco_comm.h"

__global__ void produce(float* buf, const float* in, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    buf[i] = in[i] * 2.f + 1.f;
}
__global__ void consume(float* out, const float* buf, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    out[i] = buf[i] + 1.f;
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  static cudaStream_t side;
  static cudaEvent_t start, ready;
  if (!side) {
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&start, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
  }
  const long n = ctx->dims[0];
  float* ws = (float*)ctx->workspace;
  cudaEventRecord(start, stream);
  cudaStreamWaitEvent(side, start, 0);
  produce<<<4, 64, 0, side>>>(ws, (const float*)ctx->in[0], n);
  cudaMemcpyAsync(ctx->out[1], ws, n * sizeof(float), cudaMemcpyDeviceToDevice, side);
  cudaEventRecord(ready, side);
#ifndef NO_WAIT
  cudaStreamWaitEvent(stream, ready, 0);
#endif
  consume<<<4, 64, 0, stream>>>((float*)ctx->out[0], ws, n);
  return cudaGetLastError() != cudaSuccess;
}
