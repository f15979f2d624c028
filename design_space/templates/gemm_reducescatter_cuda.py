"""CUDA text of the GEMM + reduce-scatter template family: problem, layout, GEMM and the owner's
final reduction. Communication pieces are in ``gemm_reducescatter_cuda_comm``, host entries in
``gemm_reducescatter_cuda_host``; ``gemm_reducescatter.render`` composes them.

Rank r holds A_r [M, K/n] (ctx.in[0]) and B_r [K/n, N] (ctx.in[1]); its partial product is
P_r = A_r @ B_r [M, N] and its result C_r [M/n, N] (ctx.out[0]) is the sum over ranks j of row
block r of P_j. The symmetric buffer holds STAGE [M][N] (this rank's partial, row block d =
the rows rank d owns) and RECV [world][M/n][N] (the partials peers sent for this rank's rows).
A chunk is a band of rows of one row block, all N columns: contiguous in STAGE and RECV.
"""

HEADER = r"""// cuco candidate -- pattern: gemm_reducescatter
// design point: @POINT@
// Rank r: P_r[M, N] = A_r[M, K/n] @ B_r[K/n, N]; C_r[M/n, N] = sum_j P_j[r*M/n : (r+1)*M/n, :].
// dims = {M, N, K}; in = {A_r, B_r}; out = {C_r}.
#include "cuco_comm.h"

struct Problem {
  int64_t M, N, K, Kl, shard;
  int rank, world;
};

// Global dimensions -> what one rank sees. Frozen: the harness lays buffers out this way.
static __host__ __device__ __forceinline__ Problem problem(const cuco_ctx& c) {
  Problem p;
  p.M = c.dims[0];
  p.N = c.dims[1];
  p.K = c.dims[2];
  p.Kl = p.K / c.world;
  p.shard = p.M / c.world;
  p.rank = c.rank;
  p.world = c.world;
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
// Arrival slots (source, chunk) must fit the signal pad and the GIN signals:
// MAX_CHUNKS * CUCO_MAX_RANKS <= CUCO_GIN_SIGNALS.
#define MAX_CHUNKS 128
#define READY_BASE 16384  // local "band computed" slots (row block, band) of fused kernels

// Rows per chunk: CHUNK_BYTES worth, at least one row, at most MAX_CHUNKS chunks per row block.
static __host__ __device__ __forceinline__ int64_t chunk_rows(const Problem& p) {
  int64_t rows = CHUNK_BYTES / (p.N * (int64_t)sizeof(cuco_t));
  if (rows < 1) rows = 1;
  const int64_t at_least = (p.shard + MAX_CHUNKS - 1) / MAX_CHUNKS;
  return rows > at_least ? rows : at_least;
}
static __host__ __device__ __forceinline__ int64_t num_chunks(const Problem& p) {
  const int64_t rows = chunk_rows(p);
  return (p.shard + rows - 1) / rows;
}
static __host__ __device__ __forceinline__ int64_t chunk_lo(const Problem& p, int64_t ch) { return ch * chunk_rows(p); }
static __host__ __device__ __forceinline__ int64_t chunk_hi(const Problem& p, int64_t ch) {
  const int64_t hi = (ch + 1) * chunk_rows(p);
  return hi < p.shard ? hi : p.shard;
}
// GEMM tiles are BM-row bands of a row block by BN columns; a chunk is ready once every band
// overlapping its rows is. Bands are independent of chunks, so small chunks keep full tiles.
static __host__ __device__ __forceinline__ int64_t num_bands(const Problem& p) { return (p.shard + BM - 1) / BM; }
static __host__ __device__ __forceinline__ int64_t col_tiles(const Problem& p) { return (p.N + BN - 1) / BN; }
static __host__ __device__ __forceinline__ int64_t band_of(int64_t row) { return row / BM; }
// Pipeline step from chunk ch (bands below b0 done): compute bands [b0, *b1), the fewest that
// complete chunk ch; chunks [ch, *end) are then whole.
static __host__ __device__ __forceinline__ void next_step(const Problem& p, int64_t ch, int64_t b0, int64_t* b1,
                                                          int64_t* end) {
  *b1 = (chunk_hi(p, ch) + BM - 1) / BM;
  if (*b1 < b0 + 1) *b1 = b0 + 1;
  const int64_t rows = *b1 * BM < p.shard ? *b1 * BM : p.shard;
  int64_t e = ch;
  while (e < num_chunks(p) && chunk_hi(p, e) <= rows) ++e;
  *end = e;
}
"""

LAYOUT_BLOCK_MAJOR = r"""
// STAGE is row-major P_r: row block d (the rows rank d owns) is contiguous.
static __host__ __device__ __forceinline__ int64_t stage_off(const Problem& p, int d, int64_t row) {
  return ((int64_t)d * p.shard + row) * p.N;
}
"""

LAYOUT_CHUNK_MAJOR = r"""
// STAGE is chunk-major: chunk ch of every row block side by side ([world][rows][N] per chunk), so
// one reduce-scatter per chunk reads a contiguous block per rank. Every chunk but the last is full.
static __host__ __device__ __forceinline__ int64_t stage_off(const Problem& p, int d, int64_t row) {
  const int64_t cr = chunk_rows(p), ch = row / cr, rows = chunk_hi(p, ch) - chunk_lo(p, ch);
  return (ch * cr * p.world + (int64_t)d * rows + (row - ch * cr)) * p.N;
}
"""

CHUNKS = r"""
// RECV[src]: row `row` of this rank's block as rank `src` computed it.
static __host__ __device__ __forceinline__ int64_t recv_off(const Problem& p, int src, int64_t row) {
  return p.M * p.N + ((int64_t)src * p.shard + row) * p.N;
}
// Chunk ch of row block d: bytes, byte offset in STAGE, byte offset of its slot in the owner's RECV.
static __host__ __device__ __forceinline__ size_t chunk_size(const Problem& p, int64_t ch) {
  return (size_t)((chunk_hi(p, ch) - chunk_lo(p, ch)) * p.N) * sizeof(cuco_t);
}
static __host__ __device__ __forceinline__ size_t chunk_src(const Problem& p, int d, int64_t ch) {
  return (size_t)stage_off(p, d, chunk_lo(p, ch)) * sizeof(cuco_t);
}
static __host__ __device__ __forceinline__ size_t chunk_dst(const Problem& p, int64_t ch) {
  return (size_t)recv_off(p, p.rank, chunk_lo(p, ch)) * sizeof(cuco_t);
}
"""

GEMM_TILE = r"""
// Tiles over ring positions [i0, i1) (position i is row block (rank + i) % world, so [1, world]
// is every block with this rank's own last) and bands [b0, b1) of each block, all columns.
struct TileRange {
  int i0, i1;
  int64_t b0, b1;
};
struct Tile {
  int d;               // row block (its owner rank)
  int64_t band, lo, hi;  // rows [lo, hi) within the block
  int64_t col0;
};
static __host__ __device__ __forceinline__ int64_t tile_count(const Problem& p, TileRange tr) {
  return (int64_t)(tr.i1 - tr.i0) * (tr.b1 - tr.b0) * col_tiles(p);
}
// Columns vary fastest, so a band's tiles finish together.
static __device__ Tile tile_at(const Problem& p, TileRange tr, int64_t t) {
  const int64_t ct = col_tiles(p), per_block = (tr.b1 - tr.b0) * ct, rem = t % per_block;
  Tile x;
  x.d = (p.rank + tr.i0 + (int)(t / per_block)) % p.world;
  x.band = tr.b0 + rem / ct;
  x.lo = x.band * BM;
  x.hi = x.lo + BM < p.shard ? x.lo + BM : p.shard;
  x.col0 = (rem % ct) * BN;
  return x;
}

// acc[j] = P_r[row x.lo + ty + 8j of block x.d][x.col0 + tx] in fp32 (tx = tid % BN, ty = tid / BN).
static __device__ void gemm_tile(const cuco_ctx& c, const Problem& p, const Tile& x, float* acc) {
  __shared__ float As[BM][BK + 1];
  __shared__ float Bs[BK][BN + 1];
  const cuco_t* A = static_cast<const cuco_t*>(c.in[0]);
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]);
  const int tid = threadIdx.x, tx = tid % BN, ty = tid / BN;
  const int64_t row0 = (int64_t)x.d * p.shard + x.lo, rows = x.hi - x.lo;
  for (int j = 0; j < BM / 8; ++j) acc[j] = 0.f;
  for (int64_t k0 = 0; k0 < p.Kl; k0 += BK) {
    for (int i = tid; i < BM * BK; i += THREADS) {
      const int r = i / BK, k = i % BK;
      const int64_t gk = k0 + k;
      As[r][k] = (r < rows && gk < p.Kl) ? cuco_to_float(A[(row0 + r) * p.Kl + gk]) : 0.f;
    }
    for (int i = tid; i < BK * BN; i += THREADS) {
      const int k = i / BN, n = i % BN;
      const int64_t gk = k0 + k, gn = x.col0 + n;
      Bs[k][n] = (gk < p.Kl && gn < p.N) ? cuco_to_float(B[gk * p.N + gn]) : 0.f;
    }
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][tx];
      for (int j = 0; j < BM / 8; ++j) acc[j] += As[ty + 8 * j][k] * b;
    }
    __syncthreads();
  }
}

static __device__ void store_stage(const cuco_ctx& c, const Problem& p, const Tile& x, const float* acc) {
  cuco_t* S = static_cast<cuco_t*>(c.symm);
  const int tx = threadIdx.x % BN, ty = threadIdx.x / BN;
  for (int j = 0; j < BM / 8; ++j) {
    const int64_t r = x.lo + ty + 8 * j, n = x.col0 + tx;
    if (r < x.hi && n < p.N) S[stage_off(p, x.d, r) + n] = cuco_from_float<cuco_t>(acc[j]);
  }
}
"""

RUN_GEMM = r"""
// Partial tiles of `tr` into STAGE; tile t goes to worker t % workers.
static __device__ void run_gemm(const cuco_ctx& c, const Problem& p, TileRange tr, int worker, int workers) {
  const int64_t total = tile_count(p, tr);
  for (int64_t t = worker; t < total; t += workers) {
    const Tile x = tile_at(p, tr, t);
    float acc[BM / 8];
    gemm_tile(c, p, x, acc);
    store_stage(c, p, x, acc);
    tile_done(c, p, x);
  }
}
"""

FINISH = r"""
// Owner's reduction over its bands [b0, b1): its own partial (computed here in fp32, or read
// back from STAGE) plus every peer's RECV slot, rounded once into C. `wait`: wait for arrivals.
static __device__ void finish_tiles(const cuco_ctx& c, const Problem& p, int64_t b0, int64_t b1, bool from_stage,
                                    bool wait, int worker, int workers) {
  const TileRange own = {0, 1, b0, b1};
  const cuco_t* S = static_cast<const cuco_t*>(c.symm);
  cuco_t* C = static_cast<cuco_t*>(c.out[0]);
  const int tx = threadIdx.x % BN, ty = threadIdx.x / BN;
  const int64_t total = tile_count(p, own);
  for (int64_t t = worker; t < total; t += workers) {
    const Tile x = tile_at(p, own, t);
    float acc[BM / 8];
    if (from_stage) {
      for (int j = 0; j < BM / 8; ++j) {
        const int64_t r = x.lo + ty + 8 * j, n = x.col0 + tx;
        acc[j] = (r < x.hi && n < p.N) ? cuco_to_float(S[stage_off(p, p.rank, r) + n]) : 0.f;
      }
    } else {
      gemm_tile(c, p, x, acc);  // the own partial overlaps the peers' transfers
    }
    if (wait) {
      if (threadIdx.x == 0)
        for (int i = 1; i < p.world; ++i) wait_rows(c, p, (p.rank + i) % p.world, x.lo, x.hi);
      __syncthreads();
    }
    for (int j = 0; j < BM / 8; ++j) {
      const int64_t r = x.lo + ty + 8 * j, n = x.col0 + tx;
      if (r >= x.hi || n >= p.N) continue;
      float v = acc[j];
      for (int i = 1; i < p.world; ++i) v += cuco_to_float(S[recv_off(p, (p.rank + i) % p.world, r) + n]);
      C[r * p.N + n] = cuco_from_float<cuco_t>(v);
    }
  }
}
"""

SIDE_STREAM = r"""
// Side stream for communication, created once per process; it joins `stream` before return.
static cudaStream_t g_side;
static cudaEvent_t g_fork, g_ready, g_join;
static int ensure_side_stream() {
  if (g_side == nullptr) {
    cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&g_fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&g_ready, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&g_join, cudaEventDisableTiming);
  }
  return (int)cudaGetLastError();
}
"""

# Launch helpers of the split placements. Kernels that wait on peers are capped below the SMs
# left after COMM_CTAS, so the communication kernel always finds room beside them.
LAUNCH_GEMM = r"""
__global__ void __launch_bounds__(THREADS) gemm_kernel(cuco_ctx c, TileRange tr) {
  run_gemm(c, problem(c), tr, blockIdx.x, gridDim.x);
}
static int grid_for(int64_t tiles, int64_t cap) {
  if (cap < 1) cap = 1;
  return (int)(tiles < cap ? (tiles > 0 ? tiles : 1) : cap);
}
static void launch_gemm(const cuco_ctx& c, const Problem& p, TileRange tr, cudaStream_t s) {
  const int64_t tiles = tile_count(p, tr);
  if (tiles > 0) gemm_kernel<<<grid_for(tiles, 8 * (int64_t)c.num_sms), THREADS, 0, s>>>(c, tr);
}
"""

LAUNCH_FINISH = r"""
__global__ void __launch_bounds__(THREADS) finish_kernel(cuco_ctx c, int64_t b0, int64_t b1, int from_stage,
                                                         int wait) {
  finish_tiles(c, problem(c), b0, b1, from_stage != 0, wait != 0, blockIdx.x, gridDim.x);
}
static void launch_finish(const cuco_ctx& c, const Problem& p, int64_t b0, int64_t b1, int from_stage, int wait,
                          cudaStream_t s) {
  const int64_t tiles = tile_count(p, TileRange{0, 1, b0, b1});
  const int64_t cap = wait ? (int64_t)c.num_sms - COMM_CTAS : 8 * (int64_t)c.num_sms;
  if (tiles > 0) finish_kernel<<<grid_for(tiles, cap), THREADS, 0, s>>>(c, b0, b1, from_stage, wait);
}
"""
