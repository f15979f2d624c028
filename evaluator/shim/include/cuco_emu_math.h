// cuco CPU emulator: CUDA math and integer intrinsics on top of libm and GCC builtins.
// Fast-math intrinsics (__expf, __fdividef, ...) are computed exactly: results can be a few ulp
// more accurate than on a GPU, so compare with a tolerance, as the evaluator does.
#ifndef CUCO_EMU_MATH_H_
#define CUCO_EMU_MATH_H_
#include <math.h>
#include <stdint.h>
#include <string.h>

// glibc already declares __expf, __logf, __sinf, __cosf, __powf, ... with the same meaning.
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline float __fdividef(float x, float y) { return x / y; }
static inline float fdividef(float x, float y) { return x / y; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fmaf_rz(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
static inline float exp2f_fast(float x) { return exp2f(x); }

static inline unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static inline float __uint_as_float(unsigned u) { float x; memcpy(&x, &u, 4); return x; }
static inline int __float_as_int(float x) { int u; memcpy(&u, &x, 4); return u; }
static inline float __int_as_float(int u) { float x; memcpy(&x, &u, 4); return x; }
static inline long long __double_as_longlong(double x) { long long u; memcpy(&u, &x, 8); return u; }
static inline double __longlong_as_double(long long u) { double x; memcpy(&x, &u, 8); return x; }
static inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
static inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
static inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline long long __float2ll_rz(float x) { return (long long)x; }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline float __double2float_rn(double x) { return (float)x; }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }

static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)((v << (s & 31)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(v >> (s & 31));
}
static inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) { return __funnelshift_l(lo, hi, s > 32 ? 32 : s); }
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) { return __funnelshift_r(lo, hi, s > 32 ? 32 : s); }
static inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
static inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
static inline int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
static inline unsigned __uhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b) >> 1); }
static inline unsigned __urhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b + 1) >> 1); }
static inline unsigned __sad(int a, int b, unsigned c) { return c + (unsigned)(a > b ? a - b : b - a); }
static inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }

// CUDA's global min/max overloads (mixed signed/unsigned arguments go unsigned, as in CUDA).
#define CUCO_EMU_MINMAX(T)                                   \
  static inline T min(T a, T b) { return a < b ? a : b; }    \
  static inline T max(T a, T b) { return a > b ? a : b; }
CUCO_EMU_MINMAX(int)
CUCO_EMU_MINMAX(unsigned)
CUCO_EMU_MINMAX(long)
CUCO_EMU_MINMAX(unsigned long)
CUCO_EMU_MINMAX(long long)
CUCO_EMU_MINMAX(unsigned long long)
#undef CUCO_EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline float min(float a, double b) { return fminf(a, (float)b); }
static inline float max(float a, double b) { return fmaxf(a, (float)b); }
static inline float min(double a, float b) { return fminf((float)a, b); }
static inline float max(double a, float b) { return fmaxf((float)a, b); }
static inline float min(int a, float b) { return fminf((float)a, b); }
static inline float min(float a, int b) { return fminf(a, (float)b); }
static inline float max(int a, float b) { return fmaxf((float)a, b); }
static inline float max(float a, int b) { return fmaxf(a, (float)b); }
#endif  // CUCO_EMU_MATH_H_
