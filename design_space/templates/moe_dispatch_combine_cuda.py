"""CUDA text of the MoE dispatch + expert GEMMs + combine family: the frozen problem layout, the
routing layout, expert tiles and the weighted combine, in pieces the renderer composes.
Communication lives in moe_dispatch_combine_cuda_dev.py (lsa, gin: device-initiated) and
moe_dispatch_combine_cuda_host.py (copy_engine, host_nccl: host-issued).

Data flow of one call on rank r (every backend):
  layout    routing -> per destination d the pairs (token, choice) whose expert lives on d, packed
            by d's local expert (segments); a header per d: row count, rows per local expert and
            the cumulative row counters the receiver's signal waits target;
  dispatch  rows of x go to RECV[block of r] on d (variable counts, capacity `cap` rows);
  experts   d runs silu(X @ W1_e) @ W2_e per segment tile; results overwrite the tile's input rows;
  combine   result rows go back to COMB[block of d] on r at the same row index;
  final     out[t] = sum_j w[t][j] * COMB[pair (t, j)], fp32, rounded once.
Row signals count rows; a pair exchanges a different number of rows each call, so their targets
are the cumulative counts both ends know (the sender keeps them in private pad slots and ships
them in the header; the token owner knows its own), not multiples of the epoch. Header signals
count one per call (epoch targets).
"""

HEADER = r"""// cuco candidate -- pattern: moe_dispatch_combine
// design point: @POINT@
// Rank r: out_r[t] = sum_j w[t][j] * expert_{id[t][j]}(x_r[t]), expert_e(v) = silu(v @ W1_e) @ W2_e;
// expert e lives on rank e / (E/n). dims = {T, H, F, E, K, SKEW}; in = {x [T, H], route [T, 2K]
// (K expert ids as exact small integers, then K routing weights), w1 [E/n, H, F], w2 [E/n, F, H]};
// out = {out [T, H]}. SKEW only shapes the routing the harness draws.
#include "cuco_comm.h"

// Frozen: the harness sizes the symmetric buffer and the workspace from these.
#define MAX_CHUNKS 48    // chunks (and chunk signals) per (source, destination) pair and call
#define SCRATCH_ROWS 32  // rows of one worker's fp32 expert intermediate
#define MAX_WORKERS 256  // workers (CTAs) that own an intermediate scratch

// Header a rank sends each destination (int64 words).
#define H_COUNT 0  // rows (token, choice pairs) it sends there this call
#define H_PEER 1   // rows it ever sent there, this call included (per-peer signal target)
#define H_CNT 2    // El words: rows per local expert of the destination, in segment order
// then MAX_CHUNKS words at H_CNT + El: rows ever sent in chunk q (per-chunk signal targets)

struct Problem {
  int rank, world;
  int64_t T, H, F, E, K, El, cap, hi;
  size_t row;                                        // bytes of one token row
  size_t hdr_in, hdr_out, allhdr, recv, comb, send;  // byte offsets in the symmetric buffer
  size_t ws_cnt, ws_seg, ws_base, ws_pos, ws_tok, ws_within, ws_scratch;  // ... in the workspace
};

static __host__ __device__ __forceinline__ size_t align16(size_t x) { return (x + 15) / 16 * 16; }

// Global dimensions -> what one rank sees. Frozen: the harness lays buffers out this way.
static __host__ __device__ __forceinline__ Problem problem(const cuco_ctx& c) {
  Problem p;
  p.rank = c.rank;
  p.world = c.world;
  p.T = c.dims[0];
  p.H = c.dims[1];
  p.F = c.dims[2];
  p.E = c.dims[3];
  p.K = c.dims[4];
  p.El = p.E / p.world;
  p.cap = p.T * (p.K < p.El ? p.K : p.El);  // most rows one source can send one destination
  p.hi = (H_CNT + p.El + MAX_CHUNKS + 1) / 2 * 2;
  p.row = (size_t)p.H * sizeof(cuco_t);
  const size_t hdrs = (size_t)p.world * p.hi * 8;
  p.hdr_in = 0;                                                   // [world] headers, by source
  p.hdr_out = hdrs;                                               // [world] headers, by destination
  p.allhdr = 2 * hdrs;                                            // [world][world] (host_nccl)
  p.recv = p.allhdr + (size_t)p.world * hdrs;                     // [world][cap] rows in, results in place
  p.comb = align16(p.recv + (size_t)p.world * p.cap * p.row);     // [world][cap] results back
  p.send = align16(p.comb + (size_t)p.world * p.cap * p.row);     // [T*K + cap] rows packed by destination
  p.ws_cnt = 0;                                                   // [E] rows per expert
  p.ws_seg = align16(p.ws_cnt + (size_t)p.E * 4);                 // [E] segment start in its block
  p.ws_base = align16(p.ws_seg + (size_t)p.E * 4);                // [world] block start in SEND
  p.ws_pos = align16(p.ws_base + (size_t)p.world * 4);            // [T*K] COMB row (d * cap + r) of a pair
  p.ws_tok = align16(p.ws_pos + (size_t)p.T * p.K * 4);           // [T*K] token of a SEND row
  p.ws_within = align16(p.ws_tok + (size_t)p.T * p.K * 4);        // [T*K] index inside its segment
  p.ws_scratch = align16(p.ws_within + (size_t)p.T * p.K * 4);    // [MAX_WORKERS][SCRATCH_ROWS][F] fp32
  return p;
}

static __host__ __device__ __forceinline__ char* symm_at(const cuco_ctx& c, size_t off) {
  return static_cast<char*>(c.symm) + off;
}
static __host__ __device__ __forceinline__ int* ws_ints(const cuco_ctx& c, size_t off) {
  return reinterpret_cast<int*>(static_cast<char*>(c.workspace) + off);
}
static __host__ __device__ __forceinline__ int64_t* hdr_out(const cuco_ctx& c, const Problem& p, int d) {
  return reinterpret_cast<int64_t*>(symm_at(c, p.hdr_out + (size_t)d * p.hi * 8));
}
static __host__ __device__ __forceinline__ size_t send_off(const Problem& p, int64_t r) { return p.send + r * p.row; }
"""

CONSTANTS = r"""
// EVOLVE-BLOCK-START
#define CHUNK_BYTES @CHUNK_BYTES@
#define COMM_CTAS @COMM_CTAS@
#define THREADS 256
#define BM 32  // rows per expert tile (<= SCRATCH_ROWS)
#define BN 32
#define BK 32
#define ALL_ROWS ((int64_t)1 << 62)

// Signal slots (GIN signals on gin, the signal pad otherwise) and private counters (pad).
#define SLOT_HDR(s) (s)
#define SLOT_DPEER(s) (CUCO_MAX_RANKS + (s))
#define SLOT_CPEER(d) (2 * CUCO_MAX_RANKS + (d))
#define SLOT_DALL (3 * CUCO_MAX_RANKS)
#define SLOT_CALL (3 * CUCO_MAX_RANKS + 1)
#define SLOT_LAYOUT (3 * CUCO_MAX_RANKS + 2)
#define SLOT_DTILE(s, q) (4 * CUCO_MAX_RANKS + (s) * MAX_CHUNKS + (int)(q))
#define SLOT_CTILE(d, q) (4 * CUCO_MAX_RANKS + (CUCO_MAX_RANKS + (d)) * MAX_CHUNKS + (int)(q))
// Rows ever exchanged with rank d, in total and per chunk: what this rank sent d equals what d
// sends back, so one set serves the dispatch header and the combine waits.
#define PRIV_PEER(d) (8192 + (d))
#define PRIV_CHUNK(d, q) (8192 + CUCO_MAX_RANKS + (d) * MAX_CHUNKS + (int)(q))

// Rows per chunk of a pair exchanging `count` rows: CHUNK_BYTES worth, at least one row, at most
// MAX_CHUNKS chunks. Both ends compute it from the count in the header.
static __host__ __device__ __forceinline__ int64_t chunk_rows(const Problem& p, int64_t count) {
  int64_t rows = CHUNK_BYTES / (int64_t)p.row;
  if (rows < 1) rows = 1;
  const int64_t at_least = (count + MAX_CHUNKS - 1) / MAX_CHUNKS;
  return rows > at_least ? rows : at_least;
}
static __host__ __device__ __forceinline__ int64_t num_chunks(const Problem& p, int64_t count) {
  const int64_t rows = chunk_rows(p, count);
  return (count + rows - 1) / rows;
}
static __host__ __device__ __forceinline__ int64_t chunk_len(const Problem& p, int64_t count, int64_t q) {
  const int64_t rows = chunk_rows(p, count), lo = q * rows;
  return lo >= count ? 0 : (count - lo < rows ? count - lo : rows);
}
static __host__ __device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static __host__ __device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// Workers (CTAs) of the expert and final kernels: the SMs communication leaves, one CTA each, so
// kernels that wait on signals never starve the kernels that send them.
static int workers(const cuco_ctx& c) {
  const int w = c.num_sms - COMM_CTAS;
  return w < 1 ? 1 : (w < MAX_WORKERS ? w : MAX_WORKERS);
}
"""

# Where a source's header and rows live: by source rank (default), or by ring distance for the
# library's send/recv shifts, where both ends of a shift must name the same offset.
BLOCKS_BY_RANK = r"""
static __host__ __device__ __forceinline__ const int64_t* hdr_in(const cuco_ctx& c, const Problem& p, int s) {
  return reinterpret_cast<const int64_t*>(symm_at(c, p.hdr_in + (size_t)s * p.hi * 8));
}
static __host__ __device__ __forceinline__ int recv_block(const Problem&, int s) { return s; }
static __host__ __device__ __forceinline__ int comb_block(const Problem&, int d) { return d; }
"""

BLOCKS_BY_SHIFT = r"""
// Every rank's headers were all-gathered: rank s's header for this rank is allhdr[s][rank].
static __host__ __device__ __forceinline__ const int64_t* hdr_in(const cuco_ctx& c, const Problem& p, int s) {
  return reinterpret_cast<const int64_t*>(symm_at(c, p.allhdr + ((size_t)s * p.world + p.rank) * p.hi * 8));
}
// Send/recv shift i moves block i: rows from rank - i land in RECV block i, results from rank + i
// in COMB block i, so both ends of a shift name the same offset.
static __host__ __device__ __forceinline__ int recv_block(const Problem& p, int s) {
  return (p.rank - s + p.world) % p.world;
}
static __host__ __device__ __forceinline__ int comb_block(const Problem& p, int d) {
  return (d - p.rank + p.world) % p.world;
}
"""

LAYOUT = r"""
static __host__ __device__ __forceinline__ size_t recv_off(const Problem& p, int blk, int64_t r) {
  return p.recv + ((size_t)blk * p.cap + r) * p.row;
}
static __host__ __device__ __forceinline__ size_t comb_off(const Problem& p, int blk, int64_t r) {
  return p.comb + ((size_t)blk * p.cap + r) * p.row;
}
static __device__ __forceinline__ int expert_of(const cuco_t* route, const Problem& p, int64_t pair) {
  const int e = (int)cuco_to_float(route[(pair / p.K) * 2 * p.K + pair % p.K]);
  return e < 0 ? 0 : (e >= (int)p.E ? (int)p.E - 1 : e);
}

// Routing -> where every (token, choice) pair goes; one CTA. A destination's pairs are packed by
// its local expert, in whatever order the atomics give: a row's result does not depend on its
// position. Advances the private cumulative counters that become the signal targets.
static __device__ void layout_cta(const cuco_ctx& c, const Problem& p) {
  int* cnt = ws_ints(c, p.ws_cnt);
  int* seg = ws_ints(c, p.ws_seg);
  int* base = ws_ints(c, p.ws_base);
  int* pos = ws_ints(c, p.ws_pos);
  int* tok = ws_ints(c, p.ws_tok);
  int* within = ws_ints(c, p.ws_within);
  const cuco_t* route = static_cast<const cuco_t*>(c.in[1]);
  const int tid = threadIdx.x, nt = blockDim.x;
  const int64_t pairs = p.T * p.K;
  for (int64_t e = tid; e < p.E; e += nt) cnt[e] = 0;
  __syncthreads();
  for (int64_t i = tid; i < pairs; i += nt) within[i] = atomicAdd(&cnt[expert_of(route, p, i)], 1);
  __syncthreads();
  for (int d = tid; d < p.world; d += nt) {
    int64_t* h = hdr_out(c, p, d);
    int64_t off = 0;
    for (int64_t le = 0; le < p.El; ++le) {
      seg[d * p.El + le] = (int)off;
      h[H_CNT + le] = cnt[d * p.El + le];
      off += cnt[d * p.El + le];
    }
    h[H_COUNT] = off;
    h[H_PEER] = (int64_t)(c.signals[PRIV_PEER(d)] += (uint64_t)off);  // only this thread touches them
    for (int q = 0; q < MAX_CHUNKS; ++q)
      h[H_CNT + p.El + q] = (int64_t)(c.signals[PRIV_CHUNK(d, q)] += (uint64_t)chunk_len(p, off, q));
    for (int64_t w = H_CNT + p.El + MAX_CHUNKS; w < p.hi; ++w) h[w] = 0;
  }
  __syncthreads();
  if (tid == 0) {
    int off = 0;
    for (int d = 0; d < p.world; ++d) {
      base[d] = off;
      off += (int)hdr_out(c, p, d)[H_COUNT];
    }
  }
  __syncthreads();
  for (int64_t i = tid; i < pairs; i += nt) {
    const int e = expert_of(route, p, i), d = e / (int)p.El, r = seg[e] + within[i];
    pos[i] = d * (int)p.cap + r;
    tok[base[d] + r] = (int)(i / p.K);
  }
  __syncthreads();
}
"""

EXPERT = r"""
struct Tile {
  int64_t le, a, b;  // local expert, rows [a, b) of a source's block
};
// Tiles of one source's block: each local expert's segment clipped to [lo, hi), cut into BM rows.
static __device__ int64_t tile_count(const Problem& p, const int64_t* h, int64_t lo, int64_t hi) {
  int64_t n = 0, off = 0;
  for (int64_t le = 0; le < p.El; ++le) {
    const int64_t a = imax(off, lo), b = imin(off + h[H_CNT + le], hi);
    if (b > a) n += (b - a + BM - 1) / BM;
    off += h[H_CNT + le];
  }
  return n;
}
static __device__ Tile tile_at(const Problem& p, const int64_t* h, int64_t lo, int64_t hi, int64_t t) {
  int64_t off = 0;
  for (int64_t le = 0; le < p.El; ++le) {
    const int64_t a = imax(off, lo), b = imin(off + h[H_CNT + le], hi);
    const int64_t n = b > a ? (b - a + BM - 1) / BM : 0;
    if (t < n) return Tile{le, a + t * BM, imin(a + (t + 1) * BM, b)};
    t -= n;
    off += h[H_CNT + le];
  }
  return Tile{0, 0, 0};
}

// One tile of local expert le: rows [a, b) of source s's block. The intermediate silu(X @ W1)
// stays fp32 in this worker's scratch; the result overwrites the tile's own input rows.
static __device__ void expert_tile(const cuco_ctx& c, const Problem& p, int s, Tile x, float* hbuf) {
  __shared__ float As[BM][BK + 1];
  __shared__ float Bs[BK][BN + 1];
  cuco_t* rows = reinterpret_cast<cuco_t*>(symm_at(c, recv_off(p, recv_block(p, s), x.a)));
  const cuco_t* w1 = static_cast<const cuco_t*>(c.in[2]) + x.le * p.H * p.F;
  const cuco_t* w2 = static_cast<const cuco_t*>(c.in[3]) + x.le * p.F * p.H;
  const int n = (int)(x.b - x.a), tid = threadIdx.x, tx = tid % BN, ty = tid / BN;
  for (int64_t col0 = 0; col0 < p.F; col0 += BN) {  // GEMM 1: hbuf[n][F] = silu(rows @ w1)
    float acc[BM / 8];
    for (int j = 0; j < BM / 8; ++j) acc[j] = 0.f;
    for (int64_t k0 = 0; k0 < p.H; k0 += BK) {
      for (int i = tid; i < BM * BK; i += THREADS) {
        const int r = i / BK, k = i % BK;
        As[r][k] = (r < n && k0 + k < p.H) ? cuco_to_float(rows[r * p.H + k0 + k]) : 0.f;
      }
      for (int i = tid; i < BK * BN; i += THREADS) {
        const int k = i / BN, j = i % BN;
        Bs[k][j] = (k0 + k < p.H && col0 + j < p.F) ? cuco_to_float(w1[(k0 + k) * p.F + col0 + j]) : 0.f;
      }
      __syncthreads();
      for (int k = 0; k < BK; ++k)
        for (int j = 0; j < BM / 8; ++j) acc[j] += As[ty + 8 * j][k] * Bs[k][tx];
      __syncthreads();
    }
    for (int j = 0; j < BM / 8; ++j)
      if (ty + 8 * j < n && col0 + tx < p.F) hbuf[(ty + 8 * j) * p.F + col0 + tx] = acc[j] / (1.f + expf(-acc[j]));
  }
  __syncthreads();  // every read of the input rows is done: the result may overwrite them
  for (int64_t col0 = 0; col0 < p.H; col0 += BN) {  // GEMM 2: rows[n][H] = hbuf @ w2
    float acc[BM / 8];
    for (int j = 0; j < BM / 8; ++j) acc[j] = 0.f;
    for (int64_t k0 = 0; k0 < p.F; k0 += BK) {
      for (int i = tid; i < BM * BK; i += THREADS) {
        const int r = i / BK, k = i % BK;
        As[r][k] = (r < n && k0 + k < p.F) ? hbuf[r * p.F + k0 + k] : 0.f;
      }
      for (int i = tid; i < BK * BN; i += THREADS) {
        const int k = i / BN, j = i % BN;
        Bs[k][j] = (k0 + k < p.F && col0 + j < p.H) ? cuco_to_float(w2[(k0 + k) * p.H + col0 + j]) : 0.f;
      }
      __syncthreads();
      for (int k = 0; k < BK; ++k)
        for (int j = 0; j < BM / 8; ++j) acc[j] += As[ty + 8 * j][k] * Bs[k][tx];
      __syncthreads();
    }
    for (int j = 0; j < BM / 8; ++j)
      if (ty + 8 * j < n && col0 + tx < p.H) rows[(ty + 8 * j) * p.H + col0 + tx] = cuco_from_float<cuco_t>(acc[j]);
  }
  __syncthreads();
}

// Expert tiles of the sources at ring steps [i0, i1) (step i: source rank - i), rows [lo, hi) of
// each source's block; tile t of a source goes to worker t % workers. `wait`: wait for the
// header and rows on device signals; `push`: send each finished tile home at once.
static __device__ void run_experts(const cuco_ctx& c, const Problem& p, int i0, int i1, int64_t lo, int64_t hi,
                                   bool wait, bool push, int worker, int workers) {
  float* hbuf = reinterpret_cast<float*>(static_cast<char*>(c.workspace) + p.ws_scratch) +
                (size_t)worker * SCRATCH_ROWS * p.F;
  for (int i = i0; i < i1; ++i) {
    const int s = (p.rank - i + p.world) % p.world;
    if (wait) {
      if (threadIdx.x == 0) wait_header(c, p, s);
      __syncthreads();
    }
    const int64_t* h = hdr_in(c, p, s);
    const int64_t tiles = tile_count(p, h, lo, hi);
    for (int64_t t = worker; t < tiles; t += workers) {
      const Tile x = tile_at(p, h, lo, hi, t);
      if (wait) {
        if (threadIdx.x == 0) wait_rows(c, p, s, h, x.a, x.b);
        __syncthreads();
      }
      expert_tile(c, p, s, x, hbuf);
      if (push) combine_rows(c, p, s, h, x.a, x.b);
    }
  }
  if (push) flush_puts(c);
}
"""

FINAL = r"""
// out[t] = sum_j w[t][j] * result of pair (t, j): fp32 in choice order, rounded once.
static __device__ void final_tokens(const cuco_ctx& c, const Problem& p, bool wait, int worker, int workers) {
  const int* pos = ws_ints(c, p.ws_pos);
  const cuco_t* route = static_cast<const cuco_t*>(c.in[1]);
  cuco_t* out = static_cast<cuco_t*>(c.out[0]);
  for (int64_t t = worker; t < p.T; t += workers) {
    if (wait) {
      if (threadIdx.x == 0) wait_results(c, p, t);
      __syncthreads();
    }
    for (int64_t col = threadIdx.x; col < p.H; col += blockDim.x) {
      float acc = 0.f;
      for (int64_t j = 0; j < p.K; ++j) {
        const int at = pos[t * p.K + j], d = at / (int)p.cap;
        const cuco_t* res = reinterpret_cast<const cuco_t*>(symm_at(c, comb_off(p, comb_block(p, d), at % p.cap)));
        acc += cuco_to_float(route[t * 2 * p.K + p.K + j]) * cuco_to_float(res[col]);
      }
      out[t * p.H + col] = cuco_from_float<cuco_t>(acc);
    }
  }
}
"""

KERNELS_COMPUTE = r"""
__global__ void __launch_bounds__(THREADS) expert_kernel(cuco_ctx c, int i0, int i1, int64_t lo, int64_t hi, int wait,
                                                         int push) {
  run_experts(c, problem(c), i0, i1, lo, hi, wait != 0, push != 0, blockIdx.x, gridDim.x);
}

__global__ void __launch_bounds__(THREADS) final_kernel(cuco_ctx c, int wait) {
  final_tokens(c, problem(c), wait != 0, blockIdx.x, gridDim.x);
}
"""
