// cuco CPU emulator: CUDA atomics as GCC __atomic builtins. They are real atomics, so they also
// work across ranks (processes) on the shared arena. An atomic that changes nothing (a failed
// CAS, atomicAdd(p, 0), a no-op max) is usually a poll: it yields at once so the producer can
// run; every 64th changing atomic yields too, so loops built from atomics cannot starve others.
#ifndef CUCO_EMU_ATOMIC_H_
#define CUCO_EMU_ATOMIC_H_
#include <string.h>

template <class T>
static inline void cuco_emu_atomic_note(const T* p, const T& old, const T& nv) {
  const bool modified = memcmp(&old, &nv, sizeof(T)) != 0;
  if (!modified || (++cuco_emu::atomic_count & 63u) == 0) {
    unsigned long long bits = 0;
    memcpy(&bits, &old, sizeof(T) < 8 ? sizeof(T) : 8);
    cuco_emu::atomic_yield(modified, p, bits);
  }
}

// Read-modify-write by compare-and-swap: works for every type of size 1, 2, 4 or 8.
template <class T, class F>
static inline T cuco_emu_atomic_rmw(T* p, F f) {
  T old, nv;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  do {
    nv = f(old);
  } while (!__atomic_compare_exchange(p, &old, &nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  cuco_emu_atomic_note(p, old, nv);
  return old;
}

#define CUCO_EMU_ATOMIC_INT(T)                                                                  \
  static inline T atomicAdd(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return (T)(o + v); }); } \
  static inline T atomicSub(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return (T)(o - v); }); } \
  static inline T atomicExch(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T) { return v; }); }          \
  static inline T atomicMin(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return v < o ? v : o; }); } \
  static inline T atomicMax(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return v > o ? v : o; }); } \
  static inline T atomicAnd(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return (T)(o & v); }); } \
  static inline T atomicOr(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return (T)(o | v); }); }  \
  static inline T atomicXor(T* p, T v) { return cuco_emu_atomic_rmw(p, [v](T o) { return (T)(o ^ v); }); } \
  static inline T atomicCAS(T* p, T cmp, T v) {                                                 \
    T old = cmp;                                                                                \
    __atomic_compare_exchange(p, &old, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
    cuco_emu_atomic_note(p, old, old == cmp ? v : old);                                         \
    return old;                                                                                 \
  }
CUCO_EMU_ATOMIC_INT(int)
CUCO_EMU_ATOMIC_INT(unsigned int)
CUCO_EMU_ATOMIC_INT(unsigned long long)
CUCO_EMU_ATOMIC_INT(long long)
#undef CUCO_EMU_ATOMIC_INT

static inline unsigned short atomicCAS(unsigned short* p, unsigned short cmp, unsigned short v) {
  unsigned short old = cmp;
  __atomic_compare_exchange(p, &old, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  cuco_emu_atomic_note(p, old, old == cmp ? v : old);
  return old;
}
static inline unsigned atomicInc(unsigned* p, unsigned lim) {
  return cuco_emu_atomic_rmw(p, [lim](unsigned o) { return o >= lim ? 0u : o + 1; });
}
static inline unsigned atomicDec(unsigned* p, unsigned lim) {
  return cuco_emu_atomic_rmw(p, [lim](unsigned o) { return (o == 0 || o > lim) ? lim : o - 1; });
}
static inline float atomicAdd(float* p, float v) { return cuco_emu_atomic_rmw(p, [v](float o) { return o + v; }); }
static inline double atomicAdd(double* p, double v) { return cuco_emu_atomic_rmw(p, [v](double o) { return o + v; }); }
static inline float atomicExch(float* p, float v) { return cuco_emu_atomic_rmw(p, [v](float) { return v; }); }
static inline float atomicMax(float* p, float v) { return cuco_emu_atomic_rmw(p, [v](float o) { return fmaxf(o, v); }); }
static inline float atomicMin(float* p, float v) { return cuco_emu_atomic_rmw(p, [v](float o) { return fminf(o, v); }); }
static inline float2 atomicAdd(float2* p, float2 v) {
  return make_float2(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y));
}
static inline float4 atomicAdd(float4* p, float4 v) {
  return make_float4(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z), atomicAdd(&p->w, v.w));
}

// Scope variants: every scope is the strongest one on a CPU.
#define atomicAdd_system atomicAdd
#define atomicAdd_block atomicAdd
#define atomicSub_system atomicSub
#define atomicSub_block atomicSub
#define atomicExch_system atomicExch
#define atomicExch_block atomicExch
#define atomicMin_system atomicMin
#define atomicMin_block atomicMin
#define atomicMax_system atomicMax
#define atomicMax_block atomicMax
#define atomicAnd_system atomicAnd
#define atomicAnd_block atomicAnd
#define atomicOr_system atomicOr
#define atomicOr_block atomicOr
#define atomicXor_system atomicXor
#define atomicXor_block atomicXor
#define atomicCAS_system atomicCAS
#define atomicCAS_block atomicCAS
#define atomicInc_system atomicInc
#define atomicInc_block atomicInc
#define atomicDec_system atomicDec
#define atomicDec_block atomicDec
#endif  // CUCO_EMU_ATOMIC_H_
