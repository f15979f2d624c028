"""CUDA text of the all-gather + GEMM family's communication: which signal slot a chunk raises
and how a consumer waits for it (per sync scope and backend), who issues a transfer (issuer), and
how a chunk travels (backend: lsa peer stores, GIN puts, multimem broadcast, copy engines)."""

# ---------------------------------------------------------------- sync scope: slots and waits
# chunk_slot: the slot of the destination's pad (or GIN signals) that this rank's chunk raises by
# one, -1 for none; wait_rows: what a consumer tile waits for before reading rows [lo, hi) of src.
SIGNAL_PER_TILE = r"""
// per_tile_signal: slot (source rank, chunk) counts one arrival per call.
static __host__ __device__ __forceinline__ int chunk_slot(const cuco_ctx& c, int64_t chunk) {
  return (int)(c.rank * MAX_CHUNKS + chunk);
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t lo, int64_t hi) {
  const int64_t rows = chunk_rows(p);
  for (int64_t ch = lo / rows; ch <= (hi - 1) / rows; ++ch) wait_signal(c, (int)(src * MAX_CHUNKS + ch), c.epoch);
}
"""

SIGNAL_PER_PEER = r"""
// per_peer_signal: slot (source rank) counts one arrival per chunk, num_chunks per call.
static __host__ __device__ __forceinline__ int chunk_slot(const cuco_ctx& c, int64_t) { return c.rank; }
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int src, int64_t, int64_t) {
  wait_signal(c, src, c.epoch * (uint64_t)num_chunks(p));
}
"""

SIGNAL_GLOBAL = r"""
// global_barrier: no per-chunk signals; a cross-rank barrier follows the whole transfer.
static __host__ __device__ __forceinline__ int chunk_slot(const cuco_ctx&, int64_t) { return -1; }
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, int64_t, int64_t) {}

__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) { cuco_barrier(c, 0); }
"""

# GIN puts complete asynchronously: a barrier says nothing about them, so the "barrier" of the
# GIN family is the arrival of every peer's puts, counted per source rank.
SIGNAL_GLOBAL_GIN = r"""
// global_barrier over GIN: every chunk's put counts on slot (source rank); the barrier is waiting
// until every peer's whole shard has landed.
static __host__ __device__ __forceinline__ int chunk_slot(const cuco_ctx& c, int64_t) { return c.rank; }
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, int64_t, int64_t) {}

__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  if (threadIdx.x == 0)
    for (int src = 0; src < c.world; ++src)
      if (src != c.rank) cuco_gin_wait(c, src, c.epoch * (uint64_t)num_chunks(p));
}
"""

WAIT_PAD = r"""
// Signals live in the signal pad.
static __device__ __forceinline__ void wait_signal(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_wait(c, slot, at_least);
}
"""

WAIT_GIN = r"""
// Signals are GIN signals, raised by the puts themselves when their data has landed.
static __device__ __forceinline__ void wait_signal(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_gin_wait(c, slot, at_least);
}
"""

# ---------------------------------------------------------------- issuer: who moves a chunk
ISSUER_CTA = r"""
// issuer cta: a whole CTA moves one chunk; thread 0 signals.
struct Group {
  int64_t index, count;
  unsigned lane, width;
};
static __device__ __forceinline__ Group issuer_group(int cta, int ncta) { return Group{cta, ncta, threadIdx.x, blockDim.x}; }
static __device__ __forceinline__ void group_sync() { __syncthreads(); }
"""

ISSUER_WARP = r"""
// issuer warp: each warp moves whole chunks on its own; lane 0 signals.
struct Group {
  int64_t index, count;
  unsigned lane, width;
};
static __device__ __forceinline__ Group issuer_group(int cta, int ncta) {
  const int warps = blockDim.x / 32;
  return Group{(int64_t)cta * warps + threadIdx.x / 32, (int64_t)ncta * warps, threadIdx.x % 32, 32};
}
static __device__ __forceinline__ void group_sync() { __syncwarp(); }
"""

ISSUER_THREAD = r"""
// issuer thread: each thread moves whole chunks by itself and signals them.
struct Group {
  int64_t index, count;
  unsigned lane, width;
};
static __device__ __forceinline__ Group issuer_group(int cta, int ncta) {
  return Group{(int64_t)cta * blockDim.x + threadIdx.x, (int64_t)ncta * blockDim.x, 0, 1};
}
static __device__ __forceinline__ void group_sync() {}
"""


# lsa moves bytes with the issuer-sized put of the comm API.
PUT_CTA = r"""
static __device__ __forceinline__ void group_put(const cuco_ctx& c, int peer, size_t off, const void* src, size_t n) {
  cuco_put_cta(c, peer, off, src, n);
}
"""

PUT_WARP = r"""
static __device__ __forceinline__ void group_put(const cuco_ctx& c, int peer, size_t off, const void* src, size_t n) {
  cuco_put_warp(c, peer, off, src, n);
}
"""

PUT_THREAD = r"""
static __device__ __forceinline__ void group_put(const cuco_ctx& c, int peer, size_t off, const void* src, size_t n) {
  cuco_put_thread(c, peer, off, src, n);
}
"""

# ---------------------------------------------------------------- backend: how a chunk travels
# The split placements launch the device-side pushes as their own kernel.
COMM_KERNEL = r"""
__global__ void __launch_bounds__(THREADS) comm_kernel(cuco_ctx c, int64_t ch0, int64_t ch1) {
  push_chunks(c, problem(c), ch0, ch1, blockIdx.x, gridDim.x);
}
static void comm_launch(const cuco_ctx& c, const Problem&, int64_t ch0, int64_t ch1, cudaStream_t s) {
  comm_kernel<<<COMM_CTAS, THREADS, 0, s>>>(c, ch0, ch1);
}
"""

PUSH_LSA = r"""
// lsa: the issuer stores the chunk into each peer's buffer, nearest consumer first (rank r-1
// reads shard r first), then raises the chunk's slot there.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Group g = issuer_group(cta, ncta);
  const int64_t nch = ch1 - ch0, items = (int64_t)(c.world - 1) * nch;
  for (int64_t item = g.index; item < items; item += g.count) {
    const int peer = (c.rank - 1 - (int)(item / nch) + c.world) % c.world;
    const int64_t chunk = ch0 + item % nch;
    const Span s = chunk_span(c, p, chunk);
    group_put(c, peer, s.off, s.src, s.bytes);
    group_sync();
    if (g.lane == 0 && chunk_slot(c, chunk) >= 0) cuco_signal_add(c, peer, chunk_slot(c, chunk), 1);
  }
}
"""

PUSH_GIN = r"""
// gin: puts read from the symmetric buffer, so the issuer first stages its chunk there (at the
// chunk's place in the gathered layout), then posts one put per peer that raises the chunk's
// GIN signal on landing; a flush before returning makes the staged source reusable.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Group g = issuer_group(cta, ncta);
  for (int64_t chunk = ch0 + g.index; chunk < ch1; chunk += g.count) {
    const Span s = chunk_span(c, p, chunk);
    cuco_copy_group(static_cast<char*>(c.symm) + s.off, s.src, s.bytes, g.lane, g.width);
    group_sync();
    if (g.lane == 0)
      for (int d = 1; d < c.world; ++d)
        cuco_gin_put(c, 0, (c.rank - d + c.world) % c.world, s.off, s.off, s.bytes, chunk_slot(c, chunk), 1);
  }
  if (g.lane == 0) cuco_gin_flush(c, 0);
}
"""

PUSH_MULTIMEM = r"""
// multimem: one store through the multicast address writes the chunk into every rank's buffer
// (the switch replicates it), in element pairs where aligned; then the peers are signalled.
static __device__ void mm_broadcast(const cuco_ctx& c, size_t off, const cuco_t* src, int64_t n, unsigned lane,
                                    unsigned width) {
  const size_t el = sizeof(cuco_t);
  int64_t done = 0;
  if ((off / el) % 2 == 0) {
    done = n & ~(int64_t)1;
    for (int64_t i = 2 * (int64_t)lane; i < done; i += 2 * (int64_t)width)
      cuco_mm_st2(c, off + i * el, make_float2(cuco_to_float(src[i]), cuco_to_float(src[i + 1])));
  }
  for (int64_t i = done + lane; i < n; i += width) cuco_mm_st(c, off + i * el, cuco_to_float(src[i]));
}
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Group g = issuer_group(cta, ncta);
  for (int64_t chunk = ch0 + g.index; chunk < ch1; chunk += g.count) {
    const Span s = chunk_span(c, p, chunk);
    mm_broadcast(c, s.off, reinterpret_cast<const cuco_t*>(s.src), (int64_t)(s.bytes / sizeof(cuco_t)), g.lane, g.width);
    group_sync();
    if (g.lane == 0 && chunk_slot(c, chunk) >= 0)
      for (int d = 1; d < c.world; ++d) cuco_signal_add(c, (c.rank - d + c.world) % c.world, chunk_slot(c, chunk), 1);
  }
}
"""

PUSH_COPY_ENGINE = r"""
// copy_engine: the DMA engines copy each chunk to each peer in stream order (no SMs); a one-thread
// kernel after each copy raises the chunk's slot at that peer.
static void comm_launch(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, cudaStream_t s) {
  for (int64_t chunk = ch0; chunk < ch1; ++chunk) {
    const Span sp = chunk_span(c, p, chunk);
    for (int d = 1; d < c.world; ++d) {
      const int peer = (c.rank - d + c.world) % c.world;
      cuco_ce_put(c, peer, sp.off, sp.src, sp.bytes, s);
      if (chunk_slot(c, chunk) >= 0) cuco_ce_signal(c, peer, chunk_slot(c, chunk), 1, s);
    }
  }
}
"""
