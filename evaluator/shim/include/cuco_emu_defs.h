// cuco CPU emulator: CUDA qualifiers, built-in vector types and dim3 for g++.
// Part of the "CUDA shim" that lets candidate .cu sources compile as C++ (see shim/README.md).
#ifndef CUCO_EMU_DEFS_H_
#define CUCO_EMU_DEFS_H_
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Execution-space and memory-space qualifiers: everything is host code here. __device__
// globals become ordinary globals, which is right because each rank is its own process.
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __cudart_builtin__
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __maxnreg__(n)
#define CUDART_CB
// The source rewrite (evaluator/source_rewrite.py) replaces every __shared__ declaration it
// understands; anything left is reported by g++ with this name ("not emulatable").
#define __shared__ cuco_shared_declaration_not_rewritten

// Calls of one emulator run: the first CUCO_EMU_FENCED_CALLS start behind a barrier, in opposite
// rank orders; later ones follow back to back, as on a GPU (evaluator/shim/emu_main.cpp). GIN puts
// land as late as possible in the fenced calls (a read before the wait, a source reused before the
// flush) and at once in the others (a write into a peer still in the previous call).
#define CUCO_EMU_FENCED_CALLS 2

// What the observed design point is made of (evaluator/shim/trace.cpp): the comm API, the GEMM
// tile and the shim's copies report each operation here. Internal: candidates cannot name it.
enum cuco_emu_trace_kind {
  CUCO_EMU_TR_PUT_THREAD, CUCO_EMU_TR_PUT_WARP, CUCO_EMU_TR_PUT_CTA, CUCO_EMU_TR_SIGNAL, CUCO_EMU_TR_WAIT,
  CUCO_EMU_TR_BARRIER, CUCO_EMU_TR_GIN_PUT, CUCO_EMU_TR_GIN_SIGNAL, CUCO_EMU_TR_GIN_WAIT, CUCO_EMU_TR_MM_REDUCE,
  CUCO_EMU_TR_MM_STORE, CUCO_EMU_TR_COLL, CUCO_EMU_TR_MMA, CUCO_EMU_TR_PEER, CUCO_EMU_TR_CE_COPY,
  CUCO_EMU_TR_ENTER, CUCO_EMU_TR_ENTER_WAIT,  // the call-entry protocol (runtime/cuco_enter.h), not the design's
  CUCO_EMU_TR_KINDS
};
extern "C" void cuco_emu_trace(int kind, unsigned long long bytes, long slot);
// The GEMM tile hands each thread's accumulators here when it finishes (the dependence probe).
extern "C" void cuco_emu_tile_result(float* acc, int n);

#define CUCO_EMU_VEC(T, N, A1, A2, A3, A4)                         \
  struct __attribute__((aligned(A1))) N##1 { T x; };               \
  struct __attribute__((aligned(A2))) N##2 { T x, y; };            \
  struct __attribute__((aligned(A3))) N##3 { T x, y, z; };         \
  struct __attribute__((aligned(A4))) N##4 { T x, y, z, w; };      \
  static inline N##1 make_##N##1(T x) { return N##1{x}; }          \
  static inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }  \
  static inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; } \
  static inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }

// Alignments follow CUDA's vector_types.h (int2 8 bytes, int4 16 bytes, ...).
CUCO_EMU_VEC(signed char, char, 1, 2, 1, 4)
CUCO_EMU_VEC(unsigned char, uchar, 1, 2, 1, 4)
CUCO_EMU_VEC(short, short, 2, 4, 2, 8)
CUCO_EMU_VEC(unsigned short, ushort, 2, 4, 2, 8)
CUCO_EMU_VEC(int, int, 4, 8, 4, 16)
CUCO_EMU_VEC(unsigned int, uint, 4, 8, 4, 16)
CUCO_EMU_VEC(long, long, 8, 16, 8, 16)
CUCO_EMU_VEC(unsigned long, ulong, 8, 16, 8, 16)
CUCO_EMU_VEC(long long, longlong, 8, 16, 8, 16)
CUCO_EMU_VEC(unsigned long long, ulonglong, 8, 16, 8, 16)
CUCO_EMU_VEC(float, float, 4, 8, 4, 16)
CUCO_EMU_VEC(double, double, 8, 16, 8, 16)
#undef CUCO_EMU_VEC

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// Built-in index variables. One rank is one OS thread running fibers; the scheduler stores
// the running fiber's indices here before every switch, so reads are plain global loads.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
static const int warpSize = 32;

#endif  // CUCO_EMU_DEFS_H_
