"""CUDA text of the KV-cache transfer family: host entries (``cuco_run``) per placement, and the
host-driven transfers (copy engine, NCCL collectives). Pieces the renderer composes."""

from design_space.templates.shared_cuda import SIDE_STREAM  # noqa: F401  (composed by the renderer)


# sequential: compute every layer, then send everything, then every rank meets.
HOST_SEQUENTIAL = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  const Chunking k = chunking(p);
  if (p.prefill) {
    launch_gemm(c, p, k, 0, k.count, stream);  // every layer first,
@SEND@
  }
@RECEIVE@
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

# stream_overlap and split_put_wait: the prefill rank sends on a side stream (@SEND@, then
# @AFTER_SEND@ there) while it computes; the decode rank receives on `stream`.
HOST_TWO_STREAMS = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const Problem p = problem(c);
  const Chunking k = chunking(p);
  if (int err = ensure_side_stream()) return err;
  cudaEventRecord(g_fork, stream);
  cudaStreamWaitEvent(g_side, g_fork, 0);
  if (p.prefill) {
@SEND@
@AFTER_SEND@
  } else {
@RECEIVE@
  }
  cudaEventRecord(g_join, g_side);
  cudaStreamWaitEvent(stream, g_join, 0);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

HOST_FUSED = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  // Every CTA must be co-resident (comm CTAs wait on compute CTAs): one CTA per SM.
  const int compute = c.num_sms - COMM_CTAS > 1 ? c.num_sms - COMM_CTAS : 1;
  fused_kernel<<<COMM_CTAS + compute, THREADS, 0, stream>>>(c);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

# --- the @SEND@ / @AFTER_SEND@ / @RECEIVE@ texts -------------------------------------------

# Device-initiated (lsa, gin).
SEND_DEVICE_ALL = r"""    comm_kernel<<<COMM_CTAS, THREADS, 0, stream>>>(c, 0, k.count);  // then send it all"""

SEND_DEVICE_PER_LAYER = r"""    for (int64_t l = 0; l < p.L; ++l) {  // layer l goes out while layer l + 1 computes
      const int64_t ch0 = l * k.per_layer, ch1 = ch0 + k.per_layer;
      launch_gemm(c, p, k, ch0, ch1, stream);
      cudaEventRecord(g_fork, stream);
      cudaStreamWaitEvent(g_side, g_fork, 0);
      comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, ch0, ch1);
    }"""

SEND_DEVICE_EARLY = """\
    comm_kernel<<<COMM_CTAS, THREADS, 0, g_side>>>(c, 0, k.count);  // put early: chunks wait for their tiles
    launch_gemm(c, p, k, 0, k.count, stream);                         // tiles signal their chunk"""

BARRIER_ON_SIDE = r"""    barrier_kernel<<<1, 32, 0, g_side>>>(c);  // every rank meets once the transfer is complete"""

RECEIVE_AFTER_BARRIER_SEQUENTIAL = """\
  barrier_kernel<<<1, 32, 0, stream>>>(c);  // every rank: the whole transfer is complete
  if (!p.prefill) launch_receive(c, 0, k.count, stream);"""

RECEIVE_AFTER_BARRIER = r"""    barrier_kernel<<<1, 32, 0, stream>>>(c);  // the whole transfer is complete
    launch_receive(c, 0, k.count, stream);"""

RECEIVE_WAITING = r"""    launch_receive(c, 0, k.count, stream);  // waits on the partner's signals inside"""

# Copy engine: the host enqueues DMA copies; no SM moves a byte.
CE_SEND = r"""
// Chunks [ch0, ch1) to the partner by the copy engine, in order on stream s.
static int ce_send(const cuco_ctx& c, const Problem& p, const Chunking& k, int64_t ch0, int64_t ch1, cudaStream_t s) {
  for (int64_t ch = ch0; ch < ch1; ++ch) {
    const Chunk q = chunk_at(p, k, ch);
    if (ch == 0)  // the decode partner's buffer is free for this call
      if (cudaError_t e = cuco_ce_wait(c, CREDIT_SLOT, c.epoch, s)) return (int)e;
@BEFORE@
    cudaError_t e = cuco_ce_put(c, p.partner, q.off, static_cast<const char*>(c.out[0]) + q.off, q.bytes, s);
@AFTER@
    if (e != cudaSuccess) return (int)e;
  }
  return 0;
}
"""

CE_BEFORE_WAIT_READY = """\
    // put early, wait late: the engine starts a chunk once its tiles signalled this rank's pad
    if (cudaError_t e = cuco_ce_wait(c, READY_SLOT + (int)ch, c.epoch * (uint64_t)chunk_tiles(p, k, ch), s))
      return (int)e;"""

CE_AFTER_SIGNAL_CHUNK = """\
    if (e == cudaSuccess) e = cuco_ce_signal(c, p.partner, ARRIVE_SLOT + (int)ch, 1, s);  // after the put"""

CE_RECEIVE = r"""
// Decode ranks: the copy engine moves what landed from the symmetric buffer into out[0].
static int ce_receive(const cuco_ctx& c, const Problem& p, const Chunking& k, cudaStream_t s) {
  char* out = static_cast<char*>(c.out[0]);
  const char* symm = static_cast<const char*>(c.symm);
  // hand the buffer to the sender: its copies out of the previous call are done in stream order
  if (cudaError_t e = cuco_ce_signal(c, p.partner, CREDIT_SLOT, 1, s)) return (int)e;
@BODY@
}
"""

CE_RECEIVE_AFTER_BARRIER = """\
  barrier_kernel<<<1, 32, 0, s>>>(c);  // the partner's copies finished before its barrier
  return (int)cudaMemcpyAsync(out, symm, kv_offset(p, p.L, 0), cudaMemcpyDeviceToDevice, s);"""

CE_RECEIVE_PEER = r"""  // the partner signals once, after its last copy
  if (cudaError_t e = cuco_ce_wait(c, PEER_SLOT, c.epoch, s)) return (int)e;
  return (int)cudaMemcpyAsync(out, symm, kv_offset(p, p.L, 0), cudaMemcpyDeviceToDevice, s);"""

CE_RECEIVE_TILE = r"""  for (int64_t ch = 0; ch < k.count; ++ch) {  // each chunk as soon as it landed
    const Chunk q = chunk_at(p, k, ch);
    if (cudaError_t e = cuco_ce_wait(c, ARRIVE_SLOT + (int)ch, c.epoch, s)) return (int)e;
    if (cudaError_t e = cudaMemcpyAsync(out + q.off, symm + q.off, q.bytes, cudaMemcpyDeviceToDevice, s)) return (int)e;
  }
  return 0;"""

SEND_CE_ALL = r"""    if (int err = ce_send(c, p, k, 0, k.count, stream)) return err;  // then copy it all
    barrier_kernel<<<1, 32, 0, stream>>>(c);  // every rank: the whole transfer is complete"""

SEND_CE_PER_LAYER = r"""    for (int64_t l = 0; l < p.L; ++l) {  // layer l is copied while layer l + 1 computes
      const int64_t ch0 = l * k.per_layer, ch1 = ch0 + k.per_layer;
      launch_gemm(c, p, k, ch0, ch1, stream);
      cudaEventRecord(g_fork, stream);
      cudaStreamWaitEvent(g_side, g_fork, 0);
      if (int err = ce_send(c, p, k, ch0, ch1, g_side)) return err;
    }"""

SEND_CE_EARLY = r"""    if (int err = ce_send(c, p, k, 0, k.count, g_side)) return err;  // every copy enqueued up front
    launch_gemm(c, p, k, 0, k.count, stream);                         // tiles release their chunk"""

CE_AFTER_SEND_PEER = """\
    cuco_ce_signal(c, p.partner, PEER_SLOT, 1, g_side);  // after the last copy: the whole contribution"""

RECEIVE_CE_SEQUENTIAL = r"""  if (!p.prefill) {
    if (int err = ce_receive(c, p, k, stream)) return err;
  }"""

RECEIVE_CE = r"""    if (int err = ce_receive(c, p, k, stream)) return err;"""

# host_nccl: compute kernels plus NCCL point-to-point collectives launched from the host.
SEND_NCCL_ALL = r"""    // then one send of the whole cache, staged in the symmetric buffer
    if (cudaError_t e = cuco_coll_sendrecv(c, p.partner, 0, -1, 0, kv_offset(p, p.L, 0), stream)) return (int)e;"""

RECEIVE_NCCL_SEQUENTIAL = r"""  if (!p.prefill) {
    if (cudaError_t e = cuco_coll_sendrecv(c, -1, 0, p.partner, 0, kv_offset(p, p.L, 0), stream)) return (int)e;
    launch_receive(c, 0, k.count, stream);  // the recv completed in stream order
  }"""

SEND_NCCL_PER_LAYER = r"""    for (int64_t l = 0; l < p.L; ++l) {  // layer l's chunks go out while layer l + 1 computes
      const int64_t ch0 = l * k.per_layer, ch1 = ch0 + k.per_layer;
      launch_gemm(c, p, k, ch0, ch1, stream);
      cudaEventRecord(g_fork, stream);
      cudaStreamWaitEvent(g_side, g_fork, 0);
      for (int64_t ch = ch0; ch < ch1; ++ch) {
        const Chunk q = chunk_at(p, k, ch);
        if (cudaError_t e = cuco_coll_sendrecv(c, p.partner, q.off, -1, q.off, q.bytes, g_side)) return (int)e;
      }
    }"""

RECEIVE_NCCL_CHUNKS = r"""    for (int64_t ch = 0; ch < k.count; ++ch) {  // the same chunks, in the sender's order
      const Chunk q = chunk_at(p, k, ch);
      if (cudaError_t e = cuco_coll_sendrecv(c, -1, q.off, p.partner, q.off, q.bytes, stream)) return (int)e;
    }
    launch_receive(c, 0, k.count, stream);"""
