"""CUDA text of the GEMM + reduce-scatter family: signals, pushes and the multimem reduction.

Push backends (lsa, gin) move chunk ch of row block d from STAGE here to RECV[rank] on rank d
and signal arrival slot (source, chunk) or (source); the owner waits before it sums. multimem
moves nothing: each rank's GEMM tiles tell the owner their STAGE rows are ready and the owner
reads the sum over ranks through the switch (cuco_mm_ld_reduce).
"""

# --- what a finished GEMM tile does -------------------------------------------------------------

TILE_DONE_NONE = r"""
// Stream order alone tells the consumers that STAGE is written.
static __device__ __forceinline__ void tile_done(const cuco_ctx&, const Problem&, const Tile&) {}
static __device__ __forceinline__ void wait_ready(const cuco_ctx&, const Problem&, int, int64_t) {}
"""

TILE_DONE_READY = r"""
// fused: a finished tile counts towards its band's local ready slot (col_tiles per call); the
// comm CTAs push a chunk once every band overlapping it is complete.
static __device__ __forceinline__ void tile_done(const cuco_ctx& c, const Problem& p, const Tile& x) {
  __syncthreads();
  if (threadIdx.x == 0) cuco_signal_add(c, p.rank, READY_BASE + (int)(x.d * num_bands(p) + x.band), 1);
}
static __device__ __forceinline__ void wait_ready(const cuco_ctx& c, const Problem& p, int d, int64_t ch) {
  for (int64_t b = band_of(chunk_lo(p, ch)); b <= band_of(chunk_hi(p, ch) - 1); ++b)
    cuco_wait(c, READY_BASE + (int)(d * num_bands(p) + b), c.epoch * (uint64_t)col_tiles(p));
}
"""

TILE_DONE_OWNER_PER_TILE = r"""
// multimem, per_tile_signal: each finished tile tells the owner of its rows, slot (source, band);
// the owner reduces a chunk once every rank completed the bands overlapping it.
static __device__ __forceinline__ void tile_done(const cuco_ctx& c, const Problem& p, const Tile& x) {
  __syncthreads();
  if (threadIdx.x == 0) cuco_signal_add(c, x.d, (int)(p.rank * num_bands(p) + x.band), 1);
}
static __device__ void wait_partials(const cuco_ctx& c, const Problem& p, int64_t ch) {
  for (int i = 0; i < p.world; ++i)
    for (int64_t b = band_of(chunk_lo(p, ch)); b <= band_of(chunk_hi(p, ch) - 1); ++b)
      cuco_wait(c, (int)(((p.rank + i) % p.world) * num_bands(p) + b), c.epoch * (uint64_t)col_tiles(p));
}
"""

TILE_DONE_OWNER_PER_PEER = r"""
// multimem, per_peer_signal: slot (source) counts every tile a rank computed of this rank's block.
static __device__ __forceinline__ void tile_done(const cuco_ctx& c, const Problem& p, const Tile& x) {
  __syncthreads();
  if (threadIdx.x == 0) cuco_signal_add(c, x.d, p.rank, 1);
}
static __device__ void wait_partials(const cuco_ctx& c, const Problem& p, int64_t) {
  const uint64_t want = c.epoch * (uint64_t)(num_bands(p) * col_tiles(p));
  for (int i = 0; i < p.world; ++i) cuco_wait(c, (p.rank + i) % p.world, want);
}
"""

TILE_DONE_OWNER_GLOBAL = r"""
// multimem, global_barrier: a cross-rank barrier says every rank's STAGE is written.
static __device__ __forceinline__ void tile_done(const cuco_ctx&, const Problem&, const Tile&) {}
static __device__ __forceinline__ void wait_partials(const cuco_ctx&, const Problem&, int64_t) {}
"""

# --- arrival signals of pushed chunks ---------------------------------------------------------

ARRIVAL_LSA_PER_TILE = r"""
// per_tile_signal: slot (source, chunk) counts one arrival per call; a band waits for the
// chunks overlapping its rows.
static __device__ __forceinline__ void signal_arrival(const cuco_ctx& c, const Problem& p, int peer, int64_t ch) {
  cuco_signal_add(c, peer, p.rank * MAX_CHUNKS + (int)ch, 1);
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t lo, int64_t hi) {
  const int64_t rows = chunk_rows(p);
  for (int64_t ch = lo / rows; ch <= (hi - 1) / rows; ++ch) cuco_wait(c, src * MAX_CHUNKS + (int)ch, c.epoch);
}
"""

ARRIVAL_LSA_PER_PEER = r"""
// per_peer_signal: slot (source) counts one arrival per chunk, num_chunks per call.
static __device__ __forceinline__ void signal_arrival(const cuco_ctx& c, const Problem& p, int peer, int64_t) {
  cuco_signal_add(c, peer, p.rank, 1);
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t, int64_t) {
  cuco_wait(c, src, c.epoch * (uint64_t)num_chunks(p));
}
"""

ARRIVAL_NONE = r"""
// global_barrier (or waits on the host stream): no per-chunk signals in the kernels.
static __device__ __forceinline__ void signal_arrival(const cuco_ctx&, const Problem&, int, int64_t) {}
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, int64_t, int64_t) {}
"""

ARRIVAL_CE_PER_TILE = r"""
// copy_engine, per_tile_signal: the copy stream adds to slot (source, chunk) after each chunk's
// copy (cuco_ce_signal); a band waits in-kernel for the chunks overlapping its rows.
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t lo, int64_t hi) {
  const int64_t rows = chunk_rows(p);
  for (int64_t ch = lo / rows; ch <= (hi - 1) / rows; ++ch) cuco_wait(c, src * MAX_CHUNKS + (int)ch, c.epoch);
}
"""

# GIN: the put itself adds to the owner's GIN signal once the bytes have landed; the destination
# may be read only after cuco_gin_wait, so even global_barrier waits on the signals first.
ARRIVAL_GIN_PER_TILE = r"""
// per_tile_signal: GIN slot (source, chunk) counts one landed put per call.
static __device__ __forceinline__ int arrival_slot(const Problem& p, int64_t ch) {
  return p.rank * MAX_CHUNKS + (int)ch;
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t lo, int64_t hi) {
  const int64_t rows = chunk_rows(p);
  for (int64_t ch = lo / rows; ch <= (hi - 1) / rows; ++ch) cuco_gin_wait(c, src * MAX_CHUNKS + (int)ch, c.epoch);
}
"""

ARRIVAL_GIN_PER_PEER = r"""
// per_peer_signal: GIN slot (source) counts landed puts, num_chunks per call.
static __device__ __forceinline__ int arrival_slot(const Problem& p, int64_t) { return p.rank; }
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t, int64_t) {
  cuco_gin_wait(c, src, c.epoch * (uint64_t)num_chunks(p));
}
"""

ARRIVAL_GIN_GLOBAL = r"""
// global_barrier: puts count into GIN slot (source); the barrier kernel waits for all of them.
static __device__ __forceinline__ int arrival_slot(const Problem& p, int64_t) { return p.rank; }
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, int64_t, int64_t) {}
"""

BARRIER = r"""
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) { cuco_barrier(c, 0); }
"""

BARRIER_GIN = r"""
// Every put to this rank has landed (GIN signals), then all ranks meet.
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  if (threadIdx.x == 0)
    for (int i = 1; i < p.world; ++i) cuco_gin_wait(c, (p.rank + i) % p.world, c.epoch * (uint64_t)num_chunks(p));
  cuco_barrier(c, 0);
}
"""

# --- pushes: lsa (peer stores) and gin (NIC puts) per issuer ----------------------------------

PUSH_ITEM = r"""
// Push item -> (peer, chunk): peer-major, nearest ring neighbour first, the GEMM's order.
static __device__ __forceinline__ void push_item(const Problem& p, int64_t ch0, int64_t nch, int64_t item, int* peer,
                                                 int64_t* ch) {
  *peer = (p.rank + 1 + (int)(item / nch)) % p.world;
  *ch = ch0 + item % nch;
}
"""

_PUSH_HEAD = r"""static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta,
                                   int ncta) {
  const int64_t nch = ch1 - ch0, items = (int64_t)(p.world - 1) * nch;
"""

PUSH_LSA_CTA = r"""
// lsa, issuer cta: a whole CTA stores one chunk into the owner's RECV; one thread signals.
""" + _PUSH_HEAD + r"""  const char* stage = static_cast<const char*>(c.symm);
  for (int64_t item = cta; item < items; item += ncta) {
    int peer;
    int64_t ch;
    push_item(p, ch0, nch, item, &peer, &ch);
    if (threadIdx.x == 0) wait_ready(c, p, peer, ch);
    __syncthreads();
    cuco_put_cta(c, peer, chunk_dst(p, ch), stage + chunk_src(p, peer, ch), chunk_size(p, ch));
    __syncthreads();
    if (threadIdx.x == 0) signal_arrival(c, p, peer, ch);
  }
}
"""

PUSH_LSA_WARP = r"""
// lsa, issuer warp: each warp stores whole chunks on its own; lane 0 signals.
""" + _PUSH_HEAD + r"""  const char* stage = static_cast<const char*>(c.symm);
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t item = (int64_t)cta * warps + threadIdx.x / 32; item < items; item += (int64_t)ncta * warps) {
    int peer;
    int64_t ch;
    push_item(p, ch0, nch, item, &peer, &ch);
    if (lane == 0) wait_ready(c, p, peer, ch);
    __syncwarp();
    cuco_put_warp(c, peer, chunk_dst(p, ch), stage + chunk_src(p, peer, ch), chunk_size(p, ch));
    __syncwarp();
    if (lane == 0) signal_arrival(c, p, peer, ch);
  }
}
"""

PUSH_LSA_THREAD = r"""
// lsa, issuer thread: each thread stores whole chunks by itself and signals them.
""" + _PUSH_HEAD + r"""  const char* stage = static_cast<const char*>(c.symm);
  for (int64_t item = (int64_t)cta * blockDim.x + threadIdx.x; item < items; item += (int64_t)ncta * blockDim.x) {
    int peer;
    int64_t ch;
    push_item(p, ch0, nch, item, &peer, &ch);
    wait_ready(c, p, peer, ch);
    cuco_put_thread(c, peer, chunk_dst(p, ch), stage + chunk_src(p, peer, ch), chunk_size(p, ch));
    signal_arrival(c, p, peer, ch);
  }
}
"""

# One issuing thread per put; STAGE is rewritten by the next call's GEMM, so every issuer flushes.
_GIN_LOOP = r"""  for (int64_t item = worker; item < items; item += workers) {
    int peer;
    int64_t ch;
    push_item(p, ch0, nch, item, &peer, &ch);
    wait_ready(c, p, peer, ch);
    cuco_gin_put(c, gctx, peer, chunk_dst(p, ch), chunk_src(p, peer, ch), chunk_size(p, ch), arrival_slot(p, ch), 1);
  }
  cuco_gin_flush(c, gctx);  // the source (STAGE) may change only after this
}
"""

PUSH_GIN_CTA = r"""
// gin, issuer cta: thread 0 of each CTA hands whole chunks to the NIC (put + remote signal).
""" + _PUSH_HEAD + r"""  if (threadIdx.x != 0) return;
  const int64_t worker = cta, workers = ncta;
  const int gctx = cta % CUCO_GIN_CONTEXTS;
""" + _GIN_LOOP

PUSH_GIN_WARP = r"""
// gin, issuer warp: lane 0 of each warp hands whole chunks to the NIC.
""" + _PUSH_HEAD + r"""  if (threadIdx.x % 32 != 0) return;
  const int warps = blockDim.x / 32;
  const int64_t worker = (int64_t)cta * warps + threadIdx.x / 32, workers = (int64_t)ncta * warps;
  const int gctx = (int)(worker % CUCO_GIN_CONTEXTS);
""" + _GIN_LOOP

PUSH_GIN_THREAD = r"""
// gin, issuer thread: every thread hands its own chunks to the NIC.
""" + _PUSH_HEAD + r"""  const int64_t worker = (int64_t)cta * blockDim.x + threadIdx.x;
  const int64_t workers = (int64_t)ncta * blockDim.x;
  const int gctx = (int)(worker % CUCO_GIN_CONTEXTS);
""" + _GIN_LOOP

PUSH_KERNEL = r"""
__global__ void __launch_bounds__(THREADS) push_kernel(cuco_ctx c, int64_t ch0, int64_t ch1) {
  push_chunks(c, problem(c), ch0, ch1, blockIdx.x, gridDim.x);
}
"""

# --- multimem: the owner reads the sum over ranks through the switch -------------------------

MM_REDUCE_CHUNK = r"""
// Own chunk ch: C rows [lo, hi) = sum over ranks of their STAGE rows, reduced in the NVSwitch;
// the `width` threads of a group share the chunk's elements, two at a time where aligned (the
// switch reduces 16-bit types only as pairs).
static __device__ void reduce_chunk(const cuco_ctx& c, const Problem& p, int64_t ch, unsigned lane, unsigned width) {
  const int64_t lo = chunk_lo(p, ch), count = (chunk_hi(p, ch) - lo) * p.N, first = stage_off(p, p.rank, lo);
  cuco_t* C = static_cast<cuco_t*>(c.out[0]) + lo * p.N;
  const int64_t pairs = (first % 2 == 0 && count % 2 == 0) ? count / 2 : 0;
  for (int64_t i = lane; i < pairs; i += width) {
    const float2 v = cuco_mm_ld_reduce2(c, (size_t)(first + 2 * i) * sizeof(cuco_t));
    C[2 * i] = cuco_from_float<cuco_t>(v.x);
    C[2 * i + 1] = cuco_from_float<cuco_t>(v.y);
  }
  for (int64_t i = 2 * pairs + lane; i < count; i += width)
    C[i] = cuco_from_float<cuco_t>(cuco_mm_ld_reduce(c, (size_t)(first + i) * sizeof(cuco_t)));
}
"""

_MM_HEAD = r"""static __device__ void reduce_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta,
                                     int ncta) {
"""

MM_CTA = r"""
// issuer cta: a whole CTA reduces one chunk once thread 0 saw every rank's partial of it.
""" + _MM_HEAD + r"""  for (int64_t ch = ch0 + cta; ch < ch1; ch += ncta) {
    if (threadIdx.x == 0) wait_partials(c, p, ch);
    __syncthreads();
    reduce_chunk(c, p, ch, threadIdx.x, blockDim.x);
  }
}
"""

MM_WARP = r"""
// issuer warp: each warp reduces whole chunks; lane 0 waits.
""" + _MM_HEAD + r"""  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t ch = ch0 + (int64_t)cta * warps + threadIdx.x / 32; ch < ch1; ch += (int64_t)ncta * warps) {
    if (lane == 0) wait_partials(c, p, ch);
    __syncwarp();
    reduce_chunk(c, p, ch, lane, 32);
  }
}
"""

MM_THREAD = r"""
// issuer thread: each thread waits for and reduces whole chunks by itself.
""" + _MM_HEAD + r"""  const int64_t first = (int64_t)cta * blockDim.x + threadIdx.x, step = (int64_t)ncta * blockDim.x;
  for (int64_t ch = ch0 + first; ch < ch1; ch += step) {
    wait_partials(c, p, ch);
    reduce_chunk(c, p, ch, 0, 1);
  }
}
"""

REDUCE_KERNEL = r"""
__global__ void __launch_bounds__(THREADS) reduce_kernel(cuco_ctx c, int64_t ch0, int64_t ch1) {
  reduce_chunks(c, problem(c), ch0, ch1, blockIdx.x, gridDim.x);
}
"""

# --- fused persistent kernels -----------------------------------------------------------------

FUSED_PUSH = r"""
// One persistent kernel: CTAs [0, COMM_CTAS) push chunks as their tiles complete; the others
// compute the peers' row blocks, then their own partial tiles and sum in what has arrived.
__global__ void __launch_bounds__(THREADS) fused_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  const int64_t nch = num_chunks(p);
  if ((int)blockIdx.x < COMM_CTAS) {
    push_chunks(c, p, 0, nch, blockIdx.x, COMM_CTAS);
    return;
  }
  const int worker = blockIdx.x - COMM_CTAS, workers = gridDim.x - COMM_CTAS;
  run_gemm(c, p, TileRange{1, p.world, 0, num_bands(p)}, worker, workers);
  finish_tiles(c, p, 0, num_bands(p), false, true, worker, workers);
}
"""

FUSED_MULTIMEM = r"""
// One persistent kernel: compute CTAs write every row block's partial (own last) and signal its
// owner per tile; CTAs [0, COMM_CTAS) reduce this rank's chunks through the switch.
__global__ void __launch_bounds__(THREADS) fused_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  const int64_t nch = num_chunks(p);
  if ((int)blockIdx.x < COMM_CTAS) {
    reduce_chunks(c, p, 0, nch, blockIdx.x, COMM_CTAS);
    return;
  }
  run_gemm(c, p, TileRange{1, p.world + 1, 0, num_bands(p)}, blockIdx.x - COMM_CTAS, gridDim.x - COMM_CTAS);
}
"""
