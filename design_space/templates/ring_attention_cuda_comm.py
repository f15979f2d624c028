"""CUDA text of the ring-attention templates, device side of communication: signal primitives
per backend, arrival and credit protocols per sync scope, the issuer loops, how lsa and gin move
one chunk, and the ring loop run by communication CTAs.

Protocol (per_peer_signal / per_tile_signal). Global step G counts steps across calls; its block
lands in receive slot (G - 1) % R of the right neighbour. Arrivals: per_tile, one signal per
(slot, chunk) per fill; per_peer, one counter per slot, one per chunk. Credits: before refilling a
slot, the sender waits until the right neighbour's compute workers have folded the slot's previous
block in and its forwarders have passed it on (one credit each, per fill). global_barrier replaces
both with cross-rank barriers and stream order.
"""

SIGNALS_PAD = r"""
// Signals live in the signal pad: NVLink loads and stores.
static __device__ __forceinline__ void sig_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_wait(c, slot, at_least);
}
static __device__ __forceinline__ void sig_add(const cuco_ctx& c, int peer, int slot, uint64_t inc) {
  cuco_signal_add(c, peer, slot, inc);
}
"""

SIGNALS_GIN = r"""
// Signals are GIN signals: the NIC adds a put's signal once the put's data has landed.
static __device__ __forceinline__ void sig_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_gin_wait(c, slot, at_least);
}
// A signal without data, ordered after this context's earlier puts to that peer.
static __device__ __forceinline__ void sig_add(const cuco_ctx& c, int peer, int slot, uint64_t inc) {
  cuco_gin_signal(c, 0, peer, slot, inc);
}
"""

SCOPE_TILE = r"""
// per_tile_signal: every chunk of every slot fill has its own arrival signal.
static __host__ __device__ __forceinline__ int data_slot(const cuco_ctx& c, int64_t G, int64_t ch) {
  return CHUNK_SIGNALS + slot_of(c, G) * MAX_CHUNKS + (int)ch;
}
static __host__ __device__ __forceinline__ uint64_t data_target(const cuco_ctx& c, const Problem&, int64_t G) {
  return (uint64_t)fills(c, G);
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int64_t G, int64_t g0, int64_t g1) {
  const int64_t rows = chunk_rows(p);
  for (int64_t ch = g0 / rows; ch <= (g1 - 1) / rows; ++ch) sig_wait(c, data_slot(c, G, ch), data_target(c, p, G));
}
// Passing chunk ch on at step G waits for that chunk alone (it arrived at step G - 1).
static __device__ __forceinline__ void wait_forward_chunk(const cuco_ctx& c, const Problem& p, int64_t G, int64_t ch) {
  sig_wait(c, data_slot(c, G - 1, ch), data_target(c, p, G - 1));
}
static __device__ __forceinline__ void wait_forward_block(const cuco_ctx&, const Problem&, int64_t) {}
"""

SCOPE_PEER = r"""
// per_peer_signal: one arrival counter per slot; each chunk adds one, a whole block num_chunks.
static __host__ __device__ __forceinline__ int data_slot(const cuco_ctx& c, int64_t G, int64_t) {
  return STEP_SIGNALS + slot_of(c, G);
}
static __host__ __device__ __forceinline__ uint64_t data_target(const cuco_ctx& c, const Problem& p, int64_t G) {
  return (uint64_t)(fills(c, G) * num_chunks(p));
}
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int64_t G, int64_t, int64_t) {
  sig_wait(c, data_slot(c, G, 0), data_target(c, p, G));
}
static __device__ __forceinline__ void wait_forward_chunk(const cuco_ctx&, const Problem&, int64_t, int64_t) {}
// Passing a block on waits until the whole block has arrived.
static __device__ __forceinline__ void wait_forward_block(const cuco_ctx& c, const Problem& p, int64_t G) {
  sig_wait(c, data_slot(c, G - 1, 0), data_target(c, p, G - 1));
}
"""

# Credits of the signalled scopes. @FORWARDERS@: credits per fill from whoever passes blocks on.
CREDITS = r"""
// Credits: the right neighbour releases a slot once each of its compute workers has folded the
// block in and each forwarder has passed it on (at the last step there is nothing to pass on).
#define FORWARDERS @FORWARDERS@
static __device__ __forceinline__ void release_slot(const cuco_ctx& c, int64_t G) {
  sig_add(c, prev_rank(c), CREDIT_SIGNALS + slot_of(c, G), 1);
}
static __host__ __device__ __forceinline__ uint64_t free_target(const cuco_ctx& c, const Problem& p, int64_t G) {
  return (uint64_t)((fills(c, G) - 1) * (compute_workers(c, p) + FORWARDERS));
}
static __device__ __forceinline__ void wait_slot_free(const cuco_ctx& c, const Problem& p, int64_t G) {
  if (fills(c, G) > 1) sig_wait(c, CREDIT_SIGNALS + slot_of(c, G), free_target(c, p, G));
}
static __device__ __forceinline__ void release_step(const cuco_ctx& c, int64_t G) {
  __syncthreads();
  if (threadIdx.x == 0) release_slot(c, G);
}
"""

SCOPE_GLOBAL = r"""
// global_barrier: no signals; cross-rank barriers and stream order say what has landed and what
// may be refilled.
static __host__ __device__ __forceinline__ int data_slot(const cuco_ctx&, int64_t, int64_t) { return -1; }
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int64_t, int64_t, int64_t) {}
static __device__ __forceinline__ void release_step(const cuco_ctx&, int64_t) {}
// What is passed on landed before the barrier that closed the previous step.
static __device__ __forceinline__ void wait_forward_chunk(const cuco_ctx&, const Problem&, int64_t, int64_t) {}
"""

SCOPE_GLOBAL_GIN = r"""
// global_barrier over GIN: a barrier cannot see puts still in flight in the NIC, so each rank
// counts its arrivals of a step (one signal per chunk) before it enters the barrier.
static __host__ __device__ __forceinline__ int data_slot(const cuco_ctx& c, int64_t G, int64_t) {
  return STEP_SIGNALS + slot_of(c, G);
}
static __host__ __device__ __forceinline__ uint64_t data_target(const cuco_ctx& c, const Problem& p, int64_t G) {
  return (uint64_t)(fills(c, G) * num_chunks(p));
}
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int64_t, int64_t, int64_t) {}
static __device__ __forceinline__ void release_step(const cuco_ctx&, int64_t) {}
// What is passed on landed before the barrier that closed the previous step.
static __device__ __forceinline__ void wait_forward_chunk(const cuco_ctx&, const Problem&, int64_t, int64_t) {}
"""

GROUP_SYNC = {
    "cta": "#define GROUP_SYNC() __syncthreads()  // issuer cta: the whole CTA moves a chunk\n",
    "warp": "#define GROUP_SYNC() __syncwarp()  // issuer warp: one warp moves a chunk\n",
    "thread": "#define GROUP_SYNC() do { } while (0)  // issuer thread: one thread moves a chunk\n",
}

# @PUT@: the cuco_put_* of the issuer.
SEND_CHUNK_LSA = r"""
// lsa: the issuer group stores chunk ch straight into the right neighbour's slot over NVLink.
static __device__ void send_chunk(const cuco_ctx& c, const Problem& p, int t, int64_t G, int64_t ch, unsigned lane,
                                  unsigned width) {
  const int64_t rows = chunk_rows(p), g0 = ch * rows, g1 = g0 + rows < p.rows ? g0 + rows : p.rows;
  const size_t row_bytes = 2 * p.D * sizeof(cuco_t), dst = slot_offset(p, slot_of(c, G)) + g0 * row_bytes;
  if (t == 1) {  // the own block: pack K and V rows straight into the neighbour's slot
    pack_rows(static_cast<char*>(cuco_peer(c, next_rank(c))) + dst, c, p, g0, g1, lane, width);
  } else {  // pass on what arrived at step t - 1
    const char* src = static_cast<const char*>(c.symm) + slot_offset(p, slot_of(c, G - 1)) + g0 * row_bytes;
    @PUT@(c, next_rank(c), dst, src, (size_t)(g1 - g0) * row_bytes);
  }
  GROUP_SYNC();
  const int slot = data_slot(c, G, ch);
  if (lane == 0 && slot >= 0) cuco_signal_add(c, next_rank(c), slot, 1);
}
static __device__ __forceinline__ void step_sent(const cuco_ctx&) {}
static __device__ __forceinline__ void step_landed(const cuco_ctx&, const Problem&, int64_t) {}
"""

SEND_CHUNK_GIN = r"""
// gin: one thread of the issuer group posts chunk ch as a put; the NIC moves it and then adds its
// arrival signal. Each CTA posts on its own GIN context.
#define GIN_CTX ((int)(blockIdx.x % CUCO_GIN_CONTEXTS))
static __device__ void send_chunk(const cuco_ctx& c, const Problem& p, int t, int64_t G, int64_t ch, unsigned lane,
                                  unsigned width) {
  const int64_t rows = chunk_rows(p), g0 = ch * rows, g1 = g0 + rows < p.rows ? g0 + rows : p.rows;
  const size_t row_bytes = 2 * p.D * sizeof(cuco_t), dst = slot_offset(p, slot_of(c, G)) + g0 * row_bytes;
  size_t src;
  if (t == 1) {  // the own block: the NIC reads symmetric memory, so pack it into the own slot first
    src = slot_offset(p, c.world) + g0 * row_bytes;
    pack_rows(static_cast<char*>(c.symm) + src, c, p, g0, g1, lane, width);
    GROUP_SYNC();
  } else {  // pass on what arrived at step t - 1
    src = slot_offset(p, slot_of(c, G - 1)) + g0 * row_bytes;
  }
  if (lane == 0)
    cuco_gin_put(c, GIN_CTX, next_rank(c), dst, src, (size_t)(g1 - g0) * row_bytes, data_slot(c, G, ch), 1);
}
// The NIC has read the sources of this CTA's puts: those slots may be refilled.
static __device__ __forceinline__ void step_sent(const cuco_ctx& c) { cuco_gin_flush(c, GIN_CTX); }
static __device__ __forceinline__ void step_landed(const cuco_ctx& c, const Problem& p, int64_t G) {
  sig_wait(c, data_slot(c, G, 0), data_target(c, p, G));
}
"""

SEND_STEP = {
    "cta": r"""
// issuer cta: CTA `cta` of `ncta` moves chunks cta, cta + ncta, ... one at a time.
static __device__ void send_step(const cuco_ctx& c, const Problem& p, int t, int64_t G, int cta, int ncta) {
  for (int64_t ch = cta; ch < num_chunks(p); ch += ncta) {
    if (t > 1) {
      if (threadIdx.x == 0) wait_forward_chunk(c, p, G, ch);
      __syncthreads();
    }
    send_chunk(c, p, t, G, ch, threadIdx.x, blockDim.x);
  }
}
""",
    "warp": r"""
// issuer warp: each warp moves whole chunks on its own; lane 0 waits and signals.
static __device__ void send_step(const cuco_ctx& c, const Problem& p, int t, int64_t G, int cta, int ncta) {
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  for (int64_t ch = (int64_t)cta * warps + threadIdx.x / 32; ch < num_chunks(p); ch += (int64_t)ncta * warps) {
    if (t > 1) {
      if (lane == 0) wait_forward_chunk(c, p, G, ch);
      __syncwarp();
    }
    send_chunk(c, p, t, G, ch, lane, 32);
  }
}
""",
    "thread": r"""
// issuer thread: each thread moves whole chunks by itself, waiting and signalling for them.
static __device__ void send_step(const cuco_ctx& c, const Problem& p, int t, int64_t G, int cta, int ncta) {
  for (int64_t ch = (int64_t)cta * blockDim.x + threadIdx.x; ch < num_chunks(p); ch += (int64_t)ncta * blockDim.x) {
    if (t > 1) wait_forward_chunk(c, p, G, ch);
    send_chunk(c, p, t, G, ch, 0, 1);
  }
}
""",
}

COMM_STEPS_SIGNALS = r"""
// Ring steps [t0, t1] for comm CTA `cta` of `ncta`: wait until the right neighbour has released
// the slot, send (passing on what arrived the step before), then release the passed-on slot.
static __device__ void comm_steps(const cuco_ctx& c, const Problem& p, int t0, int t1, int cta, int ncta) {
  for (int t = t0; t <= t1; ++t) {
    const int64_t G = gstep(c, t);
    if (threadIdx.x == 0) {
      wait_slot_free(c, p, G);
      if (t > 1) wait_forward_block(c, p, G);
    }
    __syncthreads();
    send_step(c, p, t, G, cta, ncta);
    __syncthreads();
    if (threadIdx.x == 0) {
      step_sent(c);
      if (t > 1) release_slot(c, G - 1);         // passed on: the left neighbour may refill it
      if (t == c.world - 1) release_slot(c, G);  // the last block is never passed on
    }
  }
}
"""

COMM_STEPS_GLOBAL = r"""
// Ring steps [t0, t1] for comm CTA `cta` of `ncta`. CTA `cta` of every rank meets in a barrier
// before refilling slots (everyone is done with them) and after sending (the step has landed).
// Chunk ownership is the same on every rank and step, so CTA `cta` only passes on what CTA `cta`
// of the left neighbour sent: a barrier per CTA is enough.
static __device__ void comm_steps(const cuco_ctx& c, const Problem& p, int t0, int t1, int cta, int ncta) {
  for (int t = t0; t <= t1; ++t) {
    const int64_t G = gstep(c, t);
    if (ring_slots(c) < c.world - 1 || t == 1) cuco_barrier(c, cta);  // slots free everywhere
    send_step(c, p, t, G, cta, ncta);
    __syncthreads();
    if (threadIdx.x == 0) {
      step_sent(c);
      step_landed(c, p, G);
    }
    cuco_barrier(c, cta);  // step t has landed everywhere
  }
}
"""

COMM_KERNEL = r"""
__global__ void __launch_bounds__(THREADS) comm_kernel(cuco_ctx c, int t0, int t1) {
  comm_steps(c, problem(c), t0, t1, blockIdx.x, gridDim.x);
}
"""

FUSED_KERNEL = r"""
// One persistent kernel: the first comm_workers CTAs run the ring, the rest fold blocks in as they land.
__global__ void __launch_bounds__(THREADS) fused_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  const int comm = (int)comm_workers(p);
  if ((int)blockIdx.x < comm) {
    comm_steps(c, p, 1, c.world - 1, blockIdx.x, comm);
    return;
  }
  attend_steps(c, p, 0, c.world - 1, blockIdx.x - comm, gridDim.x - comm);
}
"""

BARRIER_KERNEL = r"""
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c) { cuco_barrier(c, 0); }
"""
