// cuco CPU emulator: __nv_bfloat16 / nv_bfloat16 / __nv_bfloat162 with CUDA's conversions.
#ifndef CUCO_EMU_CUDA_BF16_H_
#define CUCO_EMU_CUDA_BF16_H_
#include "cuda_fp16.h"
CUCO_EMU_F16_TYPE(__nv_bfloat16, __nv_bfloat16_raw, __nv_bfloat162, __nv_bfloat162_raw, cuco_emu_bf2f, cuco_emu_f2bf)
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
static inline float __bfloat162float(__nv_bfloat16 h) { return cuco_emu_bf2f(h.__x); }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16_raw{cuco_emu_f2bf(f)}; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16_raw{cuco_emu_f2bf(f)}; }
static inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16_raw{cuco_emu_f2bf((float)d)}; }
static inline __nv_bfloat16 __float2bfloat16_rz(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return __nv_bfloat16_raw{(unsigned short)(x >> 16)};
}
static inline __nv_bfloat16 __int2bfloat16_rn(int v) { return __float2bfloat16_rn((float)v); }
static inline int __bfloat162int_rz(__nv_bfloat16 h) { return (int)__bfloat162float(h); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short v) { return __nv_bfloat16_raw{v}; }
static inline __nv_bfloat16 __short_as_bfloat16(short v) { return __nv_bfloat16_raw{(unsigned short)v}; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162(__float2bfloat16_rn(a), __float2bfloat16_rn(b));
}
static inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __floats2bfloat162_rn(a, a); }
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) {
  return make_float2(__bfloat162float(h.x), __bfloat162float(h.y));
}
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
#endif
