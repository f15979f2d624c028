// fp16 / bf16 conversions (round to nearest even, subnormals, overflow, NaN) and arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "cuco_comm.h"

__global__ void convert(const float* in, __half* h, __nv_bfloat16* b, float* back, long n) {
  for (long i = threadIdx.x; i < n; i += blockDim.x) {
    h[i] = __float2half_rn(in[i]);
    b[i] = __float2bfloat16_rn(in[i]);
    back[i] = __half2float(h[i]) + __bfloat162float(b[i]);
  }
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const long n = ctx->dims[0];
  char* out = (char*)ctx->out[0];
  convert<<<1, 64, 0, stream>>>((const float*)ctx->in[0], (__half*)out, (__nv_bfloat16*)(out + 2 * n),
                                (float*)(out + 4 * n), n);
  return 0;
}
