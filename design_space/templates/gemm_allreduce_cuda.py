"""CUDA text of the GEMM + all-reduce (+ RMSNorm) family: the frozen problem and buffer layout,
chunking, issuer groups, sync scopes and the partial GEMM, in pieces the renderer composes (the
backends' communication is in ``gemm_allreduce_cuda_comm.py``, the host entries in
``gemm_allreduce_cuda_host.py``).

Rank r holds A_r [M, K/n] (ctx.in[0]), B_r [K/n, N] (ctx.in[1]) and gamma [N] (ctx.in[2]); every
rank outputs Y = sum_j A_j @ B_j [M, N] (ctx.out[0]), or RMSNorm(Y) * gamma when dims[3] == 1.
A rank computes its partial P_r = A_r @ B_r into its symmetric buffer. Rows are split into owner
blocks of R = ceil(M / n) rows and each block into chunks of whole rows (RMSNorm needs whole
rows); stage s holds chunk s of every owner block, so all ranks produce what an owner needs in
the same order.
"""

HEADER = r"""// cuco candidate -- pattern: gemm_allreduce
// design point: @POINT@
// Every rank: Y[M, N] = sum_j A_j[M, K/n] @ B_j[K/n, N]; RMSNorm(Y) * gamma when dims[3] == 1.
// dims = {M, N, K, rmsnorm}; in = {A_r, B_r, gamma [N]}; out = {Y}.
#include "cuco_comm.h"

#define RMS_EPS 1e-6f

struct Problem {
  int64_t M, N, K, Kl;  // Kl = K / world: this rank's slice of the reduction dimension
  int64_t R;            // rows of Y each rank owns in the owner-based designs: ceil(M / world)
  int W;                // world size
  int norm;             // 1: apply RMSNorm(Y) * gamma per row
};

// Global dimensions -> what one rank sees. Frozen: the harness lays buffers out this way.
static __host__ __device__ __forceinline__ Problem problem(const cuco_ctx& c) {
  Problem p;
  p.M = c.dims[0];
  p.N = c.dims[1];
  p.K = c.dims[2];
  p.W = c.world;
  p.Kl = p.K / c.world;
  p.R = (p.M + c.world - 1) / c.world;
  p.norm = c.dims[3] == 1;
  return p;
}

// Symmetric buffer, 2*M + world*R rows of N elements (the harness sizes it):
//   PART   rows [0, M)                     this rank's partial A_r @ B_r
//   STAGE  rows [M, M + world*R)           block `src`: partial rows rank `src` pushed for my rows
//   RES    rows [M + world*R, 2M + world*R)  reduced rows: mine reduced here, others' from their owners
static __host__ __device__ __forceinline__ size_t part_off(const Problem& p, int64_t row) {
  return (size_t)(row * p.N) * sizeof(cuco_t);
}
static __host__ __device__ __forceinline__ size_t stage_off(const Problem& p, int src, int64_t owned_row) {
  return (size_t)((p.M + src * p.R + owned_row) * p.N) * sizeof(cuco_t);
}
static __host__ __device__ __forceinline__ size_t res_off(const Problem& p, int64_t row) {
  return (size_t)((p.M + p.W * p.R + row) * p.N) * sizeof(cuco_t);
}
static __host__ __device__ __forceinline__ cuco_t* symm_at(const cuco_ctx& c, size_t off) {
  return reinterpret_cast<cuco_t*>(static_cast<char*>(c.symm) + off);
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
#define MAX_CHUNKS 64  // per owner block: bounds the signal slots below and a pipeline's launches
// Signal pad slots (CUCO_USER_SIGNALS available), one range per purpose.
#define SLOT_LOCAL 0                                   // + chunk: GEMM tiles of it finished here
#define SLOT_ARRIVE (CUCO_MAX_RANKS * MAX_CHUNKS)      // + chunk or source rank: reduction inputs in
#define SLOT_RESULT (2 * CUCO_MAX_RANKS * MAX_CHUNKS)  // + chunk or owner rank: reduced rows in
#define SLOT_DONE (3 * CUCO_MAX_RANKS * MAX_CHUNKS)    // + chunk: a reader is done with my partial

// Rows per chunk: CHUNK_BYTES of whole output rows, at least one, at most MAX_CHUNKS per block.
static __host__ __device__ __forceinline__ int64_t chunk_rows(const Problem& p) {
  int64_t rows = CHUNK_BYTES / (p.N * (int64_t)sizeof(cuco_t));
  if (rows < 1) rows = 1;
  const int64_t at_least = (p.R + MAX_CHUNKS - 1) / MAX_CHUNKS;
  return rows > at_least ? rows : at_least;
}
static __host__ __device__ __forceinline__ int64_t num_chunks(const Problem& p) {
  const int64_t rows = chunk_rows(p);
  return (p.R + rows - 1) / rows;
}

// Chunk g = owner * num_chunks + i: rows [lo, hi) of the owner's block (empty when M is ragged).
struct Chunk {
  int owner;
  int64_t lo, hi;
};
static __host__ __device__ __forceinline__ Chunk chunk_at(const Problem& p, int64_t g) {
  const int64_t nch = num_chunks(p), rows = chunk_rows(p);
  Chunk ch;
  ch.owner = (int)(g / nch);
  const int64_t base = ch.owner * p.R, end = base + p.R < p.M ? base + p.R : p.M;
  const int64_t lo = base + (g % nch) * rows;
  ch.lo = lo < end ? lo : end;
  ch.hi = ch.lo + rows < end ? ch.lo + rows : end;
  if (ch.hi < ch.lo) ch.hi = ch.lo;
  return ch;
}
static __host__ __device__ __forceinline__ size_t chunk_bytes(const Problem& p, const Chunk& ch) {
  return (size_t)((ch.hi - ch.lo) * p.N) * sizeof(cuco_t);
}
// Item i of stage s: rank r produces owner r+1's chunk first and its own last.
static __host__ __device__ __forceinline__ int64_t stage_chunk(const cuco_ctx& c, const Problem& p, int64_t s, int i) {
  return (int64_t)((c.rank + 1 + i) % p.W) * num_chunks(p) + s;
}
static __host__ __device__ __forceinline__ int64_t tiles_in(const Problem& p, const Chunk& ch) {
  return ((ch.hi - ch.lo + BM - 1) / BM) * ((p.N + BN - 1) / BN);
}
"""

# Issuer groups: who moves (and reduces) one chunk. @PUT@ is the cuco_put_* of the issuer.
GROUP_CTA = r"""
// issuer cta: a whole CTA moves and reduces one chunk; thread 0 waits and signals.
#define GROUP_WIDTH THREADS
static __device__ __forceinline__ int group_lane() { return threadIdx.x; }
static __device__ __forceinline__ void group_sync() { __syncthreads(); }
static __device__ float group_sum(float v) {
  __shared__ float part[THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < THREADS / 32; ++w) total += part[w];
  __syncthreads();  // part[] is reused by the next row
  return total;
}
"""

GROUP_WARP = r"""
// issuer warp: each warp moves and reduces whole chunks on its own; lane 0 waits and signals.
#define GROUP_WIDTH 32
static __device__ __forceinline__ int group_lane() { return threadIdx.x % 32; }
static __device__ __forceinline__ void group_sync() { __syncwarp(); }
static __device__ __forceinline__ float group_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
"""

GROUP_THREAD = r"""
// issuer thread: each thread moves and reduces whole chunks by itself, waits and signals.
#define GROUP_WIDTH 1
static __device__ __forceinline__ int group_lane() { return 0; }
static __device__ __forceinline__ void group_sync() {}
static __device__ __forceinline__ float group_sum(float v) { return v; }
"""

GROUP_COMMON = r"""
static __device__ __forceinline__ int group_id() { return (int)((blockIdx.x * THREADS + threadIdx.x) / GROUP_WIDTH); }
static __host__ __device__ __forceinline__ int group_count(int ctas) { return ctas * (THREADS / GROUP_WIDTH); }
"""

# Sync scopes: which slot a transfer signals and what a consumer waits for. The backend piece
# before them defines wait_arrive / wait_res and what one chunk receives.
SCOPE_PER_TILE = r"""
// per_tile_signal: every chunk has its own slots; its reduction starts once its inputs are in.
#define SCOPE_SIGNALS 1
#define STAGE_MAJOR 1  // comm work runs stage by stage, interleaving puts, reductions and copies
static __host__ __device__ __forceinline__ int arrive_idx(int src, int64_t g) { return (int)g; }
static __host__ __device__ __forceinline__ int result_idx(int owner, int64_t g) { return (int)g; }
static __host__ __device__ __forceinline__ uint64_t result_need(const cuco_ctx& c, const Problem&) { return c.epoch; }
static __device__ void wait_arrivals(const cuco_ctx& c, const Problem& p, int64_t g) {
  wait_arrive(c, arrive_idx(0, g), c.epoch * (uint64_t)arrivals_per_chunk(c));
}
static __device__ void wait_result(const cuco_ctx& c, const Problem& p, int owner, int64_t g) {
  wait_res(c, result_idx(owner, g), result_need(c, p));
}
"""

SCOPE_PER_PEER = r"""
// per_peer_signal: one counter per peer; a consumer waits for a peer's whole contribution.
#define SCOPE_SIGNALS 1
#define STAGE_MAJOR 0  // all puts first, then all reductions, then all copies
static __host__ __device__ __forceinline__ int arrive_idx(int src, int64_t) { return src; }
static __host__ __device__ __forceinline__ int result_idx(int owner, int64_t) { return owner; }
static __host__ __device__ __forceinline__ uint64_t result_need(const cuco_ctx& c, const Problem& p) {
  return c.epoch * (uint64_t)num_chunks(p);
}
static __device__ void wait_arrivals(const cuco_ctx& c, const Problem& p, int64_t) {
  for (int src = 0; src < c.world; ++src)
    if (src != c.rank || ARRIVE_FROM_SELF) wait_arrive(c, arrive_idx(src, 0), c.epoch * (uint64_t)chunks_from_source(p));
}
static __device__ void wait_result(const cuco_ctx& c, const Problem& p, int owner, int64_t g) {
  wait_res(c, result_idx(owner, g), result_need(c, p));
}
"""

SCOPE_GLOBAL = r"""
// global_barrier: cross-rank barriers between the phases order every SM-made store; transfers
// that land asynchronously (GIN) still count their landings, one slot per direction.
#define SCOPE_SIGNALS 0
#define STAGE_MAJOR 0
static __host__ __device__ __forceinline__ int arrive_idx(int, int64_t) { return 0; }
static __host__ __device__ __forceinline__ int result_idx(int, int64_t) { return 0; }
static __host__ __device__ __forceinline__ uint64_t result_need(const cuco_ctx& c, const Problem& p) {
  return c.epoch * (uint64_t)((c.world - 1) * num_chunks(p));
}
static __device__ void wait_arrivals(const cuco_ctx& c, const Problem& p, int64_t) {
  if (ASYNC_LANDING) wait_arrive(c, 0, result_need(c, p));  // (world-1) * chunks land here as well
}
static __device__ void wait_result(const cuco_ctx& c, const Problem& p, int, int64_t) {
  if (ASYNC_LANDING) wait_res(c, 0, result_need(c, p));
}
"""

# Local readiness: a finished tile adds one to its chunk's slot in this rank's own pad; comm work
# running beside the GEMM waits for all of a chunk's tiles.
TILE_SIGNAL = r"""
static __device__ __forceinline__ void tile_done(const cuco_ctx& c, int64_t g) {
  if (threadIdx.x == 0) cuco_signal_add(c, c.rank, SLOT_LOCAL + (int)g, 1);
}
static __device__ __forceinline__ void wait_local(const cuco_ctx& c, const Problem& p, int64_t g) {
  cuco_wait(c, SLOT_LOCAL + (int)g, c.epoch * (uint64_t)tiles_in(p, chunk_at(p, g)));
}
"""

GEMM = r"""
// One tile of this rank's partial: PART rows [r0, r1) (r1 - r0 <= BM), columns [col0, col0 + BN).
static __device__ void gemm_tile(const cuco_ctx& c, const Problem& p, int64_t r0, int64_t r1, int64_t col0) {
  __shared__ float As[BM][BK + 1];
  __shared__ float Bs[BK][BN + 1];
  const cuco_t* A = static_cast<const cuco_t*>(c.in[0]);
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]);
  cuco_t* P = symm_at(c, 0);
  const int tid = threadIdx.x, tx = tid % BN, ty = tid / BN;
  float acc[BM / 8] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t k0 = 0; k0 < p.Kl; k0 += BK) {
    for (int i = tid; i < BM * BK; i += THREADS) {
      const int r = i / BK, k = i % BK;
      const int64_t gr = r0 + r, gk = k0 + k;
      As[r][k] = (gr < r1 && gk < p.Kl) ? cuco_to_float(A[gr * p.Kl + gk]) : 0.f;
    }
    for (int i = tid; i < BK * BN; i += THREADS) {
      const int k = i / BN, n = i % BN;
      const int64_t gk = k0 + k, gn = col0 + n;
      Bs[k][n] = (gk < p.Kl && gn < p.N) ? cuco_to_float(B[gk * p.N + gn]) : 0.f;
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
    if (gr < r1 && gn < p.N) P[gr * p.N + gn] = cuco_from_float<cuco_t>(acc[j]);
  }
}

// Tiles of stages [s0, s1) in stage order (tiles never straddle chunks); each finished tile
// counts towards its chunk's local-readiness slot, which the comm side waits on.
static __device__ void run_gemm(const cuco_ctx& c, const Problem& p, int64_t s0, int64_t s1, int worker, int workers) {
  const int64_t ct = (p.N + BN - 1) / BN, per = ((chunk_rows(p) + BM - 1) / BM) * ct;
  const int64_t total = (s1 - s0) * p.W * per;
  for (int64_t t = worker; t < total; t += workers) {
    const int64_t k = t / per, j = t % per;
    const int64_t g = stage_chunk(c, p, s0 + k / p.W, (int)(k % p.W));
    const Chunk ch = chunk_at(p, g);
    if (j >= tiles_in(p, ch)) continue;
    before_tile(c, p, g);
    const int64_t r0 = ch.lo + (j / ct) * BM;
    gemm_tile(c, p, r0, r0 + BM < ch.hi ? r0 + BM : ch.hi, (j % ct) * BN);
    __syncthreads();
    tile_done(c, g);
  }
}

"""
