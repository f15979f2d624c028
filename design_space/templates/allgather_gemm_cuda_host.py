"""CUDA text of the all-gather + GEMM family's host entries (cuco_run) per placement, and the
host-driven baseline (backend host_nccl) built on the library all-gather."""

HOST_SEQUENTIAL = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  comm_launch(c, p, 0, num_chunks(p), stream);
  barrier_kernel<<<1, 32, 0, stream>>>(c);
  launch_gemm(c, p, TileRange{0, c.world, 0, p.shard}, 0, stream);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

# Both two-stream placements: fork a side stream for the puts, compute the own rows at once,
# then the remote rows as the @REMOTE@ strategy says, and join the side stream back.
HOST_TWO_STREAMS = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  if (int err = ensure_side_stream()) return err;
@PRELUDE@
  cudaEventRecord(g_fork, stream);
  cudaStreamWaitEvent(g_side, g_fork, 0);
@PUSH@
@AFTER_PUSH@
  launch_gemm(c, p, TileRange{0, 1, 0, p.shard}, 0, stream);@OWN_ROWS@
@REMOTE@
  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

PUSH_PER_CHUNK = r"""  for (int64_t ch = 0; ch < nch; ++ch) comm_launch(c, p, ch, ch + 1, g_side);"""

PUSH_ALL_EARLY = r"""  comm_launch(c, p, 0, num_chunks(p), g_side);  // put early"""

AFTER_PUSH_BARRIER = r"""  barrier_kernel<<<1, 32, 0, g_side>>>(c);
  cudaEventRecord(g_join, g_side);"""

REMOTE_AFTER_BARRIER = r"""  cudaStreamWaitEvent(stream, g_join, 0);  // wait late: only the remote rows need the transfer
  launch_gemm(c, p, TileRange{1, c.world, 0, p.shard}, 0, stream);"""

REMOTE_PER_PEER = r"""  for (int i = 1; i < c.world; ++i) launch_gemm(c, p, TileRange{i, i + 1, 0, p.shard}, 1, stream);"""

REMOTE_PER_CHUNK = r"""  const int64_t rows = chunk_rows(p);
  for (int i = 1; i < c.world; ++i)
    for (int64_t ch = 0; ch < nch; ++ch) {
      const int64_t hi = (ch + 1) * rows < p.shard ? (ch + 1) * rows : p.shard;
      launch_gemm(c, p, TileRange{i, i + 1, ch * rows, hi}, 1, stream);
    }"""

REMOTE_WAIT_IN_KERNEL = r"""  launch_gemm(c, p, TileRange{1, c.world, 0, p.shard}, 1, stream);  // each tile waits for its rows"""

HOST_FUSED = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  // Every CTA must be co-resident (compute CTAs wait on comm CTAs): one CTA per SM.
  const int compute = c.num_sms - COMM_CTAS > 1 ? c.num_sms - COMM_CTAS : 1;
  fused_kernel<<<COMM_CTAS + compute, THREADS, 0, stream>>>(c);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""


# host_nccl, sequential: one library all-gather of the whole shard, then the GEMM.
HOST_NCCL_SEQUENTIAL = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  cuco_coll_allgather(c, c.in[0], (size_t)(p.shard * p.K) * sizeof(cuco_t), 0, stream);
  launch_gemm(c, p, TileRange{0, c.world, 0, p.shard}, 0, stream);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

# host_nccl, stream_overlap: one library all-gather per chunk on a side stream, an event after
# each; the GEMM of a chunk's rows waits for that chunk's event only.
HOST_NCCL_OVERLAP = r"""
static cudaEvent_t g_chunk_done[MAX_CHUNKS];
static int g_events;

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  if (int err = ensure_side_stream()) return err;
  const int64_t nch = num_chunks(p), rows = chunk_rows(p);
  while (g_events < nch) cudaEventCreateWithFlags(&g_chunk_done[g_events++], cudaEventDisableTiming);
  cudaEventRecord(g_fork, stream);
  cudaStreamWaitEvent(g_side, g_fork, 0);
  for (int64_t ch = 0; ch < nch; ++ch) {
    const int64_t in_chunk = p.shard - ch * rows < rows ? p.shard - ch * rows : rows;
    const size_t bytes = (size_t)(in_chunk * p.K) * sizeof(cuco_t);
    cuco_coll_allgather(c, static_cast<const cuco_t*>(c.in[0]) + ch * rows * p.K, bytes,
                        (size_t)(ch * rows * c.world * p.K) * sizeof(cuco_t), g_side);
    cudaEventRecord(g_chunk_done[ch], g_side);
  }
  launch_gemm(c, p, TileRange{0, 1, 0, p.shard}, 0, stream);  // own rows need no transfer
  for (int64_t ch = 0; ch < nch; ++ch) {
    cudaStreamWaitEvent(stream, g_chunk_done[ch], 0);
    const int64_t hi = (ch + 1) * rows < p.shard ? (ch + 1) * rows : p.shard;
    launch_gemm(c, p, TileRange{1, c.world, ch * rows, hi}, 0, stream);
  }
  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""
