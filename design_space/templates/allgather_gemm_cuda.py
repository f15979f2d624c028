"""CUDA text of the all-gather + GEMM template family, in pieces the renderer composes.

Rank r holds A_r [M/n, K] (ctx.in[0]) and B_r [K, N/n] (ctx.in[1]); it computes
C_r = allgather(A) @ B_r [M, N/n] (ctx.out[0]). Peers put their A shards into every rank's
symmetric buffer (the gathered A, [M, K]); a rank reads its own rows straight from A_r.
Output tiles are shard-aligned, so a tile's rows come from exactly one rank.
"""

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
#define MAX_CHUNKS 1024  // per shard; MAX_CHUNKS * CUCO_MAX_RANKS <= CUCO_USER_SIGNALS

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

// Row `row` of the gathered A: own rows from the input, peers' rows from the symmetric buffer.
static __device__ __forceinline__ const cuco_t* a_row(const cuco_ctx& c, const Problem& p, int64_t row) {
  const int64_t lo = (int64_t)c.rank * p.shard;
  if (row >= lo && row < lo + p.shard) return static_cast<const cuco_t*>(c.in[0]) + (row - lo) * p.K;
  return static_cast<const cuco_t*>(c.symm) + row * p.K;
}
"""

SIGNAL_PER_TILE = r"""
// per_tile_signal: slot (source rank, chunk) counts one arrival per call.
static __device__ __forceinline__ void signal_chunk(const cuco_ctx& c, int peer, int64_t chunk) {
  cuco_signal_add(c, peer, (int)(c.rank * MAX_CHUNKS + chunk), 1);
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t lo, int64_t hi) {
  const int64_t rows = chunk_rows(p);
  for (int64_t ch = lo / rows; ch <= (hi - 1) / rows; ++ch) cuco_wait(c, (int)(src * MAX_CHUNKS + ch), c.epoch);
}
"""

SIGNAL_PER_PEER = r"""
// per_peer_signal: slot (source rank) counts one arrival per chunk, num_chunks per call.
static __device__ __forceinline__ void signal_chunk(const cuco_ctx& c, int peer, int64_t chunk) {
  cuco_signal_add(c, peer, c.rank, 1);
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t lo, int64_t hi) {
  cuco_wait(c, src, c.epoch * (uint64_t)num_chunks(p));
}
"""

SIGNAL_GLOBAL = r"""
// global_barrier: no per-chunk signals; a cross-rank barrier follows the whole transfer.
static __device__ __forceinline__ void signal_chunk(const cuco_ctx&, int, int64_t) {}
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, int64_t, int64_t) {}

__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) { cuco_barrier(c, 0); }
"""

PUSH_COMMON = r"""
// Work item -> (peer, chunk): peer-major, nearest consumer first (rank r-1 reads shard r first).
static __device__ __forceinline__ void push_item(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t nch,
                                                 int64_t item, int* peer, int64_t* chunk, size_t* off,
                                                 const char** src, size_t* bytes) {
  const int d = 1 + (int)(item / nch);
  *peer = (c.rank - d + c.world) % c.world;
  *chunk = ch0 + item % nch;
  const int64_t rows = chunk_rows(p), r0 = *chunk * rows;
  const int64_t r1 = r0 + rows < p.shard ? r0 + rows : p.shard;
  const size_t row_bytes = (size_t)p.K * sizeof(cuco_t);
  *off = (size_t)(c.rank * p.shard + r0) * row_bytes;
  *src = static_cast<const char*>(c.in[0]) + (size_t)r0 * row_bytes;
  *bytes = (size_t)(r1 - r0) * row_bytes;
}
"""

PUSH_CTA = r"""
// issuer cta: a whole CTA moves one chunk to one peer, then one thread signals.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const int64_t nch = ch1 - ch0, items = (int64_t)(c.world - 1) * nch;
  for (int64_t item = cta; item < items; item += ncta) {
    int peer; int64_t chunk; size_t off, bytes; const char* src;
    push_item(c, p, ch0, nch, item, &peer, &chunk, &off, &src, &bytes);
    cuco_put_cta(c, peer, off, src, bytes);
    __syncthreads();
    if (threadIdx.x == 0) signal_chunk(c, peer, chunk);
  }
}
"""

PUSH_WARP = r"""
// issuer warp: each warp moves whole chunks on its own; lane 0 signals.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const int64_t nch = ch1 - ch0, items = (int64_t)(c.world - 1) * nch;
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t item = (int64_t)cta * warps + threadIdx.x / 32; item < items; item += (int64_t)ncta * warps) {
    int peer; int64_t chunk; size_t off, bytes; const char* src;
    push_item(c, p, ch0, nch, item, &peer, &chunk, &off, &src, &bytes);
    cuco_put_warp(c, peer, off, src, bytes);
    __syncwarp();
    if (lane == 0) signal_chunk(c, peer, chunk);
  }
}
"""

PUSH_THREAD = r"""
// issuer thread: each thread moves whole chunks by itself and signals them.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const int64_t nch = ch1 - ch0, items = (int64_t)(c.world - 1) * nch;
  for (int64_t item = (int64_t)cta * blockDim.x + threadIdx.x; item < items; item += (int64_t)ncta * blockDim.x) {
    int peer; int64_t chunk; size_t off, bytes; const char* src;
    push_item(c, p, ch0, nch, item, &peer, &chunk, &off, &src, &bytes);
    cuco_put_thread(c, peer, off, src, bytes);
    signal_chunk(c, peer, chunk);
  }
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
__global__ void __launch_bounds__(THREADS) comm_kernel(cuco_ctx c, int64_t ch0, int64_t ch1) {
  push_chunks(c, problem(c), ch0, ch1, blockIdx.x, gridDim.x);
}

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

SIDE_STREAM = r"""
// Side stream for communication, created once per process; it joins `stream` before return.
static cudaStream_t g_side;
static cudaEvent_t g_fork, g_join;
static int ensure_side_stream() {
  if (g_side == nullptr) {
    cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&g_fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&g_join, cudaEventDisableTiming);
  }
  return (int)cudaGetLastError();
}
"""

HOST_SEQUENTIAL = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  comm_kernel<<<COMM_CTAS, THREADS, 0, stream>>>(c, 0, num_chunks(p));
  barrier_kernel<<<1, 32, 0, stream>>>(c);
  launch_gemm(c, p, TileRange{0, c.world, 0, p.shard}, 0, stream);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

# Both two-stream placements: fork a side stream for the puts, compute the own rows at once,
# then the remote rows as the @REMOTE@ strategy says, and join the side stream back.
HOST_TWO_STREAMS = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  if (int err = ensure_side_stream()) return err;
@PRELUDE@
  cudaEventRecord(g_fork, stream);
  cudaStreamWaitEvent(g_side, g_fork, 0);
@PUSH@
@AFTER_PUSH@
  launch_gemm(c, p, TileRange{0, 1, 0, p.shard}, 0, stream);@OWN_ROWS@
@REMOTE@
  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

PUSH_PER_CHUNK = r"""  for (int64_t ch = 0; ch < nch; ++ch) comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, ch, ch + 1);"""
PUSH_ALL_EARLY = r"""  comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, 0, num_chunks(p));  // put early"""

AFTER_PUSH_BARRIER = r"""  barrier_kernel<<<1, 32, 0, g_side>>>(c);
  cudaEventRecord(g_join, g_side);"""

REMOTE_AFTER_BARRIER = r"""  cudaStreamWaitEvent(stream, g_join, 0);  // wait late: only the remote rows need the transfer
  launch_gemm(c, p, TileRange{1, c.world, 0, p.shard}, 0, stream);"""

REMOTE_PER_PEER = r"""  for (int i = 1; i < c.world; ++i) launch_gemm(c, p, TileRange{i, i + 1, 0, p.shard}, 1, stream);"""

REMOTE_PER_CHUNK = r"""  const int64_t rows = chunk_rows(p);
  for (int i = 1; i < c.world; ++i)
    for (int64_t ch = 0; ch < nch; ++ch) {
      const int64_t hi = (ch + 1) * rows < p.shard ? (ch + 1) * rows : p.shard;
      launch_gemm(c, p, TileRange{i, i + 1, ch * rows, hi}, 1, stream);
    }"""

REMOTE_WAIT_IN_KERNEL = r"""  launch_gemm(c, p, TileRange{1, c.world, 0, p.shard}, 1, stream);  // each tile waits for its rows"""

HOST_FUSED = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  // Every CTA must be co-resident (compute CTAs wait on comm CTAs): one CTA per SM.
  const int compute = c.num_sms - COMM_CTAS > 1 ? c.num_sms - COMM_CTAS : 1;
  fused_kernel<<<COMM_CTAS + compute, THREADS, 0, stream>>>(c);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""
