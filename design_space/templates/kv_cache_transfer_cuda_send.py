"""CUDA text of the KV-cache transfer family: the device-initiated senders (LSA stores and GIN
puts, per issuer), the comm and persistent kernels. Pieces the renderer composes; see
``kv_cache_transfer_cuda.py`` for the layout they share."""

# Before a chunk goes out: nothing (the host ordered it after its compute) or a wait on this
# rank's own pad until every tile of the chunk has been computed.
READY_NONE = r"""
// The host launched the sender after the compute: a chunk is ready once the partner's buffer is.
static __device__ __forceinline__ void wait_ready(const cuco_ctx& c, const Problem&, const Chunking&, int64_t) {
  take_credit(c);
}
"""

READY_WAIT = r"""
// Wait late: a chunk is ready once the partner's buffer is and all its tiles signalled this
// rank's pad in this call.
static __device__ __forceinline__ void wait_ready(const cuco_ctx& c, const Problem& p, const Chunking& k, int64_t ch) {
  take_credit(c);
  cuco_wait(c, READY_SLOT + (int)ch, c.epoch * (uint64_t)chunk_tiles(p, k, ch));
}
"""

# LSA: after a chunk's stores, tell the partner (per sync scope).
LANDED_SIGNAL_NONE = r"""
// global_barrier: no per-chunk signal; the barrier after the transfer publishes it.
static __device__ __forceinline__ void signal_landed(const cuco_ctx&, const Problem&, int64_t) {}
"""

LANDED_SIGNAL_PEER = r"""
// per_peer_signal: one count per chunk on the partner's contribution slot.
static __device__ __forceinline__ void signal_landed(const cuco_ctx& c, const Problem& p, int64_t) {
  cuco_signal_add(c, p.partner, PEER_SLOT, 1);
}
"""

LANDED_SIGNAL_TILE = r"""
// per_tile_signal: each chunk has its own slot on the partner.
static __device__ __forceinline__ void signal_landed(const cuco_ctx& c, const Problem& p, int64_t ch) {
  cuco_signal_add(c, p.partner, ARRIVE_SLOT + (int)ch, 1);
}
"""

PUSH_LSA_CTA = r"""
// issuer cta: the whole CTA stores one chunk into the partner's symmetric buffer; one thread signals.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Chunking k = chunking(p);
  for (int64_t ch = ch0 + cta; ch < ch1; ch += ncta) {
    if (threadIdx.x == 0) wait_ready(c, p, k, ch);
    __syncthreads();
    const Chunk q = chunk_at(p, k, ch);
    cuco_put_cta(c, p.partner, q.off, static_cast<const char*>(c.out[0]) + q.off, q.bytes);
    __syncthreads();
    if (threadIdx.x == 0) signal_landed(c, p, ch);
  }
}
"""

PUSH_LSA_WARP = r"""
// issuer warp: each warp stores whole chunks on its own; lane 0 waits and signals.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Chunking k = chunking(p);
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t ch = ch0 + (int64_t)cta * warps + threadIdx.x / 32; ch < ch1; ch += (int64_t)ncta * warps) {
    if (lane == 0) wait_ready(c, p, k, ch);
    __syncwarp();
    const Chunk q = chunk_at(p, k, ch);
    cuco_put_warp(c, p.partner, q.off, static_cast<const char*>(c.out[0]) + q.off, q.bytes);
    __syncwarp();
    if (lane == 0) signal_landed(c, p, ch);
  }
}
"""

PUSH_LSA_THREAD = r"""
// issuer thread: each thread stores whole chunks by itself and signals them.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Chunking k = chunking(p);
  for (int64_t ch = ch0 + (int64_t)cta * blockDim.x + threadIdx.x; ch < ch1; ch += (int64_t)ncta * blockDim.x) {
    wait_ready(c, p, k, ch);
    const Chunk q = chunk_at(p, k, ch);
    cuco_put_thread(c, p.partner, q.off, static_cast<const char*>(c.out[0]) + q.off, q.bytes);
    signal_landed(c, p, ch);
  }
}
"""

# GIN: the put carries its own signal, added on the partner once the bytes landed.
GIN_SLOT_PEER = r"""
// One aggregate GIN slot counts the partner's landed chunks (per_peer_signal, and the
// global_barrier's proof of delivery before the barrier).
static __device__ __forceinline__ int landed_slot(int64_t) { return PEER_SLOT; }
"""

GIN_SLOT_TILE = r"""
// per_tile_signal: each chunk has its own GIN slot on the partner.
static __device__ __forceinline__ int landed_slot(int64_t ch) { return ARRIVE_SLOT + (int)ch; }
"""

GIN_COMMON = r"""
// The source (the staged KV in this rank's symmetric buffer) is rewritten by the next call:
// every put must have consumed it before this kernel ends.
static __device__ __forceinline__ void flush_puts(const cuco_ctx& c, int gctx) {
  __syncthreads();
  if (threadIdx.x == 0) cuco_gin_flush(c, gctx);
}
static __device__ __forceinline__ void post_chunk(const cuco_ctx& c, const Problem& p, const Chunking& k, int gctx,
                                                  int64_t ch) {
  wait_ready(c, p, k, ch);
  const Chunk q = chunk_at(p, k, ch);
  cuco_gin_put(c, gctx, p.partner, q.off, q.off, q.bytes, landed_slot(ch), 1);
}
"""

PUSH_GIN_CTA = r"""
// issuer cta: one thread per CTA posts each of the CTA's chunks; the NIC moves the bytes.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Chunking k = chunking(p);
  const int gctx = cta % CUCO_GIN_CONTEXTS;
  if (threadIdx.x == 0)
    for (int64_t ch = ch0 + cta; ch < ch1; ch += ncta) post_chunk(c, p, k, gctx, ch);
  flush_puts(c, gctx);
}
"""

PUSH_GIN_WARP = r"""
// issuer warp: lane 0 of every warp posts the warp's chunks.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Chunking k = chunking(p);
  const int gctx = cta % CUCO_GIN_CONTEXTS, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0)
    for (int64_t ch = ch0 + (int64_t)cta * warps + threadIdx.x / 32; ch < ch1; ch += (int64_t)ncta * warps)
      post_chunk(c, p, k, gctx, ch);
  flush_puts(c, gctx);
}
"""

PUSH_GIN_THREAD = r"""
// issuer thread: every thread posts its own chunks.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, int cta, int ncta) {
  const Chunking k = chunking(p);
  const int gctx = cta % CUCO_GIN_CONTEXTS;
  for (int64_t ch = ch0 + (int64_t)cta * blockDim.x + threadIdx.x; ch < ch1; ch += (int64_t)ncta * blockDim.x)
    post_chunk(c, p, k, gctx, ch);
  flush_puts(c, gctx);
}
"""

KERNEL_COMM = r"""
__global__ void __launch_bounds__(THREADS) comm_kernel(cuco_ctx c, int64_t ch0, int64_t ch1) {
  push_chunks(c, problem(c), ch0, ch1, blockIdx.x, gridDim.x);
}
"""

KERNEL_FUSED = r"""
// One persistent kernel. Prefill: CTAs [0, COMM_CTAS) send chunks as their tiles finish, the
// rest compute tiles layer by layer. Decode: every CTA copies chunks as they land.
__global__ void __launch_bounds__(THREADS) fused_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  const Chunking k = chunking(p);
  if (!p.prefill) {
    receive_chunks(c, p, 0, k.count, blockIdx.x, gridDim.x);
    return;
  }
  if ((int)blockIdx.x < COMM_CTAS) {
    push_chunks(c, p, 0, k.count, blockIdx.x, COMM_CTAS);
    return;
  }
  run_tiles(c, p, 0, p.L * layer_tiles(p, k), blockIdx.x - COMM_CTAS, gridDim.x - COMM_CTAS);
}
"""
