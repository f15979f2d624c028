// Element type of a build (CUCO_DTYPE) and float conversions that work on every backend.
#ifndef CUCO_TYPES_H_
#define CUCO_TYPES_H_
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "cuco_ctx.h"

#ifndef CUCO_DTYPE
#define CUCO_DTYPE CUCO_BF16
#endif

#if CUCO_DTYPE == CUCO_F32
typedef float cuco_t;
#elif CUCO_DTYPE == CUCO_F16
typedef __half cuco_t;
#elif CUCO_DTYPE == CUCO_BF16
typedef __nv_bfloat16 cuco_t;
#else
#error "CUCO_DTYPE must be CUCO_F32, CUCO_F16 or CUCO_BF16"
#endif

static __host__ __device__ __forceinline__ float cuco_to_float(float x) { return x; }
static __host__ __device__ __forceinline__ float cuco_to_float(__half x) { return __half2float(x); }
static __host__ __device__ __forceinline__ float cuco_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
static __host__ __device__ __forceinline__ T cuco_from_float(float x);
template <>
__host__ __device__ __forceinline__ float cuco_from_float<float>(float x) { return x; }
template <>
__host__ __device__ __forceinline__ __half cuco_from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 cuco_from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

#endif  // CUCO_TYPES_H_
