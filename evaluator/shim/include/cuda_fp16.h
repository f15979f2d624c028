// cuco CPU emulator: __half / half / __half2 with CUDA's conversion functions.
#ifndef CUCO_EMU_CUDA_FP16_H_
#define CUCO_EMU_CUDA_FP16_H_
#include "cuco_emu_f16.h"
CUCO_EMU_F16_TYPE(__half, __half_raw, __half2, __half2_raw, cuco_emu_h2f, cuco_emu_f2h)
typedef __half half;
typedef __half2 half2;
static inline float __half2float(__half h) { return cuco_emu_h2f(h.__x); }
static inline __half __float2half(float f) { return __half_raw{cuco_emu_f2h(f)}; }
static inline __half __float2half_rn(float f) { return __half_raw{cuco_emu_f2h(f)}; }
static inline __half __double2half(double d) { return __half_raw{cuco_emu_f2h((float)d)}; }
static inline __half __float2half_rz(float f) {
  __half h = __float2half_rn(f);
  if (fabsf(__half2float(h)) > fabsf(f) && !isinf(f)) h.__x = (unsigned short)(h.__x - 1);
  return h;
}
static inline __half __int2half_rn(int v) { return __float2half_rn((float)v); }
static inline __half __uint2half_rn(unsigned v) { return __float2half_rn((float)v); }
static inline int __half2int_rz(__half h) { return (int)__half2float(h); }
static inline int __half2int_rn(__half h) { return (int)nearbyintf(__half2float(h)); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short v) { return __half_raw{v}; }
static inline __half __short_as_half(short v) { return __half_raw{(unsigned short)v}; }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half_rn(a), __float2half_rn(b)); }
static inline __half2 __float2half2_rn(float a) { return __half2(__float2half_rn(a), __float2half_rn(a)); }
static inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
static inline float2 __half22float2(__half2 h) { return make_float2(__half2float(h.x), __half2float(h.y)); }
static inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __half2half2(__half a) { return __half2(a, a); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
#endif
