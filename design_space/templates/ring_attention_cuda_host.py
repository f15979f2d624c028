"""CUDA text of the ring-attention templates, host side: how each backend runs ring steps from
the host (`ring`, and `prepare` for what the steps read), the side stream, and one `cuco_run`
body per placement. The bodies are backend-neutral: they call `ring`, `prepare`, `attend_kernel`
and `attend_steps_kernel`."""

RING_DEVICE = r"""
// Ring steps [t0, t1] as one kernel of the comm CTAs (they pack the own block themselves).
static void prepare(const cuco_ctx&, const Problem&, cudaStream_t) {}
static void ring(const cuco_ctx& c, const Problem& p, int t0, int t1, cudaStream_t s) {
  comm_kernel<<<(int)comm_workers(p), THREADS, 0, s>>>(c, t0, t1);
}
"""

PREPARE_PACK = r"""
// The own block, packed into the own slot before any transfer reads it.
static void prepare(const cuco_ctx& c, const Problem&, cudaStream_t s) {
  pack_kernel<<<c.num_sms, THREADS, 0, s>>>(c);
}
"""

# @BEFORE_BLOCK@ / @BEFORE_CHUNK@ / @AFTER_CHUNK@ / @AFTER_BLOCK@: the scope's arrival signals.
RING_CE_SIGNALS = r"""
// copy_engine: the DMA engines move each chunk, issued from the host in stream order; pad signals
// (cuco_ce_signal / cuco_ce_wait) sequence them with the neighbours: wait for the slot's credits,
// wait for what is passed on to have arrived, copy, signal the arrival, release the passed-on slot.
static void ring(const cuco_ctx& c, const Problem& p, int t0, int t1, cudaStream_t s) {
  const int64_t rows = chunk_rows(p), nch = num_chunks(p);
  const size_t row_bytes = 2 * p.D * sizeof(cuco_t);
  for (int t = t0; t <= t1; ++t) {
    const int64_t G = gstep(c, t);
    if (fills(c, G) > 1) cuco_ce_wait(c, CREDIT_SIGNALS + slot_of(c, G), free_target(c, p, G), s);
@BEFORE_BLOCK@
    const char* src = static_cast<const char*>(c.symm) + slot_offset(p, t == 1 ? c.world : slot_of(c, G - 1));
    const size_t dst = slot_offset(p, slot_of(c, G));
    for (int64_t ch = 0; ch < nch; ++ch) {
      const int64_t g0 = ch * rows, g1 = g0 + rows < p.rows ? g0 + rows : p.rows;
@BEFORE_CHUNK@
      cuco_ce_put(c, next_rank(c), dst + g0 * row_bytes, src + g0 * row_bytes, (size_t)(g1 - g0) * row_bytes, s);
@AFTER_CHUNK@
    }
@AFTER_BLOCK@
    if (t > 1) cuco_ce_signal(c, prev_rank(c), CREDIT_SIGNALS + slot_of(c, G - 1), 1, s);  // passed on
    if (t == c.world - 1) cuco_ce_signal(c, prev_rank(c), CREDIT_SIGNALS + slot_of(c, G), 1, s);
  }
}
"""

CE_TILE = {
    "@BEFORE_BLOCK@": "",
    "@BEFORE_CHUNK@": "      if (t > 1) cuco_ce_wait(c, data_slot(c, G - 1, ch), data_target(c, p, G - 1), s);",
    "@AFTER_CHUNK@": "      cuco_ce_signal(c, next_rank(c), data_slot(c, G, ch), 1, s);",
    "@AFTER_BLOCK@": "",
}
CE_PEER = {
    "@BEFORE_BLOCK@": "    if (t > 1) cuco_ce_wait(c, data_slot(c, G - 1, 0), data_target(c, p, G - 1), s);",
    "@BEFORE_CHUNK@": "",
    "@AFTER_CHUNK@": "",
    "@AFTER_BLOCK@": "    cuco_ce_signal(c, next_rank(c), data_slot(c, G, 0), (uint64_t)nch, s);",
}

RING_CE_GLOBAL = r"""
// copy_engine: the DMA engines move each chunk, issued from the host in stream order; barrier
// kernels before (slots free everywhere) and after (the step has landed everywhere).
static void ring(const cuco_ctx& c, const Problem& p, int t0, int t1, cudaStream_t s) {
  const int64_t rows = chunk_rows(p), nch = num_chunks(p);
  const size_t row_bytes = 2 * p.D * sizeof(cuco_t);
  for (int t = t0; t <= t1; ++t) {
    const int64_t G = gstep(c, t);
    if (ring_slots(c) < c.world - 1 || t == 1) barrier_kernel<<<1, 32, 0, s>>>(c);
    const char* src = static_cast<const char*>(c.symm) + slot_offset(p, t == 1 ? c.world : slot_of(c, G - 1));
    const size_t dst = slot_offset(p, slot_of(c, G));
    for (int64_t ch = 0; ch < nch; ++ch) {
      const int64_t g0 = ch * rows, g1 = g0 + rows < p.rows ? g0 + rows : p.rows;
      cuco_ce_put(c, next_rank(c), dst + g0 * row_bytes, src + g0 * row_bytes, (size_t)(g1 - g0) * row_bytes, s);
    }
    barrier_kernel<<<1, 32, 0, s>>>(c);
  }
}
"""

RING_COLL = r"""
// host_nccl: each step's block goes to the right neighbour as library send/recv calls, one per
// chunk; every rank makes the same calls in the same order, and the library synchronises them.
static void ring(const cuco_ctx& c, const Problem& p, int t0, int t1, cudaStream_t s) {
  const int64_t rows = chunk_rows(p), nch = num_chunks(p);
  const size_t row_bytes = 2 * p.D * sizeof(cuco_t);
  for (int t = t0; t <= t1; ++t) {
    const int64_t G = gstep(c, t);
    const size_t src = slot_offset(p, t == 1 ? c.world : slot_of(c, G - 1)), dst = slot_offset(p, slot_of(c, G));
    for (int64_t ch = 0; ch < nch; ++ch) {
      const int64_t g0 = ch * rows, g1 = g0 + rows < p.rows ? g0 + rows : p.rows;
      cuco_coll_sendrecv(c, next_rank(c), src + g0 * row_bytes, prev_rank(c), dst + g0 * row_bytes,
                         (size_t)(g1 - g0) * row_bytes, s);
    }
  }
}
"""

STREAMS = r"""
// Side stream and events per rank (virtual ranks may share a process), created once; the side
// stream joins `stream` before cuco_run returns.
struct Streams {
  cudaStream_t side;
  cudaEvent_t fork, join, landed[CUCO_MAX_RANKS], done[CUCO_MAX_RANKS];
};
static Streams g_streams[CUCO_MAX_RANKS];
static int ensure_streams(const cuco_ctx& c) {
  Streams& s = g_streams[c.rank];
  if (s.side == nullptr) {
    cudaStreamCreateWithFlags(&s.side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&s.join, cudaEventDisableTiming);
    for (int i = 0; i < CUCO_MAX_RANKS; ++i) {
      cudaEventCreateWithFlags(&s.landed[i], cudaEventDisableTiming);
      cudaEventCreateWithFlags(&s.done[i], cudaEventDisableTiming);
    }
  }
  return (int)cudaGetLastError();
}
"""

_ENTRY = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  const int workers = (int)compute_workers(c, p);
"""
_FORK = r"""  if (int err = ensure_streams(c)) return err;
  Streams& s = g_streams[c.rank];
  prepare(c, p, stream);
  cudaEventRecord(s.fork, stream);
  cudaStreamWaitEvent(s.side, s.fork, 0);
"""
_JOIN = r"""  cudaEventRecord(s.join, s.side);
  cudaStreamWaitEvent(stream, s.join, 0);
"""
_EXIT = r"""  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

HOST_SEQUENTIAL = _ENTRY + r"""  prepare(c, p, stream);
  ring(c, p, 1, c.world - 1, stream);  // the whole ring first
  attend_kernel<<<workers, THREADS, 0, stream>>>(c, 0, c.world - 1);
""" + _EXIT

HOST_GATHER = _ENTRY + r"""  pack_kernel<<<c.num_sms, THREADS, 0, stream>>>(c);
  // One collective: block j lands in slot j of every rank.
  cuco_coll_allgather(c, static_cast<char*>(c.symm) + slot_offset(p, c.world), slot_bytes(p), 0, stream);
  attend_kernel<<<workers, THREADS, 0, stream>>>(c, 0, c.world - 1);
""" + _EXIT

HOST_SPLIT_GLOBAL = _ENTRY + _FORK + r"""  ring(c, p, 1, c.world - 1, s.side);  // put early: the whole ring
  cudaEventRecord(s.join, s.side);
  attend_kernel<<<workers, THREADS, 0, stream>>>(c, 0, 0);  // the own block meanwhile
  cudaStreamWaitEvent(stream, s.join, 0);                  // wait late
  attend_kernel<<<workers, THREADS, 0, stream>>>(c, 1, c.world - 1);
""" + _EXIT

HOST_SPLIT_SIGNALS = _ENTRY + _FORK + r"""  ring(c, p, 1, c.world - 1, s.side);  // put early: the whole ring
  // One compute kernel; each tile waits in the kernel for the chunks it reads, as late as possible.
  attend_steps_kernel<<<workers, THREADS, 0, stream>>>(c, 0, c.world - 1);
""" + _JOIN + _EXIT

HOST_OVERLAP_GLOBAL = _ENTRY + _FORK + r"""  attend_kernel<<<workers, THREADS, 0, stream>>>(c, 0, 0);
  const int slots = (int)ring_slots(c);
  for (int t = 1; t < c.world; ++t) {
    // Step t refills the slot of step t - slots: this rank must be done with it (the ring step
    // then makes sure every rank is).
    if (t > slots) cudaStreamWaitEvent(s.side, s.done[t - slots], 0);
    ring(c, p, t, t, s.side);
    cudaEventRecord(s.landed[t], s.side);
    cudaStreamWaitEvent(stream, s.landed[t], 0);
    attend_kernel<<<workers, THREADS, 0, stream>>>(c, t, t);  // step t overlaps step t + 1's transfer
    cudaEventRecord(s.done[t], stream);
  }
""" + _JOIN + _EXIT

HOST_OVERLAP_SIGNALS = _ENTRY + _FORK + r"""  // One ring launch per step.
  for (int t = 1; t < c.world; ++t) ring(c, p, t, t, s.side);
  // One compute launch per step; each waits in the kernel for its chunks and releases the slot.
  for (int t = 0; t < c.world; ++t) attend_steps_kernel<<<workers, THREADS, 0, stream>>>(c, t, t);
""" + _JOIN + _EXIT

HOST_FUSED = _ENTRY + r"""  // All CTAs must be co-resident (compute waits on comm): comm_workers + workers <= SMs.
  fused_kernel<<<(int)comm_workers(p) + workers, THREADS, 0, stream>>>(c);
""" + _EXIT
