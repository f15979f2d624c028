"""Host entries (``cuco_run``) of the GEMM + reduce-scatter family, one per backend and placement.

Pipelined placements walk the same steps (``next_step``): compute the fewest GEMM bands that
complete the next chunk, then hand the chunks that are now whole to communication. @OWN@ is
how the owner gets its result once the peers' chunks are on their way (it depends on the sync
scope); the renderer fills it from the *OWN* pieces below.
"""

_ENTRY = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  const int64_t nch = num_chunks(p), nb = num_bands(p);
"""

_FORK = r"""  if (int err = ensure_side_stream()) return err;
  cudaEventRecord(g_fork, stream);
  cudaStreamWaitEvent(g_side, g_fork, 0);
"""

_STEPS = r"""  for (int64_t ch = 0, b0 = 0, b1 = 0, end = 0; ch < nch; ch = end, b0 = b1) {
    next_step(p, ch, b0, &b1, &end);
"""

_JOIN = r"""  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);
"""

_RETURN = r"""  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

# --- lsa / gin: SM- or NIC-driven pushes from device kernels ---------------------------------

PUSH_SEQUENTIAL = _ENTRY + r"""  launch_gemm(c, p, TileRange{1, p.world + 1, 0, nb}, stream);  // every row block's partial, own last
  push_kernel<<<COMM_CTAS, THREADS, 0, stream>>>(c, 0, nch);
  barrier_kernel<<<1, 32, 0, stream>>>(c);
  launch_finish(c, p, 0, nb, 1, 0, stream);
""" + _RETURN

PUSH_STREAM_OVERLAP = _ENTRY + _FORK + r"""  // Chunk pipeline: whole chunks are pushed while the next bands are computed.
""" + _STEPS + r"""    launch_gemm(c, p, TileRange{1, p.world, b0, b1}, stream);
    cudaEventRecord(g_ready, stream);
    cudaStreamWaitEvent(g_side, g_ready, 0);
    push_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, ch, end);
  }
@OWN@""" + _JOIN + _RETURN

PUSH_SPLIT = _ENTRY + _FORK + r"""  launch_gemm(c, p, TileRange{1, p.world, 0, nb}, stream);  // the peers' row blocks first
  cudaEventRecord(g_ready, stream);
  cudaStreamWaitEvent(g_side, g_ready, 0);
  push_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, 0, nch);  // put early
@OWN@""" + _JOIN + _RETURN

# The own block: global_barrier computes its partial while the pushes run, then sums after the
# barrier; signals let one kernel compute the own partial and wait late, per peer or per chunk.
OWN_AFTER_BARRIER = r"""  barrier_kernel<<<1, 32, 0, g_side>>>(c);
  launch_gemm(c, p, TileRange{0, 1, 0, nb}, stream);  // own partial overlaps the pushes
  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);  // wait late: only the sum needs the peers
  launch_finish(c, p, 0, nb, 1, 0, stream);
"""
OWN_WAIT_IN_KERNEL = r"""  launch_finish(c, p, 0, nb, 0, 1, stream);  // own partial, then wait for the peers in-kernel
"""
OWN_PER_STEP = r"""  // One late kernel per pipeline step: each waits only for the chunks its bands overlap.
""" + _STEPS + r"""    launch_finish(c, p, b0, b1, 0, 1, stream);
  }
"""

PUSH_FUSED = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  // Every CTA must be co-resident (they wait on each other): one CTA per SM.
  const int compute = c.num_sms - COMM_CTAS > 1 ? c.num_sms - COMM_CTAS : 1;
  fused_kernel<<<COMM_CTAS + compute, THREADS, 0, stream>>>(c);
""" + _RETURN

# --- copy_engine: the DMA engines move chunks, ordered on streams from the host ---------------

CE_PUT = r"""
// Chunks [ch0, ch1) of every peer's row block to its owner, by the copy engines, on stream s.
static void put_chunks(const cuco_ctx& c, const Problem& p, int64_t ch0, int64_t ch1, cudaStream_t s) {
  const char* stage = static_cast<const char*>(c.symm);
  const int64_t nch = num_chunks(p);
  for (int i = 1; i < p.world; ++i) {
    const int peer = (p.rank + i) % p.world;
    for (int64_t ch = ch0; ch < ch1; ++ch) {
      cuco_ce_put(c, peer, chunk_dst(p, ch), stage + chunk_src(p, peer, ch), chunk_size(p, ch), s);
      @CE_SIGNAL@
    }
  }
}
"""
CE_SIGNAL_PER_TILE = "cuco_ce_signal(c, peer, p.rank * MAX_CHUNKS + (int)ch, 1, s);  // this chunk has landed"
CE_SIGNAL_PER_PEER = "if (ch == nch - 1) cuco_ce_signal(c, peer, p.rank, (uint64_t)nch, s);  // all chunks landed"
CE_SIGNAL_NONE = "(void)nch;  // global_barrier: the barrier kernel follows the copies on s"

CE_SEQUENTIAL = _ENTRY + r"""  launch_gemm(c, p, TileRange{1, p.world + 1, 0, nb}, stream);
  put_chunks(c, p, 0, nch, stream);
  barrier_kernel<<<1, 32, 0, stream>>>(c);
  launch_finish(c, p, 0, nb, 1, 0, stream);
""" + _RETURN

CE_STREAM_OVERLAP = _ENTRY + _FORK + _STEPS + r"""    launch_gemm(c, p, TileRange{1, p.world, b0, b1}, stream);
    cudaEventRecord(g_ready, stream);
    cudaStreamWaitEvent(g_side, g_ready, 0);
    put_chunks(c, p, ch, end, g_side);  // copy these chunks while the next bands are computed
  }
@OWN@""" + _JOIN + _RETURN

CE_SPLIT = _ENTRY + _FORK + r"""  launch_gemm(c, p, TileRange{1, p.world, 0, nb}, stream);  // the peers' row blocks first
  cudaEventRecord(g_ready, stream);
  cudaStreamWaitEvent(g_side, g_ready, 0);
  put_chunks(c, p, 0, nch, g_side);  // put early
@OWN@""" + _JOIN + _RETURN

# global_barrier and per_peer_signal: the own partial overlaps the copies, then the consuming
# stream waits (barrier, or the pad through cuco_ce_wait: no SM spins) and sums.
_CE_OWN_GEMM = "  launch_gemm(c, p, TileRange{0, 1, 0, nb}, stream);  // own partial overlaps the copies\n"
CE_OWN_BARRIER = _CE_OWN_GEMM + r"""  barrier_kernel<<<1, 32, 0, g_side>>>(c);
  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);
  launch_finish(c, p, 0, nb, 1, 0, stream);
"""
CE_OWN_PER_PEER = _CE_OWN_GEMM + r"""  for (int i = 1; i < p.world; ++i)  // the stream, not an SM, waits
    cuco_ce_wait(c, (p.rank + i) % p.world, c.epoch * (uint64_t)nch, stream);
  launch_finish(c, p, 0, nb, 1, 0, stream);
"""

# --- multimem: partials stay home; the owner reduces them through the switch -----------------

MM_SEQUENTIAL = _ENTRY + r"""  launch_gemm(c, p, TileRange{1, p.world + 1, 0, nb}, stream);
  barrier_kernel<<<1, 32, 0, stream>>>(c);
  reduce_kernel<<<COMM_CTAS, THREADS, 0, stream>>>(c, 0, nch);
""" + _RETURN

MM_STREAM_OVERLAP = _ENTRY + _FORK + _STEPS + r"""    launch_gemm(c, p, TileRange{1, p.world + 1, b0, b1}, stream);
    cudaEventRecord(g_ready, stream);
    cudaStreamWaitEvent(g_side, g_ready, 0);
@MM_STAGE@    reduce_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, ch, end);  // while the next bands compute
  }
""" + _JOIN + _RETURN
MM_STAGE_BARRIER = "    barrier_kernel<<<1, 32, 0, g_side>>>(c);  // every rank has computed these bands\n"

MM_SPLIT = _ENTRY + _FORK + r"""  reduce_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, 0, nch);  // issued early, waits per signal
  launch_gemm(c, p, TileRange{1, p.world + 1, 0, nb}, stream);
""" + _JOIN + _RETURN

MM_FUSED = PUSH_FUSED

# --- host_nccl: the host-driven baseline ------------------------------------------------------

NCCL_SEQUENTIAL = _ENTRY + r"""  (void)nch;
  launch_gemm(c, p, TileRange{1, p.world + 1, 0, nb}, stream);
  if (cudaError_t e = cuco_coll_reduce_scatter(c, 0, (size_t)(p.shard * p.N), c.out[0], stream)) return (int)e;
""" + _RETURN

NCCL_STREAM_OVERLAP = _ENTRY + _FORK + r"""  cuco_t* C = static_cast<cuco_t*>(c.out[0]);
""" + _STEPS + r"""    launch_gemm(c, p, TileRange{1, p.world + 1, b0, b1}, stream);
    cudaEventRecord(g_ready, stream);
    cudaStreamWaitEvent(g_side, g_ready, 0);
    for (int64_t k = ch; k < end; ++k) {  // one reduce-scatter per chunk while the next bands compute
      const int64_t lo = chunk_lo(p, k), rows = chunk_hi(p, k) - lo;
      const size_t off = (size_t)stage_off(p, 0, lo) * sizeof(cuco_t);
      if (cudaError_t e = cuco_coll_reduce_scatter(c, off, (size_t)(rows * p.N), C + lo * p.N, g_side)) return (int)e;
    }
  }
""" + _JOIN + _RETURN
