// Launch forms: namespaced template kernel with explicit arguments, a template kernel whose
// parameter is deduced from the arguments, NULL passed for a pointer, cudaLaunchKernel, and an
// invalid configuration that must surface through cudaGetLastError.
#include "cuco_comm.h"

namespace ops {
template <typename T, int N>
__global__ void scale(const T* in, T* out, long n) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * (T)N;
}
}  // namespace ops

template <typename T>
__global__ void add_one(T* out, long n) {
  const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] += (T)1;
}

__global__ void fill(float* out, int n, float v, const float* unused) {
  if ((int)threadIdx.x < n) out[threadIdx.x] = unused ? -1.f : v;
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const long n = ctx->dims[0];
  const float* in = (const float*)ctx->in[0];
  float* out = (float*)ctx->out[0];
  ops::scale<float, 3><<<(unsigned)((n + 63) / 64), 64, 0, stream>>>(in, out, n);
  add_one<<<dim3((unsigned)((n + 31) / 32)), dim3(32), 0, stream>>>(out, n);
  fill<<<1, 32, 0, stream>>>(out + n, 16, 7.f, NULL);
  float* tail = out + n + 16;
  int count = 16;
  float value = 9.f;
  const float* none = nullptr;
  void* args[] = {&tail, &count, &value, &none};
  if (cudaLaunchKernel(fill, dim3(1), dim3(32), args, 0, stream) != cudaSuccess) return 2;
  if (cudaGetLastError() != cudaSuccess) return 3;
  fill<<<1, 2048, 0, stream>>>(out, 1, 0.f, NULL);  // 2048 threads: invalid configuration
  return cudaGetLastError() == cudaErrorInvalidConfiguration ? 0 : 4;
}
