"""CUDA text of the all-gather + GEMM template family: the frozen problem, the constants and
the GEMM that every design point shares. Communication pieces live in allgather_gemm_cuda_comm,
host entries in allgather_gemm_cuda_host.

Rank r holds A_r [M/n, K] (ctx.in[0]) and B_r [K, N/n] (ctx.in[1]); it computes
C_r = allgather(A) @ B_r [M, N/n] (ctx.out[0]). Peers' A shards land in every rank's symmetric
buffer (the gathered A, [M, K]); a rank reads its own rows straight from A_r. Output tiles are
shard-aligned, so a tile's rows come from exactly one rank.
"""

from design_space.templates.shared_cuda import SIDE_STREAM  # noqa: F401  (composed by the renderer)

HEADER = r"""// cuco candidate -- pattern: allgather_gemm
// design point: @POINT@
// Rank r: C_r[M, N/n] = allgather(A)[M, K] @ B_r[K, N/n]; dims = {M, N, K}.
#include "cuco_comm.h"

struct Problem {
  int64_t M, N, K, Nl, shard;
};

// Global dimensions -> what one rank sees. Frozen: the harness lays buffers out this way.
static __host__ __device__ __forceinline__ Problem problem(const cuco_ctx& c) {
  Problem p;
  p.M = c.dims[0];
  p.N = c.dims[1];
  p.K = c.dims[2];
  p.Nl = p.N / c.world;
  p.shard = p.M / c.world;
  return p;
}
"""

CONSTANTS = r"""
// EVOLVE-BLOCK-START
#define CHUNK_BYTES @CHUNK_BYTES@
#define COMM_CTAS @COMM_CTAS@
#define THREADS 256
#define BM 32
#define BN 32
#define BK 32
#define MAX_CHUNKS @MAX_CHUNKS@  // per shard; MAX_CHUNKS * CUCO_MAX_RANKS fits the signal slots

// Rows of A per transfer chunk: CHUNK_BYTES worth, at least one row, at most MAX_CHUNKS chunks.
static __host__ __device__ __forceinline__ int64_t chunk_rows(const Problem& p) {
  int64_t rows = CHUNK_BYTES / (p.K * (int64_t)sizeof(cuco_t));
  if (rows < 1) rows = 1;
  const int64_t at_least = (p.shard + MAX_CHUNKS - 1) / MAX_CHUNKS;
  return rows > at_least ? rows : at_least;
}
static __host__ __device__ __forceinline__ int64_t num_chunks(const Problem& p) {
  const int64_t rows = chunk_rows(p);
  return (p.shard + rows - 1) / rows;
}

// Chunk `chunk` of this rank's shard: its bytes, where they come from, and their byte offset in
// every rank's symmetric buffer (the gathered A's layout).
struct Span {
  size_t off, bytes;
  const char* src;
};
static __host__ __device__ __forceinline__ Span chunk_span(const cuco_ctx& c, const Problem& p, int64_t chunk) {
  const int64_t rows = chunk_rows(p), r0 = chunk * rows, r1 = r0 + rows < p.shard ? r0 + rows : p.shard;
  const size_t row_bytes = (size_t)p.K * sizeof(cuco_t);
  return Span{(size_t)(c.rank * p.shard + r0) * row_bytes, (size_t)(r1 - r0) * row_bytes,
              static_cast<const char*>(c.in[0]) + (size_t)r0 * row_bytes};
}
"""

# Row `row` of the gathered A when peers' rows sit in the gathered layout.
A_ROW_GATHERED = r"""
// Row `row` of the gathered A: own rows from the input, peers' rows from the symmetric buffer.
static __device__ __forceinline__ const cuco_t* a_row(const cuco_ctx& c, const Problem& p, int64_t row) {
  const int64_t lo = (int64_t)c.rank * p.shard;
  if (row >= lo && row < lo + p.shard) return static_cast<const cuco_t*>(c.in[0]) + (row - lo) * p.K;
  return static_cast<const cuco_t*>(c.symm) + row * p.K;
}
"""

# host_nccl + stream_overlap: one library all-gather per chunk lays chunk ch of every rank out
# contiguously ([chunk][rank][rows]), so a row's home depends on its chunk.
A_ROW_CHUNKED = r"""
// Row `row` of the gathered A: own rows from the input; peers' rows where the per-chunk
// all-gathers put them (chunk ch of every rank side by side, chunk after chunk).
static __device__ __forceinline__ const cuco_t* a_row(const cuco_ctx& c, const Problem& p, int64_t row) {
  const int src = (int)(row / p.shard);
  const int64_t local = row % p.shard;
  if (src == c.rank) return static_cast<const cuco_t*>(c.in[0]) + local * p.K;
  const int64_t rows = chunk_rows(p), ch = local / rows;
  const int64_t in_chunk = p.shard - ch * rows < rows ? p.shard - ch * rows : rows;
  return static_cast<const cuco_t*>(c.symm) + (ch * rows * c.world + src * in_chunk + local % rows) * p.K;
}
"""

GEMM = r"""
// One output tile: rows [r0, r1) of the gathered A (r1 - r0 <= BM), columns [col0, col0 + BN).
static __device__ void gemm_tile(const cuco_ctx& c, const Problem& p, int64_t r0, int64_t r1, int64_t col0) {
  __shared__ float As[BM][BK + 1];
  __shared__ float Bs[BK][BN + 1];
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]);
  cuco_t* C = static_cast<cuco_t*>(c.out[0]);
  const int tid = threadIdx.x, tx = tid % BN, ty = tid / BN;
  float acc[BM / 8] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t k0 = 0; k0 < p.K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += THREADS) {
      const int r = i / BK, k = i % BK;
      const int64_t gr = r0 + r, gk = k0 + k;
      As[r][k] = (gr < r1 && gk < p.K) ? cuco_to_float(a_row(c, p, gr)[gk]) : 0.f;
    }
    for (int i = tid; i < BK * BN; i += THREADS) {
      const int k = i / BN, n = i % BN;
      const int64_t gk = k0 + k, gn = col0 + n;
      Bs[k][n] = (gk < p.K && gn < p.Nl) ? cuco_to_float(B[gk * p.Nl + gn]) : 0.f;
    }
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][tx];
      for (int j = 0; j < BM / 8; ++j) acc[j] += As[ty + 8 * j][k] * b;
    }
    __syncthreads();
  }
  for (int j = 0; j < BM / 8; ++j) {
    const int64_t gr = r0 + ty + 8 * j, gn = col0 + tx;
    if (gr < r1 && gn < p.Nl) C[gr * p.Nl + gn] = cuco_from_float<cuco_t>(acc[j]);
  }
}

// Tiles over ring positions [i0, i1) (position i is rank (rank + i) % world's shard), shard rows
// [lo, hi), all columns; tile t of `count` is handled by worker `t % workers`.
struct TileRange {
  int i0, i1;
  int64_t lo, hi;
};
static __host__ __device__ __forceinline__ int64_t tile_count(const Problem& p, TileRange tr) {
  const int64_t rt = (tr.hi - tr.lo + BM - 1) / BM, ct = (p.Nl + BN - 1) / BN;
  return (int64_t)(tr.i1 - tr.i0) * rt * ct;
}
static __device__ void run_tiles(const cuco_ctx& c, const Problem& p, TileRange tr, bool wait, int worker, int workers) {
  const int64_t rt = (tr.hi - tr.lo + BM - 1) / BM, ct = (p.Nl + BN - 1) / BN, total = tile_count(p, tr);
  for (int64_t t = worker; t < total; t += workers) {
    const int src = (c.rank + tr.i0 + (int)(t / (rt * ct))) % c.world;
    const int64_t rem = t % (rt * ct), lo = tr.lo + (rem / ct) * BM;
    const int64_t hi = lo + BM < tr.hi ? lo + BM : tr.hi;
    if (wait && src != c.rank) {
      if (threadIdx.x == 0) wait_rows(c, p, src, lo, hi);
      __syncthreads();
    }
    gemm_tile(c, p, src * p.shard + lo, src * p.shard + hi, (rem % ct) * BN);
  }
}
"""

KERNELS_SPLIT = r"""
__global__ void __launch_bounds__(THREADS) gemm_kernel(cuco_ctx c, TileRange tr, int wait) {
  run_tiles(c, problem(c), tr, wait != 0, blockIdx.x, gridDim.x);
}

static int gemm_grid(const cuco_ctx& c, const Problem& p, TileRange tr) {
  const int64_t tiles = tile_count(p, tr), cap = 8 * (int64_t)c.num_sms;
  return (int)(tiles < cap ? (tiles > 0 ? tiles : 1) : cap);
}
static void launch_gemm(const cuco_ctx& c, const Problem& p, TileRange tr, int wait, cudaStream_t s) {
  if (tile_count(p, tr) > 0) gemm_kernel<<<gemm_grid(c, p, tr), THREADS, 0, s>>>(c, tr, wait);
}
"""

KERNEL_FUSED = r"""
// One persistent kernel: CTAs [0, COMM_CTAS) push, the rest compute tiles in ring order.
__global__ void __launch_bounds__(THREADS) fused_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  if ((int)blockIdx.x < COMM_CTAS) {
    push_chunks(c, p, 0, num_chunks(p), blockIdx.x, COMM_CTAS);
    return;
  }
  const TileRange all = {0, c.world, 0, p.shard};
  run_tiles(c, p, all, true, blockIdx.x - COMM_CTAS, gridDim.x - COMM_CTAS);
}
"""

