// cuco CPU emulator: 16-bit float storage types (__half, __nv_bfloat16). Arithmetic goes
// through float and rounds back to nearest-even, as CUDA's conversions do.
#ifndef CUCO_EMU_F16_H_
#define CUCO_EMU_F16_H_
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "cuco_emu_defs.h"

static inline unsigned short cuco_emu_f2h(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return (unsigned short)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));  // NaN stays NaN
  if (ax >= 0x477FF000u) return (unsigned short)(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (ax >= 0x38800000u) {  // normal half
    uint32_t h = (ax >> 13) - 0x1C000u, rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return (unsigned short)(sign | h);
  }
  if (ax < 0x33000000u) return (unsigned short)sign;  // below half the smallest subnormal
  const uint32_t e = ax >> 23, m = (ax & 0x7FFFFFu) | 0x800000u, shift = 126u - e;
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
  return (unsigned short)(sign | h);
}
static inline float cuco_emu_h2f(unsigned short h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  uint32_t x;
  if (e == 0) {
    const float v = (float)m * 5.9604644775390625e-08f;  // m * 2^-24, exact
    memcpy(&x, &v, 4);
    x |= sign;
  } else if (e == 31) {
    x = sign | 0x7F800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}
static inline unsigned short cuco_emu_f2bf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
}
static inline float cuco_emu_bf2f(unsigned short b) {
  const uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

// One 16-bit type T (raw struct RAW, pair T2/RAW2) converting with TOF / FROMF.
#define CUCO_EMU_F16_TYPE(T, RAW, T2, RAW2, TOF, FROMF)                                          \
  struct RAW { unsigned short x; };                                                              \
  struct RAW2 { unsigned short x, y; };                                                          \
  struct __attribute__((aligned(2))) T {                                                         \
    unsigned short __x;                                                                          \
    T() = default;                                                                               \
    constexpr T(const RAW& r) : __x(r.x) {}                                                      \
    T(float f) : __x(FROMF(f)) {}                                                                \
    T(double f) : __x(FROMF((float)f)) {}                                                        \
    T(short v) : __x(FROMF((float)v)) {}                                                         \
    T(unsigned short v) : __x(FROMF((float)v)) {}                                                \
    T(int v) : __x(FROMF((float)v)) {}                                                           \
    T(unsigned v) : __x(FROMF((float)v)) {}                                                      \
    T(long long v) : __x(FROMF((float)v)) {}                                                     \
    T(unsigned long long v) : __x(FROMF((float)v)) {}                                            \
    T& operator=(const RAW& r) { __x = r.x; return *this; }                                      \
    T& operator=(float f) { __x = FROMF(f); return *this; }                                      \
    T& operator=(double f) { __x = FROMF((float)f); return *this; }                              \
    T& operator=(int v) { __x = FROMF((float)v); return *this; }                                 \
    T& operator=(unsigned v) { __x = FROMF((float)v); return *this; }                            \
    T& operator=(long long v) { __x = FROMF((float)v); return *this; }                           \
    operator float() const { return TOF(__x); }                                                  \
    operator RAW() const { return RAW{__x}; }                                                    \
  };                                                                                             \
  struct __attribute__((aligned(4))) T2 {                                                        \
    T x, y;                                                                                      \
    T2() = default;                                                                              \
    constexpr T2(const T& a, const T& b) : x(a), y(b) {}                                         \
    T2(const RAW2& r) { x.__x = r.x; y.__x = r.y; }                                              \
    operator RAW2() const { return RAW2{x.__x, y.__x}; }                                         \
  };                                                                                             \
  static inline T operator+(const T& a, const T& b) { return T((float)a + (float)b); }           \
  static inline T operator-(const T& a, const T& b) { return T((float)a - (float)b); }           \
  static inline T operator*(const T& a, const T& b) { return T((float)a * (float)b); }           \
  static inline T operator/(const T& a, const T& b) { return T((float)a / (float)b); }           \
  static inline T operator-(const T& a) { T r = a; r.__x ^= 0x8000u; return r; }                 \
  static inline T operator+(const T& a) { return a; }                                            \
  static inline T& operator+=(T& a, const T& b) { return a = a + b; }                            \
  static inline T& operator-=(T& a, const T& b) { return a = a - b; }                            \
  static inline T& operator*=(T& a, const T& b) { return a = a * b; }                            \
  static inline T& operator/=(T& a, const T& b) { return a = a / b; }                            \
  static inline T& operator++(T& a) { return a = T((float)a + 1.0f); }                           \
  static inline T& operator--(T& a) { return a = T((float)a - 1.0f); }                           \
  static inline T operator++(T& a, int) { T r = a; ++a; return r; }                              \
  static inline T operator--(T& a, int) { T r = a; --a; return r; }                              \
  static inline bool operator==(const T& a, const T& b) { return (float)a == (float)b; }         \
  static inline bool operator!=(const T& a, const T& b) { return (float)a != (float)b; }         \
  static inline bool operator<(const T& a, const T& b) { return (float)a < (float)b; }           \
  static inline bool operator<=(const T& a, const T& b) { return (float)a <= (float)b; }         \
  static inline bool operator>(const T& a, const T& b) { return (float)a > (float)b; }           \
  static inline bool operator>=(const T& a, const T& b) { return (float)a >= (float)b; }         \
  static inline T2 operator+(const T2& a, const T2& b) { return T2(a.x + b.x, a.y + b.y); }      \
  static inline T2 operator-(const T2& a, const T2& b) { return T2(a.x - b.x, a.y - b.y); }      \
  static inline T2 operator*(const T2& a, const T2& b) { return T2(a.x * b.x, a.y * b.y); }      \
  static inline T2 operator/(const T2& a, const T2& b) { return T2(a.x / b.x, a.y / b.y); }      \
  static inline T2& operator+=(T2& a, const T2& b) { return a = a + b; }                         \
  static inline T2& operator*=(T2& a, const T2& b) { return a = a * b; }                         \
  static inline T __hadd(T a, T b) { return a + b; }                                             \
  static inline T __hsub(T a, T b) { return a - b; }                                             \
  static inline T __hmul(T a, T b) { return a * b; }                                             \
  static inline T __hdiv(T a, T b) { return a / b; }                                             \
  static inline T __hfma(T a, T b, T c) { return T(fmaf((float)a, (float)b, (float)c)); }        \
  static inline T __hneg(T a) { return -a; }                                                     \
  static inline T __habs(T a) { a.__x &= 0x7FFFu; return a; }                                    \
  static inline T __hmax(T a, T b) { return T(fmaxf((float)a, (float)b)); }                      \
  static inline T __hmin(T a, T b) { return T(fminf((float)a, (float)b)); }                      \
  static inline bool __heq(T a, T b) { return a == b; }                                          \
  static inline bool __hne(T a, T b) { return a != b && !isnan((float)a) && !isnan((float)b); }  \
  static inline bool __hlt(T a, T b) { return a < b; }                                           \
  static inline bool __hle(T a, T b) { return a <= b; }                                          \
  static inline bool __hgt(T a, T b) { return a > b; }                                           \
  static inline bool __hge(T a, T b) { return a >= b; }                                          \
  static inline bool __hisnan(T a) { return isnan((float)a); }                                   \
  static inline int __hisinf(T a) { float f = a; return isinf(f) ? (f > 0 ? 1 : -1) : 0; }      \
  static inline T hsqrt(T a) { return T(sqrtf((float)a)); }                                      \
  static inline T hrsqrt(T a) { return T(1.0f / sqrtf((float)a)); }                              \
  static inline T hrcp(T a) { return T(1.0f / (float)a); }                                       \
  static inline T hexp(T a) { return T(expf((float)a)); }                                        \
  static inline T hlog(T a) { return T(logf((float)a)); }                                        \
  static inline T hfloor(T a) { return T(floorf((float)a)); }                                    \
  static inline T hceil(T a) { return T(ceilf((float)a)); }                                      \
  static inline T2 __hadd2(T2 a, T2 b) { return a + b; }                                         \
  static inline T2 __hsub2(T2 a, T2 b) { return a - b; }                                         \
  static inline T2 __hmul2(T2 a, T2 b) { return a * b; }                                         \
  static inline T2 __h2div(T2 a, T2 b) { return a / b; }                                         \
  static inline T2 __hfma2(T2 a, T2 b, T2 c) { return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); } \
  static inline T2 __hneg2(T2 a) { return T2(-a.x, -a.y); }                                      \
  static inline T2 __habs2(T2 a) { return T2(__habs(a.x), __habs(a.y)); }                        \
  static inline T2 __hmax2(T2 a, T2 b) { return T2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }        \
  static inline T2 __hmin2(T2 a, T2 b) { return T2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }        \
  static inline float __low2float(T2 a) { return (float)a.x; }                                   \
  static inline float __high2float(T2 a) { return (float)a.y; }                                  \
  static inline T2 __lowhigh2highlow(T2 a) { return T2(a.y, a.x); }                              \
  static inline T atomicAdd(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return o + v; }); } \
  static inline T2 atomicAdd(T2* p, T2 v) { return cuco_emu_atomic_rmw(p, [v](T2 o) { return o + v; }); } \
  static inline T atomicMax(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return __hmax(o, v); }); } \
  static inline T atomicMin(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return __hmin(o, v); }); }

#include "cuco_emu_device.h"
#endif  // CUCO_EMU_F16_H_
