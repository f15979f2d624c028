"""CUDA text of the GEMM + all-reduce family, part 2: each backend's communication and the
comm work loop shared by every placement.

A backend is two pieces. ``*_PRIMS`` (before the sync scope) says what one reduction receives and
how a consumer waits; ``*_OPS`` (after the GEMM) says how a finished partial chunk is published,
how one output element is summed over ranks, where reduced values go and how they reach the other
ranks. The designs:
- two-shot over lsa / gin / copy_engine: peers push partial rows to the row's owner (reduce-scatter
  into STAGE), the owner sums and normalises them, then pushes the result rows back (all-gather
  into RES);
- one-shot over lsa (sync scope per_tile_signal): every rank pulls every peer's partial chunk and sums
  all rows itself; one round, (n-1)*S read per rank;
- multimem: the owner of a row block sums it in the switch (ld_reduce) and broadcasts the result
  (st) to every rank, applying RMSNorm in between.
"""

# ---------------------------------------------------------------- two-shot over LSA (push/push)
LSA2_PRIMS = r"""
// lsa two-shot: peers push partial rows to the owner (SM stores over NVLink), the owner pushes
// reduced rows back. The owner reads its own partial in place.
#define ASYNC_LANDING 0    // a store has landed once the storing CTA passed a barrier or signal
#define ARRIVE_FROM_SELF 0
#define PUSH_REDUCE 1      // reduction inputs are local (own PART + STAGE): wait for own tiles too
static __host__ __device__ __forceinline__ int arrivals_per_chunk(const cuco_ctx& c) { return c.world - 1; }
static __host__ __device__ __forceinline__ int64_t chunks_from_source(const Problem& p) { return num_chunks(p); }
static __device__ __forceinline__ void wait_arrive(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_ARRIVE + idx, n); }
static __device__ __forceinline__ void wait_res(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_RESULT + idx, n); }
static __device__ __forceinline__ void before_tile(const cuco_ctx&, const Problem&, int64_t) {}
"""

# Shared by the push designs (lsa two-shot, gin, copy_engine): the owner's inputs are local.
PUSH_SUM = r"""
// Owner's view: my partial plus the partial rows every peer pushed into my STAGE.
static __device__ __forceinline__ float reduce_at(const cuco_ctx& c, const Problem& p, int64_t row, int64_t col) {
  const cuco_t* base = symm_at(c, 0);
  const int64_t owned = row - (int64_t)c.rank * p.R;
  float v = cuco_to_float(base[row * p.N + col]);
  for (int src = 0; src < c.world; ++src)
    if (src != c.rank) v += cuco_to_float(base[(p.M + src * p.R + owned) * p.N + col]);
  return v;
}
// Pass 1 keeps the sum in RES (this lane reads back only what it wrote); the final pass writes
// RES (the all-gather source) and the output.
static __device__ __forceinline__ void emit(const cuco_ctx& c, const Problem& p, int64_t row, int64_t col, float v,
                                            bool final) {
  const cuco_t x = cuco_from_float<cuco_t>(v);
  symm_at(c, res_off(p, row))[col] = x;
  if (final) static_cast<cuco_t*>(c.out[0])[row * p.N + col] = x;
}
static __device__ __forceinline__ float staged(const cuco_ctx& c, const Problem& p, int64_t row, int64_t col) {
  return cuco_to_float(symm_at(c, res_off(p, row))[col]);
}
// Owner-based designs: a stage has one chunk to reduce here (mine) and world-1 to collect.
static __device__ __forceinline__ int reduce_per_stage(const Problem&) { return 1; }
static __device__ __forceinline__ int finish_per_stage(const Problem& p) { return p.W - 1; }
static __device__ __forceinline__ int64_t reduce_chunk(const cuco_ctx& c, const Problem& p, int64_t s, int) {
  return (int64_t)c.rank * num_chunks(p) + s;
}
"""

LSA2_OPS = r"""
// Reduce-scatter: push my partial rows of chunk g into the owner's STAGE block for me.
static __device__ void publish(const cuco_ctx& c, const Problem& p, int64_t g) {
  const Chunk ch = chunk_at(p, g);
  if (ch.owner == c.rank) return;  // the owner reads its own partial in place
  @PUT@(c, ch.owner, stage_off(p, c.rank, ch.lo - ch.owner * p.R), symm_at(c, part_off(p, ch.lo)),
        chunk_bytes(p, ch));
  group_sync();
  if (SCOPE_SIGNALS && group_lane() == 0) cuco_signal_add(c, ch.owner, SLOT_ARRIVE + arrive_idx(c.rank, g), 1);
}
// All-gather: push my reduced rows of chunk g into every peer's RES.
static __device__ void after_reduce(const cuco_ctx& c, const Problem& p, int64_t g) {
  const Chunk ch = chunk_at(p, g);
  const size_t off = res_off(p, ch.lo);
  for (int d = 1; d < c.world; ++d) @PUT@(c, (c.rank + d) % c.world, off, symm_at(c, off), chunk_bytes(p, ch));
  group_sync();
  if (SCOPE_SIGNALS && group_lane() == 0)
    for (int d = 1; d < c.world; ++d) cuco_signal_add(c, (c.rank + d) % c.world, SLOT_RESULT + result_idx(c.rank, g), 1);
}
static __device__ __forceinline__ void drain(const cuco_ctx&) {}
"""

# ---------------------------------------------------------------- one-shot over LSA (pull-and-sum)
LSA1_PRIMS = r"""
// lsa one-shot: every rank pulls every peer's partial (peer loads over NVLink) and sums all rows
// itself. A rank publishes a finished partial chunk with a signal to every rank, itself included.
#define ASYNC_LANDING 0
#define ARRIVE_FROM_SELF 1
#define PUSH_REDUCE 0
static __host__ __device__ __forceinline__ int arrivals_per_chunk(const cuco_ctx& c) { return c.world; }
static __host__ __device__ __forceinline__ int64_t chunks_from_source(const Problem& p) { return p.W * num_chunks(p); }
static __device__ __forceinline__ void wait_arrive(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_ARRIVE + idx, n); }
static __device__ __forceinline__ void wait_res(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_RESULT + idx, n); }
// Peers read my partial until they say they are done: the next call's GEMM must not overwrite a
// chunk before every rank finished pulling it in the previous call.
static __device__ __forceinline__ void before_tile(const cuco_ctx& c, const Problem& p, int64_t g) {
  if (c.epoch > 1) {
    if (threadIdx.x == 0) cuco_wait(c, SLOT_DONE + (int)g, (c.epoch - 1) * (uint64_t)p.W);
    __syncthreads();
  }
}
"""

LSA1_OPS = r"""
static __device__ __forceinline__ float reduce_at(const cuco_ctx& c, const Problem& p, int64_t row, int64_t col) {
  float v = 0.f;
  for (int d = 0; d < c.world; ++d) {
    const cuco_t* part = static_cast<const cuco_t*>(cuco_peer(c, (c.rank + d) % c.world));
    v += cuco_to_float(part[row * p.N + col]);
  }
  return v;
}
static __device__ __forceinline__ void emit(const cuco_ctx& c, const Problem& p, int64_t row, int64_t col, float v, bool) {
  static_cast<cuco_t*>(c.out[0])[row * p.N + col] = cuco_from_float<cuco_t>(v);
}
static __device__ __forceinline__ float staged(const cuco_ctx& c, const Problem& p, int64_t row, int64_t col) {
  return cuco_to_float(static_cast<const cuco_t*>(c.out[0])[row * p.N + col]);
}
// Every rank reduces every chunk; nothing to collect afterwards.
static __device__ __forceinline__ int reduce_per_stage(const Problem& p) { return p.W; }
static __device__ __forceinline__ int finish_per_stage(const Problem&) { return 0; }
static __device__ __forceinline__ int64_t reduce_chunk(const cuco_ctx& c, const Problem& p, int64_t s, int i) {
  return stage_chunk(c, p, s, i);
}
static __device__ void publish(const cuco_ctx& c, const Problem& p, int64_t g) {
  if (group_lane() == 0)
    for (int d = 0; d < c.world; ++d) cuco_signal_add(c, (c.rank + d) % c.world, SLOT_ARRIVE + arrive_idx(c.rank, g), 1);
}
// Tell every owner of a partial I pulled that its chunk g may be overwritten next call.
static __device__ void after_reduce(const cuco_ctx& c, const Problem& p, int64_t g) {
  if (group_lane() == 0)
    for (int d = 0; d < c.world; ++d) cuco_signal_add(c, (c.rank + d) % c.world, SLOT_DONE + (int)g, 1);
}
static __device__ __forceinline__ void drain(const cuco_ctx&) {}
"""

# ---------------------------------------------------------------- two-shot over GIN
GIN_PRIMS = r"""
// gin two-shot: one-sided puts the NIC moves, each adding to a GIN signal of the receiver once
// its bytes landed. Reduce-scatter into the owner's STAGE, all-gather into every RES.
#define ASYNC_LANDING 1    // a put lands after the issuer moved on: only its signal says when
#define ARRIVE_FROM_SELF 0
#define PUSH_REDUCE 1
#define GSLOT_ARRIVE 0                                 // + chunk or source rank
#define GSLOT_RESULT (CUCO_MAX_RANKS * MAX_CHUNKS)     // + chunk or owner rank
static __host__ __device__ __forceinline__ int arrivals_per_chunk(const cuco_ctx& c) { return c.world - 1; }
static __host__ __device__ __forceinline__ int64_t chunks_from_source(const Problem& p) { return num_chunks(p); }
static __device__ __forceinline__ void wait_arrive(const cuco_ctx& c, int idx, uint64_t n) { cuco_gin_wait(c, GSLOT_ARRIVE + idx, n); }
static __device__ __forceinline__ void wait_res(const cuco_ctx& c, int idx, uint64_t n) { cuco_gin_wait(c, GSLOT_RESULT + idx, n); }
static __device__ __forceinline__ void before_tile(const cuco_ctx&, const Problem&, int64_t) {}
static __device__ __forceinline__ int gin_context() { return group_id() % CUCO_GIN_CONTEXTS; }
"""

GIN_OPS = r"""
// Reduce-scatter: one put per chunk, issued by the group's lane 0 (the NIC moves the bytes).
static __device__ void publish(const cuco_ctx& c, const Problem& p, int64_t g) {
  const Chunk ch = chunk_at(p, g);
  if (ch.owner == c.rank || group_lane() != 0) return;
  cuco_gin_put(c, gin_context(), ch.owner, stage_off(p, c.rank, ch.lo - ch.owner * p.R), part_off(p, ch.lo),
               chunk_bytes(p, ch), GSLOT_ARRIVE + arrive_idx(c.rank, g), 1);
}
// All-gather: my reduced rows from RES to every peer's RES (the group wrote them: fence first).
static __device__ void after_reduce(const cuco_ctx& c, const Problem& p, int64_t g) {
  if (group_lane() != 0) return;
  const Chunk ch = chunk_at(p, g);
  const size_t off = res_off(p, ch.lo);
  __threadfence_system();
  for (int d = 1; d < c.world; ++d)
    cuco_gin_put(c, gin_context(), (c.rank + d) % c.world, off, off, chunk_bytes(p, ch),
                 GSLOT_RESULT + result_idx(c.rank, g), 1);
}
// PART and RES are put sources: they must not change (next call) before the NIC consumed them.
static __device__ __forceinline__ void drain(const cuco_ctx& c) {
  if (group_lane() == 0) cuco_gin_flush(c, gin_context());
}
"""

# ---------------------------------------------------------------- multimem (NVLink SHARP)
MM_PRIMS = r"""
// multimem: the owner of a row block sums it in the switch (ld_reduce over every rank's PART)
// and stores the result to every rank's RES at once (st). Ranks publish finished partial chunks
// to the owner with a signal, the owner's own included.
#define ASYNC_LANDING 0
#define ARRIVE_FROM_SELF 1
#define PUSH_REDUCE 0
static __host__ __device__ __forceinline__ int arrivals_per_chunk(const cuco_ctx& c) { return c.world; }
static __host__ __device__ __forceinline__ int64_t chunks_from_source(const Problem& p) { return num_chunks(p); }
static __device__ __forceinline__ void wait_arrive(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_ARRIVE + idx, n); }
static __device__ __forceinline__ void wait_res(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_RESULT + idx, n); }
static __device__ __forceinline__ void before_tile(const cuco_ctx&, const Problem&, int64_t) {}
"""

MM_OPS = r"""
// Row `row` reduced in the switch and broadcast with st, two elements per access (the forms the
// switch executes natively for 16-bit types) when the row starts on a pair boundary. With
// RMSNorm, pass 1 keeps the sums in my own RES and pass 2 broadcasts the normalised values.
static __device__ void reduce_row(const cuco_ctx& c, const Problem& p, int64_t row) {
  const int64_t step = (row * p.N) % 2 == 0 ? 2 : 1;
  cuco_t* res = symm_at(c, res_off(p, row));
  cuco_t* out = static_cast<cuco_t*>(c.out[0]) + row * p.N;
  float ss = 0.f;
  for (int64_t col = group_lane() * step; col < p.N; col += GROUP_WIDTH * step) {
    const size_t off = part_off(p, row) + (size_t)col * sizeof(cuco_t);
    const bool two = step == 2 && col + 1 < p.N;
    const float2 v = two ? cuco_mm_ld_reduce2(c, off) : make_float2(cuco_mm_ld_reduce(c, off), 0.f);
    ss += v.x * v.x + v.y * v.y;
    cuco_t* dst = p.norm ? res : out;
    dst[col] = cuco_from_float<cuco_t>(v.x);
    if (two) dst[col + 1] = cuco_from_float<cuco_t>(v.y);
    if (p.norm) continue;
    if (two) cuco_mm_st2(c, res_off(p, row) + (size_t)col * sizeof(cuco_t), v);
    else cuco_mm_st(c, res_off(p, row) + (size_t)col * sizeof(cuco_t), v.x);
  }
  if (!p.norm) return;
  const cuco_t* gamma = static_cast<const cuco_t*>(c.in[2]);
  const float inv = rsqrtf(group_sum(ss) / (float)p.N + RMS_EPS);
  for (int64_t col = group_lane() * step; col < p.N; col += GROUP_WIDTH * step) {
    const bool two = step == 2 && col + 1 < p.N;
    float2 y = make_float2(cuco_to_float(res[col]) * inv * cuco_to_float(gamma[col]), 0.f);
    if (two) y.y = cuco_to_float(res[col + 1]) * inv * cuco_to_float(gamma[col + 1]);
    out[col] = cuco_from_float<cuco_t>(y.x);
    if (two) out[col + 1] = cuco_from_float<cuco_t>(y.y);
    if (two) cuco_mm_st2(c, res_off(p, row) + (size_t)col * sizeof(cuco_t), y);
    else cuco_mm_st(c, res_off(p, row) + (size_t)col * sizeof(cuco_t), y.x);
  }
}
static __device__ __forceinline__ int reduce_per_stage(const Problem&) { return 1; }
static __device__ __forceinline__ int finish_per_stage(const Problem& p) { return p.W - 1; }
static __device__ __forceinline__ int64_t reduce_chunk(const cuco_ctx& c, const Problem& p, int64_t s, int) {
  return (int64_t)c.rank * num_chunks(p) + s;
}
static __device__ void publish(const cuco_ctx& c, const Problem& p, int64_t g) {
  if (SCOPE_SIGNALS && group_lane() == 0)
    cuco_signal_add(c, chunk_at(p, g).owner, SLOT_ARRIVE + arrive_idx(c.rank, g), 1);
}
// The st already delivered the rows everywhere: tell the peers.
static __device__ void after_reduce(const cuco_ctx& c, const Problem& p, int64_t g) {
  if (SCOPE_SIGNALS && group_lane() == 0)
    for (int d = 1; d < c.world; ++d) cuco_signal_add(c, (c.rank + d) % c.world, SLOT_RESULT + result_idx(c.rank, g), 1);
}
static __device__ __forceinline__ void drain(const cuco_ctx&) {}
"""

# ---------------------------------------------------------------- two-shot over the copy engines
CE_PRIMS = r"""
// copy_engine two-shot: the host enqueues DMA puts of partial rows to their owner and DMA gets
// of reduced rows from it, ordered by streams and pad signals; SMs only sum and normalise.
#define ASYNC_LANDING 0    // a copy has landed before later work on its stream starts
#define ARRIVE_FROM_SELF 0
#define PUSH_REDUCE 1
static __host__ __device__ __forceinline__ int arrivals_per_chunk(const cuco_ctx& c) { return c.world - 1; }
static __host__ __device__ __forceinline__ int64_t chunks_from_source(const Problem& p) { return num_chunks(p); }
static __device__ __forceinline__ void wait_arrive(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_ARRIVE + idx, n); }
static __device__ __forceinline__ void wait_res(const cuco_ctx& c, int idx, uint64_t n) { cuco_wait(c, SLOT_RESULT + idx, n); }
static __device__ __forceinline__ void before_tile(const cuco_ctx&, const Problem&, int64_t) {}
"""

CE_OPS = r"""
// The copy engines move every byte (host side); the reduce kernel only sums what arrived.
static __device__ __forceinline__ void publish(const cuco_ctx&, const Problem&, int64_t) {}
static __device__ __forceinline__ void after_reduce(const cuco_ctx&, const Problem&, int64_t) {}
static __device__ __forceinline__ void drain(const cuco_ctx&) {}
"""

# Sum and normalise one row, one element per lane step (every backend but multimem).
ROW_GENERIC = r"""
// Row `row` summed over ranks; with RMSNorm a second pass rescales what the first one stored
// (rounded to the dtype once before normalising: within tolerance, and no scratch row needed).
static __device__ void reduce_row(const cuco_ctx& c, const Problem& p, int64_t row) {
  float ss = 0.f;
  for (int64_t col = group_lane(); col < p.N; col += GROUP_WIDTH) {
    const float v = reduce_at(c, p, row, col);
    ss += v * v;
    emit(c, p, row, col, v, !p.norm);
  }
  if (!p.norm) return;
  const cuco_t* gamma = static_cast<const cuco_t*>(c.in[2]);
  const float inv = rsqrtf(group_sum(ss) / (float)p.N + RMS_EPS);
  for (int64_t col = group_lane(); col < p.N; col += GROUP_WIDTH)
    emit(c, p, row, col, staged(c, p, row, col) * inv * cuco_to_float(gamma[col]), true);
}
"""

COMM_WORK = r"""
static __device__ void publish_item(const cuco_ctx& c, const Problem& p, int64_t g) {
  if (group_lane() == 0) wait_local(c, p, g);
  group_sync();
  publish(c, p, g);
}

static __device__ void reduce_item(const cuco_ctx& c, const Problem& p, int64_t g) {
  const Chunk ch = chunk_at(p, g);
  if (group_lane() == 0) {
    if (PUSH_REDUCE) wait_local(c, p, g);
    wait_arrivals(c, p, g);
  }
  group_sync();
  for (int64_t row = ch.lo; row < ch.hi; ++row) reduce_row(c, p, row);
  group_sync();
  after_reduce(c, p, g);
}

// Copy the reduced rows of another owner's chunk from RES into the output once they landed.
static __device__ void finish_item(const cuco_ctx& c, const Problem& p, int64_t g) {
  const Chunk ch = chunk_at(p, g);
  if (group_lane() == 0) wait_result(c, p, ch.owner, g);
  group_sync();
  const cuco_t* src = symm_at(c, res_off(p, ch.lo));
  cuco_t* dst = static_cast<cuco_t*>(c.out[0]) + ch.lo * p.N;
  for (int64_t i = group_lane(); i < (ch.hi - ch.lo) * p.N; i += GROUP_WIDTH) dst[i] = src[i];
}

#define PH_PUBLISH 1
#define PH_REDUCE 2
#define PH_FINISH 4

// The comm side's work items over stages [s0, s1): per stage, world publishes, the reductions
// and the copies, in stage-major or phase-major order (STAGE_MAJOR). Group `gid` of `groups`
// takes every groups-th item in order. An item waits only on earlier items (of any rank) and on
// the GEMM, which never waits, so every item completes.
static __device__ void comm_work(const cuco_ctx& c, const Problem& p, int64_t s0, int64_t s1, int phases, int gid,
                                 int groups) {
  const int64_t np = (phases & PH_PUBLISH) ? p.W : 0;
  const int64_t nr = (phases & PH_REDUCE) ? reduce_per_stage(p) : 0;
  const int64_t nf = (phases & PH_FINISH) ? finish_per_stage(p) : 0;
  const int64_t per = np + nr + nf, nst = s1 - s0;
  for (int64_t it = gid; it < nst * per; it += groups) {
    int64_t s, k, q = it;
    if (STAGE_MAJOR) {
      s = s0 + q / per;
      k = q % per;
    } else if (q < np * nst) {
      s = s0 + q / np;
      k = q % np;
    } else if ((q -= np * nst) < nr * nst) {
      s = s0 + q / nr;
      k = np + q % nr;
    } else {
      q -= nr * nst;
      s = s0 + q / nf;
      k = np + nr + q % nf;
    }
    if (k < np) publish_item(c, p, stage_chunk(c, p, s, (int)k));
    else if (k < np + nr) reduce_item(c, p, reduce_chunk(c, p, s, (int)(k - np)));
    else finish_item(c, p, stage_chunk(c, p, s, (int)(k - np - nr)));
  }
}
"""

KERNELS_SPLIT = r"""
__global__ void __launch_bounds__(THREADS) gemm_kernel(cuco_ctx c, int64_t s0, int64_t s1) {
  run_gemm(c, problem(c), s0, s1, blockIdx.x, gridDim.x);
}

__global__ void __launch_bounds__(THREADS) comm_kernel(cuco_ctx c, int64_t s0, int64_t s1, int phases) {
  comm_work(c, problem(c), s0, s1, phases, group_id(), group_count(gridDim.x));
  drain(c);
}

static int gemm_grid(const cuco_ctx& c, const Problem& p, int64_t s0, int64_t s1) {
  const int64_t tiles = (s1 - s0) * p.W * ((chunk_rows(p) + BM - 1) / BM) * ((p.N + BN - 1) / BN);
  const int64_t cap = 2 * (int64_t)c.num_sms;
  return (int)(tiles < cap ? (tiles > 0 ? tiles : 1) : cap);
}
"""

KERNEL_FUSED = r"""
// One persistent kernel: CTAs [0, COMM_CTAS) publish, reduce and collect chunks as the other
// CTAs' GEMM tiles finish them.
__global__ void __launch_bounds__(THREADS) fused_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  const int64_t nch = num_chunks(p);
  if ((int)blockIdx.x < COMM_CTAS) {
    comm_work(c, p, 0, nch, PH_PUBLISH | PH_REDUCE | PH_FINISH, group_id(), group_count(COMM_CTAS));
    drain(c);
    return;
  }
  run_gemm(c, p, 0, nch, blockIdx.x - COMM_CTAS, gridDim.x - COMM_CTAS);
}
"""
