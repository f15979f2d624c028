// cuco GEMM tile internals (included by cuco_gemm.h): shared-memory layout, the global->shared
// loaders, the multi-stage main loop and the portable per-stage step. Nothing here is API.
//
// Paths, chosen at compile time:
//   GPU, bf16/fp16   cp.async loads + ldmatrix + mma.sync tensor cores (cuco_gemm_sm80.h)
//   GPU, fp32        cp.async loads + fp32 FMA on CUDA cores (stage_fma below)
//   CPU emulator     plain copies + stage_fma, same barriers and accumulator ownership
#ifndef CUCO_GEMM_DETAIL_H_
#define CUCO_GEMM_DETAIL_H_

namespace cuco_gemm_detail {

constexpr int kVec = 16 / (int)sizeof(cuco_t);  // elements per 16-byte chunk

// Element offset of 16-byte chunk c of row r in a shared tile with CH chunks per row. The chunk
// index is XORed with the row so that the 8 rows one ldmatrix phase reads (same logical chunk)
// and the 8 chunks one cp.async phase writes fall in 8 different 16-byte bank groups: no bank
// conflicts and no padding. CH < 8: 8 / CH rows share a 128-byte line.
template <int CH>
static __device__ __forceinline__ int swizzle(int r, int c) {
  constexpr int rows_per_line = CH >= 8 ? 1 : 8 / CH, mask = CH >= 8 ? 7 : CH - 1;
  return (r * CH + (c ^ ((r / rows_per_line) & mask))) * kVec;
}

}  // namespace cuco_gemm_detail

#if defined(CUCO_COMM_CPU)
#define CUCO_GEMM_ASYNC 0  // plain copies; the emulator's fibers see them at once
#define CUCO_GEMM_TENSOR_CORES 0
#else
#define CUCO_GEMM_ASYNC 1
#define CUCO_GEMM_TENSOR_CORES (CUCO_DTYPE != CUCO_F32)
#include "cuco_gemm_sm80.h"
#endif

namespace cuco_gemm_detail {

#if !CUCO_GEMM_ASYNC
static __device__ __forceinline__ void cp_commit() {}
template <int N>
static __device__ __forceinline__ void cp_wait() {}
#endif

// Where a tile's operands live and how much of them is valid.
struct Operands {
  const cuco_t* a;  // A tile (global), or the caller's shared A (A_SMEM)
  int64_t lda;
  int rows;         // valid rows, 0..BM
  const cuco_t* b;  // B tile, layout per B_LAYOUT
  int64_t ldb;
  int cols;         // valid columns, 0..BN
  int64_t k;
  bool a_vec, b_vec;  // 16-byte aligned rows: cp.async path
};

static __device__ __forceinline__ bool vector_ok(const cuco_t* p, int64_t ld) {
  return (uintptr_t)p % 16 == 0 && ld % kVec == 0;
}
static __device__ __forceinline__ int clamp_extent(int64_t n, int hi) { return n < 0 ? 0 : n > hi ? hi : (int)n; }

// One 16-byte chunk into shared memory: n (0..kVec) elements from src, the rest zero.
// VEC: src is 16-byte aligned and is copied asynchronously (cp.async) on the GPU.
// VEC instantiations return before the loop: nvcc's "loop is not reachable" (#128) is expected
// there, and would otherwise fill every build log.
#ifdef __NVCC__
#pragma nv_diag_suppress 128
#endif
template <bool VEC>
static __device__ __forceinline__ void load_chunk(cuco_t* dst, const cuco_t* src, int n) {
#if CUCO_GEMM_ASYNC
  if (VEC) {
    cp_async16(dst, src, n * (int)sizeof(cuco_t));
    return;
  }
#endif
  for (int i = 0; i < kVec; ++i) dst[i] = i < n ? src[i] : cuco_from_float<cuco_t>(0.f);
}
#ifdef __NVCC__
#pragma nv_diag_default 128
#endif
// The same for a whole chunk (n = kVec) or none (n = 0): cheaper on the GPU.
template <bool VEC>
static __device__ __forceinline__ void load_whole_chunk(cuco_t* dst, const cuco_t* src, bool valid) {
#if CUCO_GEMM_ASYNC
  if (VEC) {
    cp_async16_or_zero(dst, src, !valid);
    return;
  }
#endif
  load_chunk<false>(dst, src, valid ? kVec : 0);
}

// This thread's share of one operand tile: R x C elements (row r at origin + r * ld), k along
// the rows (K_ROWS: B as [K, N]) or along the columns (A, and B as [N, K]). Chunk i of the tile
// goes to thread i % THREADS, so consecutive threads copy consecutive 16 bytes. What does not
// change between k-tiles is computed once: a copy in the main loop is an add and a cp.async.
template <int R, int C, int THREADS, bool K_ROWS>
struct TileCopy {
  static constexpr int CH = C / kVec, CHUNKS = R * CH, PER_THREAD = (CHUNKS + THREADS - 1) / THREADS;
  int64_t src[PER_THREAD];  // element offset from the k-tile's origin in global memory
  int dst[PER_THREAD];      // element offset in a stage (swizzled)
  int n[PER_THREAD];        // elements inside the non-k extent: 0..kVec
  bool whole;               // every n is 0 or kVec
  int t;                    // this thread

  __device__ __forceinline__ TileCopy(int64_t ld, int extent, int tid) : t(tid) {
    for (int j = 0; j < PER_THREAD; ++j) {
      const int i = t + j * THREADS, r = i / CH, c = i % CH;
      src[j] = r * ld + c * kVec;
      dst[j] = swizzle<CH>(r, c);
      n[j] = K_ROWS ? clamp_extent(extent - c * kVec, kVec) : (r < extent ? kVec : 0);
    }
    whole = !K_ROWS || extent % kVec == 0;
  }
  // Copy the k-tile whose origin is g into stage s; kleft: its valid k (K_FULL: all of it).
  template <bool VEC, bool K_FULL>
  __device__ __forceinline__ void copy(cuco_t* s, const cuco_t* g, int kleft) const {
    if (K_FULL && whole) {
#pragma unroll
      for (int j = 0; j < PER_THREAD; ++j) {
        if (CHUNKS % THREADS != 0 && t + j * THREADS >= CHUNKS) break;
        load_whole_chunk<VEC>(s + dst[j], g + src[j], n[j] != 0);  // invalid: nothing is read
      }
      return;
    }
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int i = t + j * THREADS;
      if (CHUNKS % THREADS != 0 && i >= CHUNKS) break;
      int cnt = n[j];
      if (!K_FULL) {
        const int k = K_ROWS ? i / CH : (i % CH) * kVec;  // the chunk's first k in the tile
        cnt = K_ROWS ? (k < kleft ? cnt : 0) : (cnt ? clamp_extent(kleft - k, kVec) : 0);
      }
      load_chunk<VEC>(s + dst[j], cnt ? g + src[j] : g, cnt);  // cnt == 0 reads nothing
    }
  }
};

template <bool VEC, bool K_FULL, class Copy>
static __device__ __forceinline__ void copy_operand(const Copy& plan, bool vec, cuco_t* s, const cuco_t* g,
                                                    int kleft) {
  if (VEC || vec) plan.template copy<true, K_FULL>(s, g, kleft);
  else plan.template copy<false, K_FULL>(s, g, kleft);
}

// The copy plans of both operands.
template <class Cfg, int B_LAYOUT>
struct StageCopy {
  static constexpr bool KN = B_LAYOUT == CUCO_B_KN;
  TileCopy<Cfg::BM, Cfg::BK, Cfg::THREADS, false> a;
  TileCopy<KN ? Cfg::BK : Cfg::BN, KN ? Cfg::BN : Cfg::BK, Cfg::THREADS, KN> b;
  __device__ __forceinline__ StageCopy(const Operands& op, int tid)
      : a(op.lda, op.rows, tid), b(op.ldb, op.cols, tid) {}
};

// Issue the copies of k-tile kt into pipeline stage s. VEC: both operands take the cp.async path
// (the common case, compiled without the scalar fallback).
template <class Cfg, int B_LAYOUT, bool A_SMEM, bool VEC>
static __device__ __forceinline__ void load_stage(cuco_t* sa, cuco_t* sb, int s, int kt, const Operands& op,
                                                  const StageCopy<Cfg, B_LAYOUT>& plan) {
  const int64_t k0 = (int64_t)kt * Cfg::BK;
  const cuco_t* ga = op.a + k0;
  const cuco_t* gb = B_LAYOUT == CUCO_B_KN ? op.b + k0 * op.ldb : op.b + k0;
  if (k0 + Cfg::BK <= op.k) {
    if (!A_SMEM) copy_operand<VEC, true>(plan.a, op.a_vec, sa + s * Cfg::A_STAGE, ga, Cfg::BK);
    copy_operand<VEC, true>(plan.b, op.b_vec, sb + s * Cfg::B_STAGE, gb, Cfg::BK);
  } else {
    const int kleft = (int)(op.k - k0);
    if (!A_SMEM) copy_operand<VEC, false>(plan.a, op.a_vec, sa + s * Cfg::A_STAGE, ga, kleft);
    copy_operand<VEC, false>(plan.b, op.b_vec, sb + s * Cfg::B_STAGE, gb, kleft);
  }
}

// One pipeline stage with fp32 FMAs: the same contract as stage_mma (cuco_gemm_sm80.h). Each
// thread computes exactly the accumulators it owns on tensor cores. Zero-filled A/B cells
// contribute 0; with A_SMEM only the kvalid real columns are read.
template <class Cfg, int B_LAYOUT, bool A_SMEM>
static __device__ __forceinline__ void stage_fma(cuco_gemm_acc<Cfg>& acc, int t, const cuco_t* a, int lda_s,
                                                 const cuco_t* b, int kvalid) {
  constexpr int CH_K = Cfg::BK / kVec, CH_N = Cfg::BN / kVec;
  int rows[Cfg::MI][2], cols[Cfg::NI][2];
  for (int mi = 0; mi < Cfg::MI; ++mi)
    for (int h = 0; h < 2; ++h) rows[mi][h] = acc.row_of(t, mi, 2 * h);
  for (int ni = 0; ni < Cfg::NI; ++ni)
    for (int j = 0; j < 2; ++j) cols[ni][j] = acc.col_of(t, ni, j);
  const int kn = A_SMEM && kvalid < Cfg::BK ? kvalid : Cfg::BK;
  for (int k = 0; k < kn; ++k) {
    float av[Cfg::MI][2], bv[Cfg::NI][2];
    for (int mi = 0; mi < Cfg::MI; ++mi)
      for (int h = 0; h < 2; ++h) {
        const int r = rows[mi][h];
        av[mi][h] = cuco_to_float(A_SMEM ? a[r * lda_s + k] : a[swizzle<CH_K>(r, k / kVec) + k % kVec]);
      }
    for (int ni = 0; ni < Cfg::NI; ++ni)
      for (int j = 0; j < 2; ++j) {
        const int c = cols[ni][j];
        bv[ni][j] = cuco_to_float(B_LAYOUT == CUCO_B_KN ? b[swizzle<CH_N>(k, c / kVec) + c % kVec]
                                                        : b[swizzle<CH_K>(c, k / kVec) + k % kVec]);
      }
    for (int mi = 0; mi < Cfg::MI; ++mi)
      for (int ni = 0; ni < Cfg::NI; ++ni)
        for (int e = 0; e < 4; ++e) acc.v[mi][ni][e] = fmaf(av[mi][e / 2], bv[ni][e % 2], acc.v[mi][ni][e]);
  }
}

// Misuse that would silently corrupt results on the GPU traps instead (with a message on the CPU).
template <class Cfg>
static __device__ __forceinline__ void check_call(const void* smem, const cuco_t* as, int64_t lds, int64_t k) {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const bool bad_threads = threads != (unsigned)Cfg::THREADS, bad_smem = (uintptr_t)smem % 16 != 0;
  const bool bad_as = as && ((uintptr_t)as % 16 != 0 || lds % kVec != 0 || lds < (k + 15) / 16 * 16);
  if (!(bad_threads || bad_smem || bad_as)) return;
#if defined(CUCO_COMM_CPU)
  char msg[256];
  snprintf(msg, sizeof msg,
           "cuco_gemm: %s (blockDim has %u threads, Cfg::THREADS = %d; smem %p; A in smem %p, lds %lld, K %lld): "
           "launch Cfg::THREADS threads, pass 16-byte aligned shared memory, lds %% %d == 0, lds >= K rounded up "
           "to 16",
           bad_threads ? "wrong block size" : bad_smem ? "unaligned shared memory" : "bad shared A operand", threads,
           Cfg::THREADS, smem, (const void*)as, (long long)lds, (long long)k, kVec);
  cuco_emu::trap(msg);
#else
  __trap();
#endif
}

// The multi-stage pipeline: STAGES - 1 k-tiles in flight while one is multiplied. One barrier
// per k-tile: after it, stage kt has landed for every thread and every warp has finished
// stage kt - 1, which the copies issued right after it overwrite.
template <class Cfg, int B_LAYOUT, bool A_SMEM, bool VEC>
static __device__ __forceinline__ void pipeline(cuco_gemm_acc<Cfg>& acc, cuco_t* sa, cuco_t* sb, const Operands& op) {
  const int ktiles = op.k > 0 ? (int)((op.k + Cfg::BK - 1) / Cfg::BK) : 0;
  const int tid = thread_id();
  const StageCopy<Cfg, B_LAYOUT> plan(op, tid);
#pragma unroll
  for (int s = 0; s < Cfg::STAGES - 1; ++s) {
    if (s < ktiles) load_stage<Cfg, B_LAYOUT, A_SMEM, VEC>(sa, sb, s, s, op, plan);
    cp_commit();  // empty groups keep the wait count uniform
  }
  int read = 0, write = Cfg::STAGES - 1;  // stage multiplied / stage refilled in this iteration
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_wait<Cfg::STAGES - 2>();
    __syncthreads();
    const int next = kt + Cfg::STAGES - 1;
    if (next < ktiles) load_stage<Cfg, B_LAYOUT, A_SMEM, VEC>(sa, sb, write, next, op, plan);
    cp_commit();
    const int kvalid = clamp_extent(op.k - (int64_t)kt * Cfg::BK, Cfg::BK);
    const cuco_t* a = A_SMEM ? op.a + kt * Cfg::BK : sa + read * Cfg::A_STAGE;
#if CUCO_GEMM_TENSOR_CORES
    stage_mma<Cfg, B_LAYOUT, A_SMEM>(acc, tid, a, (int)op.lda, sb + read * Cfg::B_STAGE, kvalid);
#else
    stage_fma<Cfg, B_LAYOUT, A_SMEM>(acc, tid, a, (int)op.lda, sb + read * Cfg::B_STAGE, kvalid);
#endif
    read = read + 1 == Cfg::STAGES ? 0 : read + 1;
    write = write + 1 == Cfg::STAGES ? 0 : write + 1;
  }
  cp_wait<0>();
  __syncthreads();  // the caller (or the next tile) may overwrite smem now
}

template <class Cfg, int B_LAYOUT, bool A_SMEM>
static __device__ void mainloop(cuco_gemm_acc<Cfg>& acc, void* smem, const cuco_t* A, int64_t lda, int64_t rows,
                                const cuco_t* B, int64_t ldb, int64_t cols, int64_t K) {
  static_assert(B_LAYOUT == CUCO_B_KN || B_LAYOUT == CUCO_B_NK, "B_LAYOUT is CUCO_B_KN or CUCO_B_NK");
  check_call<Cfg>(smem, A_SMEM ? A : nullptr, lda, K);
  cuco_t* sa = static_cast<cuco_t*>(smem);
  cuco_t* sb = sa + (A_SMEM ? 0 : Cfg::STAGES * Cfg::A_STAGE);
  const Operands op = {A, lda, clamp_extent(rows, Cfg::BM), B, ldb, clamp_extent(cols, Cfg::BN), K,
                       A_SMEM || vector_ok(A, lda), vector_ok(B, ldb)};
  if (op.a_vec && op.b_vec) pipeline<Cfg, B_LAYOUT, A_SMEM, true>(acc, sa, sb, op);
  else pipeline<Cfg, B_LAYOUT, A_SMEM, false>(acc, sa, sb, op);
}

}  // namespace cuco_gemm_detail
#endif  // CUCO_GEMM_DETAIL_H_
