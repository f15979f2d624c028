"""CUDA text of the KV-cache transfer family: the frozen problem, chunking, the projection GEMM
and the decode side, in pieces the renderer composes (the senders are in
``kv_cache_transfer_cuda_send.py``, the host entries in ``kv_cache_transfer_cuda_host.py``).

World n is even. Prefill rank p < n/2 holds X [L, T, H] (ctx.in[0]) and W [L, H, 2*Dkv]
(ctx.in[1]); it computes KV_l = X_l @ W_l into ctx.out[0] [L, T, 2*Dkv] and streams it to its
decode partner p + n/2, which outputs the KV cache it received. The KV cache has the same byte
layout in both partners' outputs and symmetric buffers, so a chunk keeps its offset end to end.
A chunk is CHUNK_BYTES worth of KV rows of one layer (never two layers); GEMM tiles are aligned
to chunks, so a chunk is ready when its own tiles are.
"""

HEADER = r"""// cuco candidate -- pattern: kv_cache_transfer
// design point: @POINT@
// Prefill rank p < n/2: KV[l] = X[l] @ W[l] for every layer, sent to decode rank p + n/2, which
// outputs the KV cache it received. dims = {L, T, H, Dkv}; a KV row is 2*Dkv wide.
#include "cuco_comm.h"

struct Problem {
  int64_t L, T, H, D;  // layers, tokens, hidden size, KV row width (2 * Dkv)
  int partner;         // the rank on the other side of the transfer
  bool prefill;        // ranks [0, n/2) compute and send; ranks [n/2, n) receive
};

// Global dimensions -> what one rank sees. Frozen: the harness lays buffers out this way.
static __host__ __device__ __forceinline__ Problem problem(const cuco_ctx& c) {
  Problem p;
  p.L = c.dims[0];
  p.T = c.dims[1];
  p.H = c.dims[2];
  p.D = 2 * c.dims[3];
  const int half = c.world / 2;
  p.prefill = c.rank < half;
  p.partner = p.prefill ? c.rank + half : c.rank - half;
  return p;
}

// Byte offset of KV row `row` of layer `l`: the same in both partners' out[0] and symmetric buffers.
static __host__ __device__ __forceinline__ size_t kv_offset(const Problem& p, int64_t l, int64_t row) {
  return (size_t)((l * p.T + row) * p.D) * sizeof(cuco_t);
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
#define MAX_CHUNKS 1024             // chunks per call (dims keep L <= MAX_CHUNKS)
#define READY_SLOT 0                // + chunk, own pad: tiles of the chunk computed
#define ARRIVE_SLOT MAX_CHUNKS      // + chunk, partner's pad: the chunk landed
#define PEER_SLOT (2 * MAX_CHUNKS)  // partner's pad: chunks of the whole contribution landed
#define CREDIT_SLOT (PEER_SLOT + 1) // prefill's pad: the decode partner's buffer is free for this call

// Rows per chunk: CHUNK_BYTES worth of KV rows, at least one, at most one layer, and few
// enough rows that L * chunks-per-layer stays within MAX_CHUNKS signal slots.
struct Chunking {
  int64_t rows, per_layer, count;
};
static __host__ __device__ __forceinline__ Chunking chunking(const Problem& p) {
  int64_t rows = CHUNK_BYTES / (p.D * (int64_t)sizeof(cuco_t));
  const int64_t per_layer_cap = MAX_CHUNKS / p.L;
  const int64_t at_least = (p.T + per_layer_cap - 1) / per_layer_cap;
  if (rows < at_least) rows = at_least;
  if (rows > p.T) rows = p.T;
  Chunking k;
  k.rows = rows;
  k.per_layer = (p.T + rows - 1) / rows;
  k.count = p.L * k.per_layer;
  return k;
}

struct Chunk {
  int64_t layer, r0, r1;
  size_t off, bytes;
};
static __host__ __device__ __forceinline__ Chunk chunk_at(const Problem& p, const Chunking& k, int64_t ch) {
  Chunk q;
  q.layer = ch / k.per_layer;
  q.r0 = (ch % k.per_layer) * k.rows;
  q.r1 = q.r0 + k.rows < p.T ? q.r0 + k.rows : p.T;
  q.off = kv_offset(p, q.layer, q.r0);
  q.bytes = (size_t)((q.r1 - q.r0) * p.D) * sizeof(cuco_t);
  return q;
}

// Tiles are layer-major, then chunk, row block, column block; a tile never straddles chunks.
static __host__ __device__ __forceinline__ int64_t col_tiles(const Problem& p) { return (p.D + BN - 1) / BN; }
static __host__ __device__ __forceinline__ int64_t row_tiles(int64_t rows) { return (rows + BM - 1) / BM; }
static __host__ __device__ __forceinline__ int64_t layer_tiles(const Problem& p, const Chunking& k) {
  const int64_t last = p.T - (k.per_layer - 1) * k.rows;
  return ((k.per_layer - 1) * row_tiles(k.rows) + row_tiles(last)) * col_tiles(p);
}
static __host__ __device__ __forceinline__ int64_t chunk_tiles(const Problem& p, const Chunking& k, int64_t ch) {
  const Chunk q = chunk_at(p, k, ch);
  return row_tiles(q.r1 - q.r0) * col_tiles(p);
}
static __host__ __device__ __forceinline__ int64_t chunk_first_tile(const Problem& p, const Chunking& k, int64_t ch) {
  return (ch / k.per_layer) * layer_tiles(p, k) + (ch % k.per_layer) * row_tiles(k.rows) * col_tiles(p);
}

struct Tile {
  int64_t layer, chunk, r0, r1, col0;
};
static __device__ __forceinline__ Tile tile_at(const Problem& p, const Chunking& k, int64_t t) {
  const int64_t lt = layer_tiles(p, k), ct = col_tiles(p), full = row_tiles(k.rows);
  const int64_t rem = t % lt, rb = rem / ct;
  int64_t j = rb / full;
  if (j > k.per_layer - 1) j = k.per_layer - 1;
  Tile x;
  x.layer = t / lt;
  x.chunk = x.layer * k.per_layer + j;
  const int64_t end = (j + 1) * k.rows < p.T ? (j + 1) * k.rows : p.T;
  x.r0 = j * k.rows + (rb - j * full) * BM;
  x.r1 = x.r0 + BM < end ? x.r0 + BM : end;
  x.col0 = (rem % ct) * BN;
  return x;
}
"""

# Where a computed KV element goes: the output, plus the symmetric buffer when the transfer
# reads its source from there (GIN puts and NCCL send both take symmetric-buffer offsets).
STORE_OUT = r"""
// The sender reads its source straight from out[0].
static __device__ __forceinline__ void store_kv(const cuco_ctx& c, size_t i, cuco_t v) {
  static_cast<cuco_t*>(c.out[0])[i] = v;
}
"""

STORE_OUT_AND_SYMM = r"""
// The transfer's source must live in this rank's symmetric buffer: stage the KV there too.
static __device__ __forceinline__ void store_kv(const cuco_ctx& c, size_t i, cuco_t v) {
  static_cast<cuco_t*>(c.out[0])[i] = v;
  static_cast<cuco_t*>(c.symm)[i] = v;
}
"""

# A finished tile tells its chunk's sender (a comm CTA, a put kernel or the copy engine).
TILE_DONE_NONE = r"""
// The host orders the transfer after the compute: tiles signal nothing.
static __device__ __forceinline__ void tile_done(const cuco_ctx&, const Tile&) {}
"""

TILE_DONE_SIGNAL = r"""
// One arrival per finished tile on this rank's own pad; the chunk is ready at chunk_tiles per call.
static __device__ __forceinline__ void tile_done(const cuco_ctx& c, const Tile& t) {
  __syncthreads();
  if (threadIdx.x == 0) cuco_signal_add(c, c.rank, READY_SLOT + (int)t.chunk, 1);
}
"""

GEMM = r"""
// One KV tile: rows [r0, r1) of layer `layer`, columns [col0, col0 + BN); fp32 accumulation.
static __device__ void gemm_tile(const cuco_ctx& c, const Problem& p, const Tile& t) {
  __shared__ float Xs[BM][BK + 1];
  __shared__ float Ws[BK][BN + 1];
  const cuco_t* X = static_cast<const cuco_t*>(c.in[0]) + t.layer * p.T * p.H;
  const cuco_t* W = static_cast<const cuco_t*>(c.in[1]) + t.layer * p.H * p.D;
  const int tid = threadIdx.x, tx = tid % BN, ty = tid / BN;
  float acc[BM / 8] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t k0 = 0; k0 < p.H; k0 += BK) {
    for (int i = tid; i < BM * BK; i += THREADS) {
      const int r = i / BK, k = i % BK;
      const int64_t gr = t.r0 + r, gk = k0 + k;
      Xs[r][k] = (gr < t.r1 && gk < p.H) ? cuco_to_float(X[gr * p.H + gk]) : 0.f;
    }
    for (int i = tid; i < BK * BN; i += THREADS) {
      const int k = i / BN, n = i % BN;
      const int64_t gk = k0 + k, gn = t.col0 + n;
      Ws[k][n] = (gk < p.H && gn < p.D) ? cuco_to_float(W[gk * p.D + gn]) : 0.f;
    }
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      const float w = Ws[k][tx];
      for (int j = 0; j < BM / 8; ++j) acc[j] += Xs[ty + 8 * j][k] * w;
    }
    __syncthreads();
  }
  for (int j = 0; j < BM / 8; ++j) {
    const int64_t gr = t.r0 + ty + 8 * j, gn = t.col0 + tx;
    if (gr < t.r1 && gn < p.D) store_kv(c, (size_t)((t.layer * p.T + gr) * p.D + gn), cuco_from_float<cuco_t>(acc[j]));
  }
}

// Flat tiles [t0, t1), tile t handled by worker (t - t0) % workers, in order: early layers first.
static __device__ void run_tiles(const cuco_ctx& c, const Problem& p, int64_t t0, int64_t t1, int worker,
                                 int workers) {
  const Chunking k = chunking(p);
  for (int64_t i = t0 + worker; i < t1; i += workers) {
    const Tile t = tile_at(p, k, i);
    gemm_tile(c, p, t);
    tile_done(c, t);
  }
}
"""

KERNEL_GEMM = r"""
__global__ void __launch_bounds__(THREADS) gemm_kernel(cuco_ctx c, int64_t t0, int64_t t1) {
  run_tiles(c, problem(c), t0, t1, blockIdx.x, gridDim.x);
}

// Tiles of chunks [ch0, ch1) (contiguous in the flat order).
static void launch_gemm(const cuco_ctx& c, const Problem& p, const Chunking& k, int64_t ch0, int64_t ch1,
                        cudaStream_t s) {
  const int64_t t0 = chunk_first_tile(p, k, ch0);
  const int64_t t1 = chunk_first_tile(p, k, ch1 - 1) + chunk_tiles(p, k, ch1 - 1);
  const int64_t cap = 8 * (int64_t)c.num_sms;
  const int grid = (int)(t1 - t0 < cap ? t1 - t0 : cap);
  if (grid > 0) gemm_kernel<<<grid, THREADS, 0, s>>>(c, t0, t1);
}
"""

# Decode side: wait for what landed (as the sync scope says), copy it from the symmetric
# buffer into out[0].
RECEIVE = r"""
// Decode ranks: chunks [ch0, ch1) from the symmetric buffer into out[0], each once it landed.
static __device__ void receive_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta,
                                      int ncta) {
  const Chunking k = chunking(p);
@CREDIT@  if (threadIdx.x == 0) wait_all_landed(c, k);
  __syncthreads();
  for (int64_t ch = ch0 + cta; ch < ch1; ch += ncta) {
    if (threadIdx.x == 0) wait_chunk_landed(c, ch);
    __syncthreads();
    const Chunk q = chunk_at(p, k, ch);
    cuco_copy_group(static_cast<char*>(c.out[0]) + q.off, static_cast<const char*>(c.symm) + q.off, q.bytes,
                    threadIdx.x, blockDim.x);
  }
}
"""

KERNEL_RECEIVE = r"""
__global__ void __launch_bounds__(THREADS) receive_kernel(cuco_ctx c, int64_t ch0, int64_t ch1) {
  receive_chunks(c, problem(c), ch0, ch1, blockIdx.x, gridDim.x);
}

// The decode rank has nothing else to run: all its SMs copy.
static void launch_receive(const cuco_ctx& c, int64_t ch0, int64_t ch1, cudaStream_t s) {
  const int grid = (int)(ch1 - ch0 < c.num_sms ? ch1 - ch0 : c.num_sms);
  if (grid > 0) receive_kernel<<<grid, THREADS, 0, s>>>(c, ch0, ch1);
}
"""

# What the decode side waits for before reading, per backend and sync scope.
LANDED_NONE = r"""
// global_barrier: the barrier before the copy covers the whole transfer.
static __device__ __forceinline__ void wait_all_landed(const cuco_ctx&, const Chunking&) {}
static __device__ __forceinline__ void wait_chunk_landed(const cuco_ctx&, int64_t) {}
"""

LANDED_PEER = r"""
// per_peer_signal: the partner adds one per chunk; wait once for its whole contribution.
static __device__ __forceinline__ void wait_all_landed(const cuco_ctx& c, const Chunking& k) {
  @WAIT@(c, PEER_SLOT, c.epoch * (uint64_t)k.count);
}
static __device__ __forceinline__ void wait_chunk_landed(const cuco_ctx&, int64_t) {}
"""

LANDED_TILE = r"""
// per_tile_signal: one signal per chunk; copy each chunk as soon as it landed.
static __device__ __forceinline__ void wait_all_landed(const cuco_ctx&, const Chunking&) {}
static __device__ __forceinline__ void wait_chunk_landed(const cuco_ctx& c, int64_t ch) {
  @WAIT@(c, ARRIVE_SLOT + (int)ch, c.epoch);
}
"""

# global_barrier: every rank meets once the transfer is complete. LSA stores are visible after
# the barrier; GIN puts are observable only through their signal, so the decode side first
# waits for the aggregate count of the partner's puts.
BARRIER_LSA = r"""
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) {
  if (!problem(c).prefill && threadIdx.x == 0) give_credit(c, problem(c));
  cuco_barrier(c, 0);
}
"""

# The copy engine's barrier: the credit went from the host before it.
BARRIER_PLAIN = r"""
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) { cuco_barrier(c, 0); }
"""

BARRIER_GIN = r"""
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  if (!p.prefill && threadIdx.x == 0) {
    give_credit(c, p);
    cuco_gin_wait(c, PEER_SLOT, c.epoch * (uint64_t)chunking(p).count);
  }
  cuco_barrier(c, 0);
}
"""

# The decode rank hands its receive buffer to the sender once per call, when its copies out of
# it from the previous call are done (stream order): back-to-back calls cannot overwrite a cache
# still being read. global_barrier gives it in the barrier kernel, the other scopes at the start
# of the receive.
CREDIT_IN_RECEIVE = """  if (cta == 0 && threadIdx.x == 0) give_credit(c, p);
"""

CREDIT_LSA = r"""
static __device__ __forceinline__ void give_credit(const cuco_ctx& c, const Problem& p) {
  cuco_signal_add(c, p.partner, CREDIT_SLOT, 1);
}
static __device__ __forceinline__ void take_credit(const cuco_ctx& c) { cuco_wait(c, CREDIT_SLOT, c.epoch); }
"""

CREDIT_GIN = r"""
static __device__ __forceinline__ void give_credit(const cuco_ctx& c, const Problem& p) {
  cuco_gin_signal(c, 0, p.partner, CREDIT_SLOT, 1);  // a signal alone
}
static __device__ __forceinline__ void take_credit(const cuco_ctx& c) { cuco_gin_wait(c, CREDIT_SLOT, c.epoch); }
"""
