// cuco GEMM tile: one CTA computes one output tile on tensor cores. Use it instead of writing a
// GEMM loop by hand; docs/gemm_tile.md has the full guide.
//
//   acc (+)= A[0:rows, 0:K] * B[0:K, 0:cols]        (one BM x BN tile, fp32 accumulators)
//
// CTA-collective: EVERY thread of the CTA calls every cuco_gemm_tile* function (they contain
// __syncthreads), with blockDim = Cfg::THREADS threads and the same arguments.
//
//   typedef cuco_gemm_cfg<128, 128, 32, 2, 4, 3> Cfg;  // BM, BN, BK, warps along M and N, stages
//   extern __shared__ __align__(16) unsigned char smem[];   // Cfg::SMEM_BYTES of dynamic smem
//   __global__ void __launch_bounds__(Cfg::THREADS) gemm(const cuco_t* A, const cuco_t* B, cuco_t* C,
//                                                        int M, int N, int K) {
//     const int m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;
//     cuco_gemm_acc<Cfg> acc;
//     acc.zero();
//     cuco_gemm_tile<Cfg>(acc, smem, A + (int64_t)m0 * K, K, M - m0,   // A tile: pointer, lda, rows
//                         B + n0, N, N - n0, K);                       // B tile: pointer, ldb, cols; K
//     cuco_gemm_store(acc, C + (int64_t)m0 * N + n0, N, M - m0, N - n0);  // bounds-checked
//   }
//   // host: gemm<<<dim3(ceil(N/BN), ceil(M/BM)), Cfg::THREADS, Cfg::SMEM_BYTES, stream>>>(...)
//   // SMEM_BYTES > 48 KiB needs cudaFuncSetAttribute(gemm, MaxDynamicSharedMemorySize, bytes).
//
// Operands: A row-major (row r of the tile at A + r*lda); B either row-major [K, N]
// (CUCO_B_KN, the default: B + k*ldb + n) or given transposed, B^T row-major [N, K]
// (CUCO_B_NK: B + n*ldb + k; attention's Q K^T). rows/cols may exceed BM/BN (clamped) or fall
// short of them (ragged edges: zero filled); any K >= 0. Pointers and leading dimensions need
// no alignment: 16-byte aligned operands with ld % (16 / sizeof(cuco_t)) == 0 take the fast path.
//
// Element type cuco_t (CUCO_DTYPE). bf16/fp16: mma.sync m16n8k16 tensor cores on sm_80+, fp32
// accumulation. CUCO_F32 builds: exact fp32 FMA on CUDA cores (no tensor cores, no TF32), same
// API, same accumulator layout, an order of magnitude slower: use bf16/fp16 for speed.
//
// Accumulator ownership: acc.v[mi][ni][e] of a thread is tile element (acc.row(mi, e),
// acc.col(ni, e)), the mma.sync m16n8 fp32 C-fragment layout; every tile element is owned by
// exactly one thread. The CPU emulator (CUCO_COMM_CPU) runs the same functions with the same
// barriers and ownership, computing in fp32 from the 16-bit inputs.
#ifndef CUCO_GEMM_H_
#define CUCO_GEMM_H_
#include <stdint.h>
#include "cuco_types.h"

// B operand layouts.
enum cuco_gemm_b_layout {
  CUCO_B_KN = 0,  // B is row-major [K, N]: element (k, n) at B[k * ldb + n]
  CUCO_B_NK = 1,  // B is given transposed, row-major [N, K]: element (k, n) at B[n * ldb + k]
};

namespace cuco_gemm_detail {
constexpr bool pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
}  // namespace cuco_gemm_detail

// Tile configuration: BM x BN output tile, BK deep pipeline steps, WARPS_M x WARPS_N warps
// (each owns a (BM / WARPS_M) x (BN / WARPS_N) sub-tile), STAGES shared-memory buffers in flight.
template <int BM_ = 128, int BN_ = 128, int BK_ = 32, int WARPS_M_ = 2, int WARPS_N_ = 4, int STAGES_ = 3>
struct cuco_gemm_cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
  static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, WARPS = WARPS_M_ * WARPS_N_;
  static constexpr int THREADS = 32 * WARPS;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // one warp's sub-tile
  static constexpr int MI = WM / 16, NI = WN / 8;             // m16n8 MMA tiles per warp
  static constexpr int VEC = 16 / (int)sizeof(cuco_t);        // elements per 16-byte chunk
  static constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN;  // elements per pipeline stage
  // Dynamic shared memory the tile needs: cuco_gemm_tile, and cuco_gemm_tile_smem_a (B only).
  static constexpr size_t SMEM_B_BYTES = (size_t)STAGES * B_STAGE * sizeof(cuco_t);
  static constexpr size_t SMEM_BYTES = (size_t)STAGES * A_STAGE * sizeof(cuco_t) + SMEM_B_BYTES;
  // The swizzled layout and the ldmatrix address arithmetic need these (see cuco_gemm_detail.h).
  static_assert(BM == WM * WARPS_M && BN == WN * WARPS_N, "BM / BN must be multiples of WARPS_M / WARPS_N");
  static_assert(cuco_gemm_detail::pow2(WM) && cuco_gemm_detail::pow2(WN) && WM >= 16 && WN >= 16,
                "a warp's sub-tile (BM / WARPS_M, BN / WARPS_N): powers of two >= 16");
  static_assert(cuco_gemm_detail::pow2(BK) && BK >= 16, "BK: a power of two >= 16");
  static_assert(cuco_gemm_detail::pow2(BN / VEC) || (BN / VEC) % 8 == 0, "BN: a power of two or a multiple of 64");
  static_assert(STAGES >= 2, "the pipeline needs at least 2 stages");
  static_assert(THREADS <= 1024, "at most 32 warps per CTA");
};
// Large problems (48 KiB smem, 256 threads) and small ones or many small tiles (24 KiB, 128).
typedef cuco_gemm_cfg<128, 128, 32, 2, 4, 3> cuco_gemm_large;
typedef cuco_gemm_cfg<64, 64, 32, 2, 2, 3> cuco_gemm_small;

namespace cuco_gemm_detail {
// The linear thread index in the CTA. On the GPU it is read with volatile moves so that a kernel
// looping over tiles recomputes the per-thread offsets per tile instead of hoisting all of them
// out of its loop and keeping them live (that costs ~80 registers and the second CTA per SM).
static __device__ __forceinline__ int thread_id() {
#if defined(CUCO_COMM_CPU)
  return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
#else
  unsigned x, y, z, nx, ny;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(x));
  asm volatile("mov.u32 %0, %%tid.y;" : "=r"(y));
  asm volatile("mov.u32 %0, %%tid.z;" : "=r"(z));
  asm volatile("mov.u32 %0, %%ntid.x;" : "=r"(nx));
  asm volatile("mov.u32 %0, %%ntid.y;" : "=r"(ny));
  return (int)(x + nx * (y + ny * z));
#endif
}

// The emulator's trace counts the FLOPs that went through the tile (the observed tensor-core
// share); one thread of the CTA reports.
template <class Cfg>
static __device__ __forceinline__ void trace_tile(int64_t rows, int64_t cols, int64_t K) {
  const int64_t r = rows < Cfg::BM ? rows : Cfg::BM, c = cols < Cfg::BN ? cols : Cfg::BN;
  if (thread_id() == 0 && r > 0 && c > 0 && K > 0) CUCO_EMU_TRACE(CUCO_EMU_TR_MMA, 2 * r * c * K, 0);
}
}  // namespace cuco_gemm_detail

// The calling thread's fp32 accumulators of one tile (registers on the GPU).
template <class Cfg>
struct cuco_gemm_acc {
  float v[Cfg::MI][Cfg::NI][4];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int mi = 0; mi < Cfg::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < Cfg::NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) v[mi][ni][e] = 0.f;
  }
  // Tile row / column of v[mi][ni][e]: warp w owns sub-tile (w / WARPS_N, w % WARPS_N); lane l
  // holds rows l/4 and l/4 + 8 (e = 0,1 and 2,3) and columns 2*(l%4) + (e & 1) of each m16n8.
  static __device__ __forceinline__ int row(int mi, int e) { return row_of(cuco_gemm_detail::thread_id(), mi, e); }
  static __device__ __forceinline__ int col(int ni, int e) { return col_of(cuco_gemm_detail::thread_id(), ni, e); }
  // The same for thread t of the CTA.
  static __device__ __forceinline__ int row_of(int t, int mi, int e) {
    return (t / 32) / Cfg::WARPS_N * Cfg::WM + mi * 16 + (t % 32) / 4 + (e >= 2 ? 8 : 0);
  }
  static __device__ __forceinline__ int col_of(int t, int ni, int e) {
    return (t / 32) % Cfg::WARPS_N * Cfg::WN + ni * 8 + 2 * (t % 4) + (e & 1);
  }
};

#include "cuco_gemm_detail.h"  // shared-memory layout, loaders and the per-stage MMA step

// acc += A[0:rows, 0:K] * B[0:K, 0:cols]; A and B in global memory, staged through `smem`
// (Cfg::SMEM_BYTES, 16-byte aligned). CTA-collective. smem is free again when it returns.
template <class Cfg, int B_LAYOUT = CUCO_B_KN>
static __device__ void cuco_gemm_tile(cuco_gemm_acc<Cfg>& acc, void* smem, const cuco_t* A, int64_t lda, int64_t rows,
                                      const cuco_t* B, int64_t ldb, int64_t cols, int64_t K) {
  cuco_gemm_detail::trace_tile<Cfg>(rows, cols, K);
  cuco_gemm_detail::mainloop<Cfg, B_LAYOUT, false>(acc, smem, A, lda, rows, B, ldb, cols, K);
  CUCO_EMU_TILE_RESULT(&acc.v[0][0][0], Cfg::MI * Cfg::NI * 4);
}

// acc += As[0:BM, 0:K] * B[0:K, 0:cols] with A already in shared memory (attention's P V: write P
// with cuco_gemm_for_each, __syncthreads, then call this). As: row-major cuco_t, row r at
// As + r * lds, BM rows readable, 16-byte aligned, lds % (16 / sizeof(cuco_t)) == 0 and
// lds >= K rounded up to 16 (columns past K are read but ignored; that plus 8 avoids bank
// conflicts). `smem` (Cfg::SMEM_B_BYTES) stages B and must not overlap As. CTA-collective.
template <class Cfg, int B_LAYOUT = CUCO_B_KN>
static __device__ void cuco_gemm_tile_smem_a(cuco_gemm_acc<Cfg>& acc, void* smem, const cuco_t* As, int lds,
                                             const cuco_t* B, int64_t ldb, int64_t cols, int K) {
  cuco_gemm_detail::trace_tile<Cfg>(Cfg::BM, cols, K);
  cuco_gemm_detail::mainloop<Cfg, B_LAYOUT, true>(acc, smem, As, lds, Cfg::BM, B, ldb, cols, K);
  CUCO_EMU_TILE_RESULT(&acc.v[0][0][0], Cfg::MI * Cfg::NI * 4);
}

// ---------------------------------------------------------------- epilogues (per thread, no sync)

// f(row, col, value) for every element of the tile this thread owns with row < rows and
// col < cols (tile coordinates). Any callable: a lambda [&](int r, int c, float v) { ... }.
template <class Cfg, class F>
static __device__ __forceinline__ void cuco_gemm_for_each(const cuco_gemm_acc<Cfg>& acc, int64_t rows, int64_t cols,
                                                          F&& f) {
  const int t = cuco_gemm_detail::thread_id();
#pragma unroll
  for (int mi = 0; mi < Cfg::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < Cfg::NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = acc.row_of(t, mi, e), c = acc.col_of(t, ni, e);
        if (r < rows && c < cols) f(r, c, acc.v[mi][ni][e]);
      }
}

enum cuco_gemm_activation { CUCO_ACT_NONE = 0, CUCO_ACT_RELU = 1, CUCO_ACT_GELU_TANH = 2, CUCO_ACT_SILU = 3 };

// What the store helpers do to each accumulator `acc` at tile column `col`:
//   v = act(scale * acc + bias[col]);  C = accumulate ? C + v : v
// bias (nullptr: none) points at the tile's first column, like C.
struct cuco_gemm_epilogue {
  float scale = 1.f;
  const cuco_t* bias = nullptr;
  int act = CUCO_ACT_NONE;
  bool accumulate = false;
};

static __device__ __forceinline__ float cuco_gemm_activate(int act, float x) {
  switch (act) {
    case CUCO_ACT_RELU: return x > 0.f ? x : 0.f;
    case CUCO_ACT_GELU_TANH: return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    case CUCO_ACT_SILU: return x / (1.f + expf(-x));
    default: return x;
  }
}
static __device__ __forceinline__ float cuco_gemm_apply(const cuco_gemm_epilogue& ep, int col, float acc) {
  float v = ep.scale * acc;
  if (ep.bias) v += cuco_to_float(ep.bias[col]);
  return cuco_gemm_activate(ep.act, v);
}

// C[r * ldc + c] (+)= epilogue(acc) for the tile's rows < rows, cols < cols. C: the tile's
// first element, any alignment (a thread's column pairs are stored as one access when aligned).
template <class Cfg, class T>
static __device__ void cuco_gemm_store_as(const cuco_gemm_acc<Cfg>& acc, T* C, int64_t ldc, int64_t rows,
                                          int64_t cols, const cuco_gemm_epilogue& ep) {
  struct __align__(2 * sizeof(T)) Pair { T x, y; };
  const int t = cuco_gemm_detail::thread_id();
#pragma unroll
  for (int mi = 0; mi < Cfg::MI; ++mi)
#pragma unroll
    for (int h = 0; h < 4; h += 2) {  // e = h, h + 1: columns c, c + 1 of row r
      const int r = acc.row_of(t, mi, h);
      if (r >= rows) continue;
      T* row = C + (int64_t)r * ldc;
      const bool pairs = (uintptr_t)row % sizeof(Pair) == 0;  // c is even
#pragma unroll
      for (int ni = 0; ni < Cfg::NI; ++ni) {
        const int c = acc.col_of(t, ni, h);
        if (c >= cols) continue;
        const float v0 = cuco_gemm_apply(ep, c, acc.v[mi][ni][h]);
        if (c + 1 < cols && pairs) {
          const float v1 = cuco_gemm_apply(ep, c + 1, acc.v[mi][ni][h + 1]);
          Pair out = {cuco_from_float<T>(v0), cuco_from_float<T>(v1)};
          if (ep.accumulate) {
            const Pair old = *reinterpret_cast<const Pair*>(row + c);
            out = Pair{cuco_from_float<T>(cuco_to_float(old.x) + v0), cuco_from_float<T>(cuco_to_float(old.y) + v1)};
          }
          *reinterpret_cast<Pair*>(row + c) = out;
          continue;
        }
        row[c] = cuco_from_float<T>(ep.accumulate ? cuco_to_float(row[c]) + v0 : v0);
        if (c + 1 < cols) {
          const float v1 = cuco_gemm_apply(ep, c + 1, acc.v[mi][ni][h + 1]);
          row[c + 1] = cuco_from_float<T>(ep.accumulate ? cuco_to_float(row[c + 1]) + v1 : v1);
        }
      }
    }
}
// The element-type output (cuco_t) and the fp32 output.
template <class Cfg>
static __device__ __forceinline__ void cuco_gemm_store(const cuco_gemm_acc<Cfg>& acc, cuco_t* C, int64_t ldc,
                                                       int64_t rows, int64_t cols,
                                                       const cuco_gemm_epilogue& ep = cuco_gemm_epilogue()) {
  cuco_gemm_store_as<Cfg, cuco_t>(acc, C, ldc, rows, cols, ep);
}
template <class Cfg>
static __device__ __forceinline__ void cuco_gemm_store_f32(const cuco_gemm_acc<Cfg>& acc, float* C, int64_t ldc,
                                                           int64_t rows, int64_t cols,
                                                           const cuco_gemm_epilogue& ep = cuco_gemm_epilogue()) {
  cuco_gemm_store_as<Cfg, float>(acc, C, ldc, rows, cols, ep);
}

#endif  // CUCO_GEMM_H_
