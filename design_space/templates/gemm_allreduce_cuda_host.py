"""CUDA text of the GEMM + all-reduce family, part 3: the host entries (``cuco_run``) of each
placement, for the device-driven backends (lsa, gin, multimem), the copy engines and the
host-driven NCCL baseline. ``@...@`` markers are filled in by the renderer."""

SIDE_STREAM = r"""
// Side stream for communication, created once per process; it joins `stream` before return.
static cudaStream_t g_side;
static cudaEvent_t g_fork, g_stage, g_join;
static int ensure_side_stream() {
  if (g_side == nullptr) {
    cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&g_fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&g_stage, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&g_join, cudaEventDisableTiming);
  }
  return (int)cudaGetLastError();
}
"""

RUN_OPEN = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  const int64_t nch = num_chunks(p);
"""

FORK = r"""  if (int err = ensure_side_stream()) return err;
  cudaEventRecord(g_fork, stream);
  cudaStreamWaitEvent(g_side, g_fork, 0);
"""

JOIN_CLOSE = r"""  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

CLOSE = r"""  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

# ------------------------------------------------------------ device-driven backends
# The global_barrier phases: every put in, barrier, reduce + all-gather, barrier, collect.
PHASES_GLOBAL = r"""  barrier_kernel<<<1, 32, 0, @S@>>>(c);  // every partial row is with its owner
  comm_kernel<<<COMM_CTAS, THREADS, 0, @S@>>>(c, 0, nch, PH_REDUCE);
  barrier_kernel<<<1, 32, 0, @S@>>>(c);  // every reduced row is with every rank
  comm_kernel<<<COMM_CTAS, THREADS, 0, @S@>>>(c, 0, nch, PH_FINISH);
"""

DEV_SEQUENTIAL = r"""  gemm_kernel<<<gemm_grid(c, p, 0, nch), THREADS, 0, stream>>>(c, 0, nch);
  comm_kernel<<<COMM_CTAS, THREADS, 0, stream>>>(c, 0, nch, PH_PUBLISH);
@PHASES@"""

# stream_overlap: one GEMM launch per stage on `stream`; the side stream follows stage by stage.
DEV_STREAM_OVERLAP = r"""  for (int64_t s = 0; s < nch; ++s) {
    gemm_kernel<<<gemm_grid(c, p, s, s + 1), THREADS, 0, stream>>>(c, s, s + 1);
    cudaEventRecord(g_stage, stream);
    cudaStreamWaitEvent(g_side, g_stage, 0);
@PER_STAGE@
  }
@AFTER@"""

SO_PER_TILE = r"""    comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, s, s + 1, PH_PUBLISH | PH_REDUCE | PH_FINISH);"""
SO_PUBLISH = r"""    comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, s, s + 1, PH_PUBLISH);"""
SO_AFTER_PER_PEER = r"""  comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, 0, nch, PH_REDUCE | PH_FINISH);  // waits per peer
"""

# split_put_wait: the comm kernel starts before the GEMM and waits on its tiles' signals.
DEV_SPLIT = r"""@COMM@
  gemm_kernel<<<gemm_grid(c, p, 0, nch), THREADS, 0, stream>>>(c, 0, nch);
"""
SPLIT_SIGNALS = r"""  comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, 0, nch, PH_PUBLISH | PH_REDUCE | PH_FINISH);  // put early"""
SPLIT_GLOBAL = r"""  comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, 0, nch, PH_PUBLISH);  // put early
@PHASES@"""

DEV_FUSED = r"""  (void)nch;
  // Every CTA must be co-resident (comm CTAs wait on compute CTAs): one CTA per SM.
  const int compute = c.num_sms - COMM_CTAS > 1 ? c.num_sms - COMM_CTAS : 1;
  fused_kernel<<<COMM_CTAS + compute, THREADS, 0, stream>>>(c);
"""

# ------------------------------------------------------------ copy engines
CE_HELPERS = r"""
// Reduce-scatter by DMA: my partial rows of stage s's chunks go to their owners' STAGE, each
// followed by a pad signal once the copy is done (stream order). With wait_local the copy first
// waits for the chunk's GEMM tiles to signal (a GEMM still running on another stream).
static void ce_publish(const cuco_ctx& c, const Problem& p, int64_t s, bool wait_local, cudaStream_t st) {
  for (int i = 0; i < c.world; ++i) {
    const int64_t g = stage_chunk(c, p, s, i);
    const Chunk ch = chunk_at(p, g);
    if (ch.owner == c.rank) continue;
    if (wait_local) cuco_ce_wait(c, SLOT_LOCAL + (int)g, c.epoch * (uint64_t)tiles_in(p, ch), st);
    if (chunk_bytes(p, ch))
      cuco_ce_put(c, ch.owner, stage_off(p, c.rank, ch.lo - ch.owner * p.R), symm_at(c, part_off(p, ch.lo)),
                  chunk_bytes(p, ch), st);
    if (SCOPE_SIGNALS) cuco_ce_signal(c, ch.owner, SLOT_ARRIVE + arrive_idx(c.rank, g), 1, st);
  }
}

// My chunks of stages [s0, s1) summed on SMs (a grid sized by the work: the copy engines take no
// CTAs), then one signal per reduced chunk to every peer once the kernel is done.
static void ce_reduce(const cuco_ctx& c, const Problem& p, int64_t s0, int64_t s1, cudaStream_t st) {
  const int grid = s1 - s0 < c.num_sms ? (int)(s1 - s0) : c.num_sms;
  comm_kernel<<<grid > 0 ? grid : 1, THREADS, 0, st>>>(c, s0, s1, PH_REDUCE);
  if (SCOPE_SIGNALS)
    for (int64_t s = s0; s < s1; ++s)
      for (int d = 1; d < c.world; ++d)
        cuco_ce_signal(c, (c.rank + d) % c.world, SLOT_RESULT + result_idx(c.rank, (int64_t)c.rank * num_chunks(p) + s),
                       1, st);
}

// All-gather by DMA: get every other owner's reduced rows of stages [s0, s1) straight into the output.
static void ce_collect(const cuco_ctx& c, const Problem& p, int64_t s0, int64_t s1, cudaStream_t st) {
  for (int64_t s = s0; s < s1; ++s)
    for (int i = 0; i + 1 < c.world; ++i) {
      const int64_t g = stage_chunk(c, p, s, i);
      const Chunk ch = chunk_at(p, g);
      if (SCOPE_SIGNALS) cuco_ce_wait(c, SLOT_RESULT + result_idx(ch.owner, g), result_need(c, p), st);
      if (chunk_bytes(p, ch))
        cuco_ce_get(c, ch.owner, static_cast<cuco_t*>(c.out[0]) + ch.lo * p.N, res_off(p, ch.lo), chunk_bytes(p, ch), st);
    }
}
"""

CE_PHASES_GLOBAL = r"""  barrier_kernel<<<1, 32, 0, @S@>>>(c);  // every DMA put before it on every rank is done
  ce_reduce(c, p, 0, nch, @S@);
  barrier_kernel<<<1, 32, 0, @S@>>>(c);
  ce_collect(c, p, 0, nch, @S@);
"""

CE_SEQUENTIAL = r"""  gemm_kernel<<<gemm_grid(c, p, 0, nch), THREADS, 0, stream>>>(c, 0, nch);
  for (int64_t s = 0; s < nch; ++s) ce_publish(c, p, s, false, stream);
@PHASES@"""

CE_STREAM_OVERLAP = r"""  for (int64_t s = 0; s < nch; ++s) {
    gemm_kernel<<<gemm_grid(c, p, s, s + 1), THREADS, 0, stream>>>(c, s, s + 1);
    cudaEventRecord(g_stage, stream);
    cudaStreamWaitEvent(g_side, g_stage, 0);
    ce_publish(c, p, s, false, g_side);
@PER_STAGE@
  }
@AFTER@"""
CE_SO_PER_TILE = r"""    ce_reduce(c, p, s, s + 1, g_side);  // its kernel waits for the stage's puts
    ce_collect(c, p, s, s + 1, g_side);"""
CE_AFTER_PER_PEER = r"""  ce_reduce(c, p, 0, nch, g_side);  // its kernel waits for each peer's whole contribution
  ce_collect(c, p, 0, nch, g_side);
"""

# split_put_wait: DMA puts queued on the side stream at once, each waiting on its chunk's tile
# signals; the reduction on `stream` waits on device for the puts' signals.
CE_SPLIT = r"""  for (int64_t s = 0; s < nch; ++s) ce_publish(c, p, s, true, g_side);  // put early
  gemm_kernel<<<gemm_grid(c, p, 0, nch), THREADS, 0, stream>>>(c, 0, nch);
@REST@"""
CE_SPLIT_SIGNALS = r"""  ce_reduce(c, p, 0, nch, stream);  // waits late, chunk by chunk, on the puts' signals
  ce_collect(c, p, 0, nch, g_side);
"""
CE_SPLIT_GLOBAL = r"""  barrier_kernel<<<1, 32, 0, g_side>>>(c);  // every rank's DMA puts are done
  cudaEventRecord(g_stage, g_side);
  cudaStreamWaitEvent(stream, g_stage, 0);
  ce_reduce(c, p, 0, nch, stream);
  barrier_kernel<<<1, 32, 0, stream>>>(c);
  ce_collect(c, p, 0, nch, stream);
"""

# ------------------------------------------------------------ host-driven NCCL baseline
NCCL_KERNELS = r"""
__global__ void __launch_bounds__(THREADS) gemm_kernel(cuco_ctx c, int64_t s0, int64_t s1) {
  run_gemm(c, problem(c), s0, s1, blockIdx.x, gridDim.x);
}

static int gemm_grid(const cuco_ctx& c, const Problem& p, int64_t s0, int64_t s1) {
  const int64_t tiles = (s1 - s0) * p.W * ((chunk_rows(p) + BM - 1) / BM) * ((p.N + BN - 1) / BN);
  const int64_t cap = 2 * (int64_t)c.num_sms;
  return (int)(tiles < cap ? (tiles > 0 ? tiles : 1) : cap);
}

// RMSNorm(Y) * gamma in place over output rows [lo, hi), one CTA per row.
__global__ void __launch_bounds__(THREADS) norm_kernel(cuco_ctx c, int64_t lo, int64_t hi) {
  const Problem p = problem(c);
  cuco_t* y = static_cast<cuco_t*>(c.out[0]);
  const cuco_t* gamma = static_cast<const cuco_t*>(c.in[2]);
  for (int64_t row = lo + blockIdx.x; row < hi; row += gridDim.x) {
    float ss = 0.f;
    for (int64_t col = threadIdx.x; col < p.N; col += THREADS) {
      const float v = cuco_to_float(y[row * p.N + col]);
      ss += v * v;
    }
    const float inv = rsqrtf(group_sum(ss) / (float)p.N + RMS_EPS);
    for (int64_t col = threadIdx.x; col < p.N; col += THREADS)
      y[row * p.N + col] = cuco_from_float<cuco_t>(cuco_to_float(y[row * p.N + col]) * inv * cuco_to_float(gamma[col]));
  }
}
static void launch_norm(const cuco_ctx& c, const Problem& p, int64_t lo, int64_t hi, cudaStream_t st) {
  const int64_t cap = 4 * (int64_t)c.num_sms;
  if (p.norm && hi > lo) norm_kernel<<<(int)(hi - lo < cap ? hi - lo : cap), THREADS, 0, st>>>(c, lo, hi);
}
"""

NCCL_SEQUENTIAL = r"""  gemm_kernel<<<gemm_grid(c, p, 0, nch), THREADS, 0, stream>>>(c, 0, nch);
  if (cudaError_t err = cuco_coll_allreduce(c, part_off(p, 0), (size_t)(p.M * p.N), c.out[0], stream)) return (int)err;
  launch_norm(c, p, 0, p.M, stream);
"""

# Chunked collectives on the side stream, stage by stage; every rank calls them in the same
# (rank-independent) order.
NCCL_STREAM_OVERLAP = r"""  for (int64_t s = 0; s < nch; ++s) {
    gemm_kernel<<<gemm_grid(c, p, s, s + 1), THREADS, 0, stream>>>(c, s, s + 1);
    cudaEventRecord(g_stage, stream);
    cudaStreamWaitEvent(g_side, g_stage, 0);
    for (int owner = 0; owner < c.world; ++owner) {
      const Chunk ch = chunk_at(p, owner * nch + s);
      if (ch.hi == ch.lo) continue;
      cuco_t* out = static_cast<cuco_t*>(c.out[0]) + ch.lo * p.N;
      if (cudaError_t err = cuco_coll_allreduce(c, part_off(p, ch.lo), (size_t)((ch.hi - ch.lo) * p.N), out, g_side))
        return (int)err;
      launch_norm(c, p, ch.lo, ch.hi, g_side);
    }
  }
"""
