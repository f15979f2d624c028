"""CUDA text of the MoE family's signals and waits (every backend with device-side waits) and its
device-initiated transfers (lsa: peer stores, gin: NIC puts) with their kernels and host code.

A signal slot counts rows landed. Dispatch targets come from the sender's header (cumulative rows
it ever sent this rank, in total and per chunk); combine targets from this rank's own private
counters (what it sent a rank is what comes back). gin puts add to GIN signals once the data has
landed; lsa stores first and then signals (release) from the moving group's leader.
"""

# --- how a waiting thread waits: pad (lsa, copy_engine) or GIN signals -------------------------

WAIT_PAD = r"""
static __device__ __forceinline__ void wait_slot(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_wait(c, slot, at_least);
}
"""

WAIT_GIN = r"""
static __device__ __forceinline__ void wait_slot(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_gin_wait(c, slot, at_least);
}
"""

# --- sync scopes: which slot a transfer signals, what a consumer waits for -----------------------

SCOPE_PER_TILE = r"""
// per_tile_signal: slot (source, chunk) on the receiver; a tile waits for the chunks it spans,
// a token for the chunks holding its results.
static __device__ __forceinline__ int dispatch_slot(const Problem& p, int64_t q) { return SLOT_DTILE(p.rank, q); }
static __device__ __forceinline__ int combine_slot(const Problem& p, int64_t q) { return SLOT_CTILE(p.rank, q); }
static __device__ void wait_header(const cuco_ctx& c, const Problem&, int s) { wait_slot(c, SLOT_HDR(s), c.epoch); }
static __device__ void wait_rows(const cuco_ctx& c, const Problem& p, int s, const int64_t* h, int64_t a, int64_t b) {
  const int64_t rows = chunk_rows(p, h[H_COUNT]);
  for (int64_t q = a / rows; q <= (b - 1) / rows; ++q) wait_slot(c, SLOT_DTILE(s, q), (uint64_t)h[H_CNT + p.El + q]);
}
static __device__ void wait_results(const cuco_ctx& c, const Problem& p, int64_t t) {
  const int* pos = ws_ints(c, p.ws_pos);
  for (int64_t j = 0; j < p.K; ++j) {
    const int at = pos[t * p.K + j], d = at / (int)p.cap;
    const int64_t q = (at % p.cap) / chunk_rows(p, hdr_out(c, p, d)[H_COUNT]);
    wait_slot(c, SLOT_CTILE(d, q), c.signals[PRIV_CHUNK(d, q)]);
  }
}
"""

SCOPE_PER_PEER = r"""
// per_peer_signal: slot (source) on the receiver counts all rows of that peer; a tile waits for
// its source's whole block, a token for every rank holding one of its results.
static __device__ __forceinline__ int dispatch_slot(const Problem& p, int64_t) { return SLOT_DPEER(p.rank); }
static __device__ __forceinline__ int combine_slot(const Problem& p, int64_t) { return SLOT_CPEER(p.rank); }
static __device__ void wait_header(const cuco_ctx& c, const Problem&, int s) { wait_slot(c, SLOT_HDR(s), c.epoch); }
static __device__ void wait_rows(const cuco_ctx& c, const Problem&, int s, const int64_t* h, int64_t, int64_t) {
  wait_slot(c, SLOT_DPEER(s), (uint64_t)h[H_PEER]);
}
static __device__ void wait_results(const cuco_ctx& c, const Problem& p, int64_t t) {
  const int* pos = ws_ints(c, p.ws_pos);
  for (int64_t j = 0; j < p.K; ++j) {
    const int d = pos[t * p.K + j] / (int)p.cap;
    wait_slot(c, SLOT_CPEER(d), c.signals[PRIV_PEER(d)]);
  }
}
"""

# global_barrier: consumers wait for nothing; barrier kernels order everything. lsa stores are done
# when their kernel ends; gin puts only when their signal says so, hence the aggregate slots.
SCOPE_GLOBAL = r"""
// global_barrier: no per-transfer signals; a cross-rank barrier follows each whole transfer.
static __device__ __forceinline__ int dispatch_slot(const Problem&, int64_t) { return -1; }
static __device__ __forceinline__ int combine_slot(const Problem&, int64_t) { return -1; }
static __device__ __forceinline__ void wait_header(const cuco_ctx&, const Problem&, int) {}
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, const int64_t*, int64_t, int64_t) {}
static __device__ __forceinline__ void wait_results(const cuco_ctx&, const Problem&, int64_t) {}
"""

SCOPE_GLOBAL_GIN = r"""
// global_barrier: every put counts into one slot per phase; the barrier kernel waits until all
// rows meant for this rank have landed (dispatch: the senders' cumulative totals from the headers;
// combine: all T*K results, every call), then all ranks meet.
static __device__ __forceinline__ int dispatch_slot(const Problem&, int64_t) { return SLOT_DALL; }
static __device__ __forceinline__ int combine_slot(const Problem&, int64_t) { return SLOT_CALL; }
static __device__ __forceinline__ void wait_header(const cuco_ctx&, const Problem&, int) {}
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, const int64_t*, int64_t, int64_t) {}
static __device__ __forceinline__ void wait_results(const cuco_ctx&, const Problem&, int64_t) {}
static __device__ void wait_all_landed(const cuco_ctx& c, const Problem& p, int phase) {
  if (phase == 1) return wait_slot(c, SLOT_CALL, c.epoch * (uint64_t)(p.T * p.K));
  uint64_t total = 0;
  for (int s = 0; s < p.world; ++s) {
    wait_slot(c, SLOT_HDR(s), c.epoch);
    total += (uint64_t)hdr_in(c, p, s)[H_PEER];
  }
  wait_slot(c, SLOT_DALL, total);
}
"""

BARRIER_LSA = r"""
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c, int phase) { cuco_barrier(c, phase); }
"""

BARRIER_GIN = r"""
__global__ void __launch_bounds__(32) barrier_kernel(cuco_ctx c, int phase) {
  if (threadIdx.x == 0) wait_all_landed(c, problem(c), phase);
  cuco_barrier(c, phase);
}
"""

# --- issuers: the group of threads that moves one chunk -----------------------------------------

GROUP_CTA = r"""
// issuer cta: the whole CTA moves each chunk; one thread signals.
#define GROUP_THREADS ((int)blockDim.x)
static __device__ __forceinline__ int group_index() { return 0; }
static __device__ __forceinline__ int group_count() { return 1; }
static __device__ __forceinline__ int group_lane() { return threadIdx.x; }
static __device__ __forceinline__ void group_sync() { __syncthreads(); }
"""

GROUP_WARP = r"""
// issuer warp: each warp moves whole chunks on its own; lane 0 signals.
#define GROUP_THREADS 32
static __device__ __forceinline__ int group_index() { return threadIdx.x / 32; }
static __device__ __forceinline__ int group_count() { return blockDim.x / 32; }
static __device__ __forceinline__ int group_lane() { return threadIdx.x % 32; }
static __device__ __forceinline__ void group_sync() { __syncwarp(); }
"""

GROUP_THREAD = r"""
// issuer thread: each thread moves whole chunks by itself and signals them.
#define GROUP_THREADS 1
static __device__ __forceinline__ int group_index() { return threadIdx.x; }
static __device__ __forceinline__ int group_count() { return blockDim.x; }
static __device__ __forceinline__ int group_lane() { return 0; }
static __device__ __forceinline__ void group_sync() {}
"""

LSA_PUT = {
    "cta": "cuco_put_cta(c, peer, off, src, bytes);",
    "warp": "cuco_put_warp(c, peer, off, src, bytes);",
    "thread": "cuco_put_thread(c, peer, off, src, bytes);",
}

SEND_LSA = r"""
static __device__ __forceinline__ void group_put(const cuco_ctx& c, int peer, size_t off, const void* src, size_t bytes) {
  @PUT@
}
// lsa: rows of chunk q to d, gathered from x by token, stored straight into d's block for this
// rank; the group syncs and its leader signals (a release).
static __device__ void send_dispatch(const cuco_ctx& c, const Problem& p, int d, int64_t q, int64_t r0, int64_t r1) {
  const int* tok = ws_ints(c, p.ws_tok) + ws_ints(c, p.ws_base)[d];
  const cuco_t* x = static_cast<const cuco_t*>(c.in[0]);
  for (int64_t r = r0; r < r1; ++r) group_put(c, d, recv_off(p, recv_block(p, p.rank), r), x + tok[r] * p.H, p.row);
  group_sync();
  const int slot = dispatch_slot(p, q);
  if (group_lane() == 0 && slot >= 0) cuco_signal_add(c, d, slot, (uint64_t)(r1 - r0));
}
// Result rows [u, v) of source s's block (chunk q) back to s, same rows of its block for this rank.
static __device__ void send_combine(const cuco_ctx& c, const Problem& p, int s, int64_t q, int64_t u, int64_t v) {
  group_put(c, s, comb_off(p, comb_block(p, p.rank), u), symm_at(c, recv_off(p, recv_block(p, s), u)), (v - u) * p.row);
  group_sync();
  const int slot = combine_slot(p, q);
  if (group_lane() == 0 && slot >= 0) cuco_signal_add(c, s, slot, (uint64_t)(v - u));
}
// One thread: this rank's header for d into d's header slot for this rank.
static __device__ void send_header(const cuco_ctx& c, const Problem& p, int d) {
  cuco_put_thread(c, d, p.hdr_in + (size_t)p.rank * p.hi * 8, hdr_out(c, p, d), p.hi * 8);
  cuco_signal_add(c, d, SLOT_HDR(p.rank), 1);
}
static __device__ __forceinline__ void flush_puts(const cuco_ctx&) {}
"""

SEND_GIN = r"""
static __device__ __forceinline__ int gin_context() { return blockIdx.x % CUCO_GIN_CONTEXTS; }
// gin: the group packs chunk q's rows into SEND (puts read the symmetric buffer), then its leader
// posts one put that adds the row count to d's signal once the rows have landed.
static __device__ void send_dispatch(const cuco_ctx& c, const Problem& p, int d, int64_t q, int64_t r0, int64_t r1) {
  const int base = ws_ints(c, p.ws_base)[d];
  const int* tok = ws_ints(c, p.ws_tok) + base;
  const cuco_t* x = static_cast<const cuco_t*>(c.in[0]);
  for (int64_t r = r0; r < r1; ++r)
    cuco_copy_group(symm_at(c, send_off(p, base + r)), x + tok[r] * p.H, p.row, group_lane(), GROUP_THREADS);
  group_sync();
  if (group_lane() == 0) {
    __threadfence_system();  // the group's packed rows before the NIC reads them
    cuco_gin_put(c, gin_context(), d, recv_off(p, recv_block(p, p.rank), r0), send_off(p, base + r0),
                 (size_t)(r1 - r0) * p.row, dispatch_slot(p, q), (uint64_t)(r1 - r0));
  }
}
// Result rows [u, v) of source s's block (chunk q) back to s: the rows are in the symmetric buffer
// already (results overwrite the received rows), so the leader posts the put directly.
static __device__ void send_combine(const cuco_ctx& c, const Problem& p, int s, int64_t q, int64_t u, int64_t v) {
  if (group_lane() == 0) {
    __threadfence_system();
    cuco_gin_put(c, gin_context(), s, comb_off(p, comb_block(p, p.rank), u), recv_off(p, recv_block(p, s), u),
                 (size_t)(v - u) * p.row, combine_slot(p, q), (uint64_t)(v - u));
  }
  group_sync();
}
static __device__ void send_header(const cuco_ctx& c, const Problem& p, int d) {
  cuco_gin_put(c, gin_context(), d, p.hdr_in + (size_t)p.rank * p.hi * 8, p.hdr_out + (size_t)d * p.hi * 8,
               p.hi * 8, SLOT_HDR(p.rank), 1);
}
// Sources (SEND, headers, result rows) are rewritten next call: every posting thread flushes.
static __device__ __forceinline__ void flush_puts(const cuco_ctx& c) { cuco_gin_flush(c, gin_context()); }
"""

# --- push loops shared by lsa and gin -------------------------------------------------------------

PUSH = r"""
// Pair (ring step i -> peer) chunk enumeration: item k of steps [i0, i1) -> (peer, chunk, count).
// dir 0: dispatch to rank + i (counts from this rank's headers); dir 1: combine to rank - i
// (counts from the headers received).
static __device__ bool chunk_item(const cuco_ctx& c, const Problem& p, int dir, int i0, int i1, int64_t k, int* peer,
                                  int64_t* q, int64_t* count) {
  for (int i = i0; i < i1; ++i) {
    *peer = dir == 0 ? (p.rank + i) % p.world : (p.rank - i + p.world) % p.world;
    *count = dir == 0 ? hdr_out(c, p, *peer)[H_COUNT] : hdr_in(c, p, *peer)[H_COUNT];
    const int64_t n = num_chunks(p, *count);
    if (k < n) {
      *q = k;
      return true;
    }
    k -= n;
  }
  return false;
}

// Every chunk of steps [i0, i1) in direction dir, spread over the groups of CTAs cta of ncta.
static __device__ void push_chunks(const cuco_ctx& c, const Problem& p, int dir, int i0, int i1, int cta, int ncta) {
  int peer;
  int64_t q, count;
  for (int64_t k = (int64_t)cta * group_count() + group_index(); chunk_item(c, p, dir, i0, i1, k, &peer, &q, &count);
       k += (int64_t)ncta * group_count()) {
    const int64_t rows = chunk_rows(p, count), r0 = q * rows, r1 = imin(count, r0 + rows);
    if (dir == 0)
      send_dispatch(c, p, peer, q, r0, r1);
    else
      send_combine(c, p, peer, q, r0, r1);
  }
  flush_puts(c);
}

// A finished tile's result rows [a, b) go home at once, cut at chunk boundaries; the CTA's groups
// share the pieces (the tile ended with __syncthreads, so every row is written).
static __device__ void combine_rows(const cuco_ctx& c, const Problem& p, int s, const int64_t* h, int64_t a, int64_t b) {
  const int64_t rows = chunk_rows(p, h[H_COUNT]), q0 = a / rows, pieces = (b - 1) / rows - q0 + 1;
  for (int64_t k = group_index(); k < pieces; k += group_count()) {
    const int64_t q = q0 + k;
    send_combine(c, p, s, q, imax(a, q * rows), imin(b, (q + 1) * rows));
  }
}

// The layout CTA sends every destination its header.
static __device__ void notify(const cuco_ctx& c, const Problem& p) {
  for (int d = threadIdx.x; d < p.world; d += blockDim.x) send_header(c, p, d);
  flush_puts(c);
}
"""
