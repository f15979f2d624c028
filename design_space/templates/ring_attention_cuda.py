"""CUDA text of the ring-attention template family: the frozen problem and buffer layout, the
constants and ring bookkeeping, and the attention compute (online softmax), in pieces the
renderer composes. Communication pieces live in ``ring_attention_cuda_comm`` (device side) and
``ring_attention_cuda_host`` (host side).

Rank r holds Q_r, K_r, V_r [H, S/n, D] (ctx.in[0..2]) and computes O_r [H, S/n, D] (ctx.out[0]).
Step t (0..n-1) folds in the KV block of rank (r - t) mod n; steps 1.. arrive from the left
neighbour, which forwards at step t what it received at step t - 1 (a ring: every link carries one
block per step). Blocks land in receive slots of the symmetric buffer, K and V rows interleaved.
"""

HEADER = r"""// cuco candidate -- pattern: ring_attention
// design point: @POINT@
// Context-parallel (ring) attention. Rank r holds Q_r, K_r, V_r [H, S/n, D] (ctx.in[0..2]) and
// computes O_r [H, S/n, D] (ctx.out[0]) = softmax(Q_r K^T / sqrt(D)) V over the whole sequence,
// masked by global position when mask = 2 (key position <= query position; 1: full); dims = {H, S, D, mask}.
#include "cuco_comm.h"

struct Problem {
  int64_t H, S, D, causal, Sl, rows;  // causal 0/1; Sl = S / world; rows = H * Sl K (and V) rows per block
};

// Global dimensions -> what one rank sees. Frozen: the harness lays buffers out this way.
static __host__ __device__ __forceinline__ Problem problem(const cuco_ctx& c) {
  Problem p;
  p.H = c.dims[0];
  p.S = c.dims[1];
  p.D = c.dims[2];
  p.causal = c.dims[3] == 2;
  p.Sl = p.S / c.world;
  p.rows = p.H * p.Sl;
  return p;
}

// Frozen buffer layout (the harness sizes it). Symmetric buffer: world + 1 KV slots of slot_bytes,
// one KV block per slot with K and V rows interleaved (row g = h * Sl + j holds K[h, j, :] then
// V[h, j, :]); slot `world` holds this rank's own block packed for sending, slots [0, world)
// receive. Workspace: the online-softmax state in fp32, acc[rows][D], then m[rows], then l[rows].
static __host__ __device__ __forceinline__ size_t slot_bytes(const Problem& p) {
  return (size_t)(2 * p.rows * p.D) * sizeof(cuco_t);
}
static __host__ __device__ __forceinline__ size_t slot_offset(const Problem& p, int64_t slot) {
  return (size_t)slot * slot_bytes(p);
}
"""

CONSTANTS = r"""
// EVOLVE-BLOCK-START
#define CHUNK_BYTES @CHUNK_BYTES@
#define COMM_CTAS @COMM_CTAS@
#define COMM_SMS @COMM_SMS@  // SMs communication holds while compute runs (0: DMA engines or the library)
#define THREADS 256
#define BQ 16                // query rows per tile
#define BKV 32               // K/V rows per inner tile
#define TPR (THREADS / BQ)   // threads per query row; each keeps MAX_D / TPR accumulators
#define MAX_D 128
#define RING_SLOTS 2         // receive slots a double-buffered ring cycles through
#define MAX_CHUNKS 1024      // transfer chunks per KV block
// Signal slots (signal pad, or GIN signals on gin): per-slot counters, per-chunk flags, credits.
#define STEP_SIGNALS 0
#define CHUNK_SIGNALS 32
#define CREDIT_SIGNALS 3072
static_assert(CHUNK_SIGNALS + RING_SLOTS * MAX_CHUNKS <= CREDIT_SIGNALS, "chunk signals run into the credits");
static_assert(CREDIT_SIGNALS + CUCO_MAX_RANKS <= CUCO_GIN_SIGNALS, "credits beyond the GIN signals");

static __host__ __device__ __forceinline__ int next_rank(const cuco_ctx& c) { return (c.rank + 1) % c.world; }
static __host__ __device__ __forceinline__ int prev_rank(const cuco_ctx& c) { return (c.rank + c.world - 1) % c.world; }
// Step t folds in the block of rank origin(t): after t hops around the ring.
static __host__ __device__ __forceinline__ int origin(const cuco_ctx& c, int t) {
  return (c.rank - t + c.world) % c.world;
}
// Global step: steps keep counting across calls, so every signal target grows monotonically.
static __host__ __device__ __forceinline__ int64_t gstep(const cuco_ctx& c, int t) {
  return (int64_t)(c.epoch - 1) * (c.world - 1) + t;
}
// Receive slots in use: @SLOTS_WHY@
static __host__ __device__ __forceinline__ int64_t ring_slots(const cuco_ctx& c) {
  @SLOTS_BODY@
}
static __host__ __device__ __forceinline__ int slot_of(const cuco_ctx& c, int64_t G) {
  return (int)((G - 1) % ring_slots(c));
}
// How many global steps up to G filled G's slot: the count its arrival signals reach.
static __host__ __device__ __forceinline__ int64_t fills(const cuco_ctx& c, int64_t G) {
  return (G - 1) / ring_slots(c) + 1;
}

// KV rows per transfer chunk: CHUNK_BYTES worth, at least one row, at most MAX_CHUNKS chunks.
static __host__ __device__ __forceinline__ int64_t chunk_rows(const Problem& p) {
  int64_t rows = CHUNK_BYTES / (2 * p.D * (int64_t)sizeof(cuco_t));
  if (rows < 1) rows = 1;
  const int64_t at_least = (p.rows + MAX_CHUNKS - 1) / MAX_CHUNKS;
  return rows > at_least ? rows : at_least;
}
static __host__ __device__ __forceinline__ int64_t num_chunks(const Problem& p) {
  const int64_t rows = chunk_rows(p);
  return (p.rows + rows - 1) / rows;
}
// Comm CTAs with chunks to move: COMM_CTAS, or fewer when a block has fewer chunks than they have
// issuers (idle CTAs would only hold SMs and join the protocol).
#define ISSUERS_PER_CTA @ISSUERS_PER_CTA@
static __host__ __device__ __forceinline__ int64_t comm_workers(const Problem& p) {
  const int64_t need = (num_chunks(p) + ISSUERS_PER_CTA - 1) / ISSUERS_PER_CTA;
  return need < COMM_CTAS ? need : COMM_CTAS;
}
static __host__ __device__ __forceinline__ int64_t q_tiles(const Problem& p) { return p.H * ((p.Sl + BQ - 1) / BQ); }
// Compute CTAs. Each signals every step it is done with, so the count is part of the protocol;
// with COMM_SMS left to communication both fit on the GPU at once (waiting kernels must).
static __host__ __device__ __forceinline__ int64_t compute_workers(const cuco_ctx& c, const Problem& p) {
  const int64_t sms = c.num_sms - COMM_SMS > 1 ? c.num_sms - COMM_SMS : 1, tiles = q_tiles(p);
  return tiles < sms ? tiles : sms;
}

// Copy rows [g0, g1) of this rank's K and V (inputs [H, Sl, D]: row g at g * D) into the slot
// layout at dst (which points at row g0) with `width` threads, this one being `lane`.
static __device__ void pack_rows(char* dst, const cuco_ctx& c, const Problem& p, int64_t g0, int64_t g1,
                                 unsigned lane, unsigned width) {
  const int64_t rb = p.D * (int64_t)sizeof(cuco_t);
  const int64_t unit = rb % 16 == 0 ? 16 : (int64_t)sizeof(cuco_t);  // 16-byte moves when rows allow
  const int64_t per_row = rb / unit, total = (g1 - g0) * 2 * per_row;
  const char* K = static_cast<const char*>(c.in[1]) + g0 * rb;
  const char* V = static_cast<const char*>(c.in[2]) + g0 * rb;
  for (int64_t x = lane; x < total; x += width) {
    const int64_t r = x / (2 * per_row), half = (x / per_row) % 2, w = x % per_row;
    const char* src = (half ? V : K) + r * rb + w * unit;
    char* out = dst + (2 * r + half) * rb + w * unit;
    if (unit == 16) *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(src);
    else *reinterpret_cast<cuco_t*>(out) = *reinterpret_cast<const cuco_t*>(src);
  }
}
"""

SLOTS_DOUBLE = (
    "two, double buffering: step t + 2 refills step t's slot once the right neighbour has released it",
    "return c.world - 1 < RING_SLOTS ? (c.world > 1 ? c.world - 1 : 1) : RING_SLOTS;",
)
SLOTS_ALL = (
    "one per step: the whole ring is moved before (or beside) the compute and no slot is reused within a call",
    "return c.world > 1 ? c.world - 1 : 1;",
)

# The attention compute. @KV_SLOT@: the slot holding step t's block.
ATTENTION = r"""
struct KV {
  const cuco_t* k;
  const cuco_t* v;
  int64_t stride;  // elements between consecutive rows
};

// K and V rows of head h in the block folded at step t (global step G): the own block straight
// from the inputs, the others from the slot they landed in.
static __device__ __forceinline__ KV kv_rows(const cuco_ctx& c, const Problem& p, int t, int64_t G, int64_t h) {
  if (t == 0) {
    const int64_t off = h * p.Sl * p.D;
    return KV{static_cast<const cuco_t*>(c.in[1]) + off, static_cast<const cuco_t*>(c.in[2]) + off, p.D};
  }
  const char* slot = static_cast<const char*>(c.symm) + slot_offset(p, @KV_SLOT@);
  const cuco_t* base = reinterpret_cast<const cuco_t*>(slot) + 2 * h * p.Sl * p.D;
  (void)G;
  return KV{base, base + p.D, 2 * p.D};
}

// Fold steps [t0, t1] into query tile `tile` (head h, rows q0 .. q0 + BQ) with an online softmax.
// Thread (i, sub) owns columns sub, sub + TPR, ... of row i and its own copy of the row's running
// max m and sum l. The state passes through the workspace between calls; step world - 1 writes O.
// `wait`: wait for each K/V tile's chunks to land (device-signalled designs).
static __device__ void attend(const cuco_ctx& c, const Problem& p, int64_t tile, int t0, int t1, bool wait) {
  __shared__ float Qs[BQ][MAX_D];
  __shared__ float Ks[BKV][MAX_D + 1];
  __shared__ float Vs[BKV][MAX_D + 1];
  __shared__ float Ss[BQ][BKV];
  const int64_t per_head = (p.Sl + BQ - 1) / BQ, h = tile / per_head, q0 = (tile % per_head) * BQ;
  const int tid = threadIdx.x, i = tid / TPR, sub = tid % TPR;
  const bool live = q0 + i < p.Sl;
  const int64_t qpos = (int64_t)c.rank * p.Sl + q0 + i;  // global position of row i
  const int64_t qlast = (int64_t)c.rank * p.Sl + (q0 + BQ < p.Sl ? q0 + BQ : p.Sl) - 1;
  const cuco_t* Q = static_cast<const cuco_t*>(c.in[0]) + h * p.Sl * p.D;
  const float scale = 1.0f / sqrtf((float)p.D);
  for (int x = tid; x < BQ * MAX_D; x += THREADS) {
    const int r = x / MAX_D, d = x % MAX_D;
    Qs[r][d] = (q0 + r < p.Sl && d < p.D) ? cuco_to_float(Q[(q0 + r) * p.D + d]) * scale : 0.f;
  }
  __syncthreads();
  float* ws = static_cast<float*>(c.workspace);
  const int64_t row = h * p.Sl + q0 + i;
  float acc[MAX_D / TPR], m = -INFINITY, l = 0.f;
  for (int k = 0; k < MAX_D / TPR; ++k) acc[k] = 0.f;
  if (t0 > 0 && live) {  // resume the state an earlier call left
    for (int k = 0; k < MAX_D / TPR; ++k)
      if (sub + k * TPR < p.D) acc[k] = ws[row * p.D + sub + k * TPR];
    m = ws[p.rows * p.D + row];
    l = ws[p.rows * (p.D + 1) + row];
  }
  for (int t = t0; t <= t1; ++t) {
    const int src = origin(c, t);
    if (p.causal && (int64_t)src * p.Sl > qlast) continue;  // the whole block lies in the future
    const int64_t G = gstep(c, t);
    const KV kv = kv_rows(c, p, t, G, h);
    for (int64_t k0 = 0; k0 < p.Sl; k0 += BKV) {
      const int64_t kpos0 = (int64_t)src * p.Sl + k0, k1 = k0 + BKV < p.Sl ? k0 + BKV : p.Sl;
      if (p.causal && kpos0 > qlast) break;
      if (wait && t > 0) {
        if (tid == 0) wait_rows(c, p, G, h * p.Sl + k0, h * p.Sl + k1);
        __syncthreads();
      }
      for (int x = tid; x < BKV * MAX_D; x += THREADS) {
        const int r = x / MAX_D, d = x % MAX_D;
        const bool in = k0 + r < k1 && d < p.D;
        Ks[r][d] = in ? cuco_to_float(kv.k[(k0 + r) * kv.stride + d]) : 0.f;
        Vs[r][d] = in ? cuco_to_float(kv.v[(k0 + r) * kv.stride + d]) : 0.f;
      }
      __syncthreads();
      for (int j = sub; j < BKV; j += TPR) {
        float s = -INFINITY;
        if (k0 + j < k1 && (!p.causal || kpos0 + j <= qpos)) {
          s = 0.f;
          for (int d = 0; d < p.D; ++d) s += Qs[i][d] * Ks[j][d];
        }
        Ss[i][j] = s;
      }
      __syncthreads();
      float mt = m;
      for (int j = 0; j < BKV; ++j) mt = fmaxf(mt, Ss[i][j]);
      if (mt > -INFINITY) {  // a row with every key masked so far keeps its empty state
        const float alpha = expf(m - mt);
        l *= alpha;
        for (int k = 0; k < MAX_D / TPR; ++k) acc[k] *= alpha;
        for (int j = 0; j < BKV; ++j) {
          const float pj = expf(Ss[i][j] - mt);
          l += pj;
          for (int k = 0; k < MAX_D / TPR; ++k) acc[k] += pj * Vs[j][sub + k * TPR];
        }
        m = mt;
      }
      __syncthreads();
    }
  }
  if (!live) return;
  if (t1 == c.world - 1) {
    cuco_t* O = static_cast<cuco_t*>(c.out[0]) + row * p.D;
    for (int k = 0; k < MAX_D / TPR; ++k)
      if (sub + k * TPR < p.D) O[sub + k * TPR] = cuco_from_float<cuco_t>(acc[k] / l);
    return;
  }
  for (int k = 0; k < MAX_D / TPR; ++k)
    if (sub + k * TPR < p.D) ws[row * p.D + sub + k * TPR] = acc[k];
  if (sub == 0) {
    ws[p.rows * p.D + row] = m;
    ws[p.rows * (p.D + 1) + row] = l;
  }
}

// Tile-major: each tile folds steps [t0, t1] in one go (their blocks are all present).
__global__ void __launch_bounds__(THREADS) attend_kernel(cuco_ctx c, int t0, int t1) {
  const Problem p = problem(c);
  for (int64_t tile = blockIdx.x; tile < q_tiles(p); tile += gridDim.x) attend(c, p, tile, t0, t1, false);
}

// Step-major with in-kernel waits: all of this worker's tiles take step t before any takes t + 1,
// so the worker releases step t's slot to the left neighbour as soon as it is done with it.
static __device__ void attend_steps(const cuco_ctx& c, const Problem& p, int t0, int t1, int64_t worker,
                                    int64_t workers) {
  for (int t = t0; t <= t1; ++t) {
    for (int64_t tile = worker; tile < q_tiles(p); tile += workers) attend(c, p, tile, t, t, true);
    if (t > 0) release_step(c, gstep(c, t));
  }
}
"""

ATTEND_STEPS_KERNEL = r"""
__global__ void __launch_bounds__(THREADS) attend_steps_kernel(cuco_ctx c, int t0, int t1) {
  attend_steps(c, problem(c), t0, t1, blockIdx.x, gridDim.x);
}
"""

PACK_KERNEL = r"""
// The own block, packed into the own slot: the source of the DMA or library transfers.
__global__ void __launch_bounds__(THREADS) pack_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  pack_rows(static_cast<char*>(c.symm) + slot_offset(p, c.world), c, p, 0, p.rows,
            blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}
"""
