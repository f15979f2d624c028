"""CUDA text of the MoE family's kernels and host entry points, per backend and placement.

Device-initiated backends (lsa, gin) launch a layout kernel that also sends the headers, then
dispatch / expert / combine / final kernels ordered as the placement says (or one persistent
kernel). Host-issued backends read the counts back to the host first (as DeepEP's normal mode
does): copy_engine moves every chunk with a DMA copy and signals from the stream, host_nccl
all-gathers the headers and moves each ring shift with the library's send/recv.
"""

KERNELS_DEVICE = r"""
__global__ void __launch_bounds__(THREADS) layout_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  layout_cta(c, p);
  notify(c, p);
}
__global__ void __launch_bounds__(THREADS) dispatch_kernel(cuco_ctx c, int i0, int i1) {
  push_chunks(c, problem(c), 0, i0, i1, blockIdx.x, gridDim.x);
}
__global__ void __launch_bounds__(THREADS) combine_kernel(cuco_ctx c, int i0, int i1) {
  push_chunks(c, problem(c), 1, i0, i1, blockIdx.x, gridDim.x);
}
"""

KERNEL_FUSED = r"""
// One persistent kernel: CTA 0 lays out the routing and sends the headers, CTAs [0, COMM_CTAS)
// push the dispatch; the others run expert tiles (each sent home when done), then the combine.
__global__ void __launch_bounds__(THREADS) fused_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  if ((int)blockIdx.x < COMM_CTAS) {
    if (blockIdx.x == 0) {
      layout_cta(c, p);
      notify(c, p);
      if (threadIdx.x == 0) cuco_signal_add(c, p.rank, SLOT_LAYOUT, 1);  // local: layout done
    } else {
      if (threadIdx.x == 0) cuco_wait(c, SLOT_LAYOUT, c.epoch);
      __syncthreads();
    }
    push_chunks(c, p, 0, 0, p.world, blockIdx.x, COMM_CTAS);
    return;
  }
  const int worker = blockIdx.x - COMM_CTAS, workers = gridDim.x - COMM_CTAS;
  run_experts(c, p, 0, p.world, 0, ALL_ROWS, true, true, worker, workers);
  if (threadIdx.x == 0) cuco_wait(c, SLOT_LAYOUT, c.epoch);
  __syncthreads();
  final_tokens(c, p, true, worker, workers);
}
"""

# Host-issued backends: no device transfers, so a finished tile only stays where it is.
NO_DEVICE_PUSH = r"""
static __device__ __forceinline__ void combine_rows(const cuco_ctx&, const Problem&, int, const int64_t*, int64_t,
                                                    int64_t) {}
static __device__ __forceinline__ void flush_puts(const cuco_ctx&) {}
"""

NO_DEVICE_WAIT = r"""
// host_nccl: the library's collectives order everything; kernels never wait on signals.
static __device__ __forceinline__ void wait_header(const cuco_ctx&, const Problem&, int) {}
static __device__ __forceinline__ void wait_rows(const cuco_ctx&, const Problem&, int, const int64_t*, int64_t, int64_t) {}
static __device__ __forceinline__ void wait_results(const cuco_ctx&, const Problem&, int64_t) {}
"""

KERNELS_HOST_ISSUED = r"""
__global__ void __launch_bounds__(THREADS) layout_kernel(cuco_ctx c) { layout_cta(c, problem(c)); }

// SEND row r = x[token of r]: copy engines and the library move contiguous blocks.
__global__ void __launch_bounds__(THREADS) pack_kernel(cuco_ctx c) {
  const Problem p = problem(c);
  const int* tok = ws_ints(c, p.ws_tok);
  const cuco_t* x = static_cast<const cuco_t*>(c.in[0]);
  cuco_t* send = reinterpret_cast<cuco_t*>(symm_at(c, p.send));
  const int64_t n = p.T * p.K * p.H;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    send[i] = x[tok[i / p.H] * p.H + i % p.H];
}

// Host copies of the headers (counts and signal targets), one buffer per rank: virtual ranks
// may share this process.
static int64_t* g_hdr[CUCO_MAX_RANKS];
static size_t g_hdr_words[CUCO_MAX_RANKS];
static int host_headers(const cuco_ctx& c, size_t words, int64_t** out) {
  if (g_hdr_words[c.rank] < words) {
    if (g_hdr[c.rank] != nullptr) cudaFreeHost(g_hdr[c.rank]);
    if (cudaMallocHost(&g_hdr[c.rank], words * 8) != cudaSuccess) return (int)cudaErrorMemoryAllocation;
    g_hdr_words[c.rank] = words;
  }
  *out = g_hdr[c.rank];
  return 0;
}
"""

SIDE_STREAM = r"""
// Per-rank side stream and events, created once (virtual ranks may share this process).
struct SideState {
  cudaStream_t side;
  cudaEvent_t fork, join, done, step[CUCO_MAX_RANKS], res[CUCO_MAX_RANKS];
};
static SideState g_side[CUCO_MAX_RANKS];
static int side_state(const cuco_ctx& c, SideState** out) {
  SideState& s = g_side[c.rank];
  if (s.side == nullptr) {
    cudaStreamCreateWithFlags(&s.side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&s.join, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming);
    for (int i = 0; i < CUCO_MAX_RANKS; ++i) {
      cudaEventCreateWithFlags(&s.step[i], cudaEventDisableTiming);
      cudaEventCreateWithFlags(&s.res[i], cudaEventDisableTiming);
    }
  }
  *out = &s;
  return (int)cudaGetLastError();
}
"""

_ENTRY = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  const int w = workers(c);
"""
_RETURN = r"""  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""
_FORK = r"""  SideState* st;
  if (int err = side_state(c, &st)) return err;
"""

# --- lsa / gin ---------------------------------------------------------------------------------

DEV_SEQUENTIAL = _ENTRY + r"""  layout_kernel<<<1, THREADS, 0, stream>>>(c);
  dispatch_kernel<<<COMM_CTAS, THREADS, 0, stream>>>(c, 0, c.world);
  barrier_kernel<<<1, 32, 0, stream>>>(c, 0);
  expert_kernel<<<w, THREADS, 0, stream>>>(c, 0, c.world, 0, ALL_ROWS, 0, 0);
  combine_kernel<<<COMM_CTAS, THREADS, 0, stream>>>(c, 0, c.world);
  barrier_kernel<<<1, 32, 0, stream>>>(c, 1);
  final_kernel<<<w, THREADS, 0, stream>>>(c, 0);
""" + _RETURN

DEV_STREAM_OVERLAP = _ENTRY + _FORK + r"""  layout_kernel<<<1, THREADS, 0, stream>>>(c);
  cudaEventRecord(st->fork, stream);
  cudaStreamWaitEvent(st->side, st->fork, 0);
  // ring step i: rows for rank + i leave on the side stream while rank - i's rows are computed here
  for (int i = 0; i < c.world; ++i) dispatch_kernel<<<COMM_CTAS, THREADS, 0, st->side>>>(c, i, i + 1);
@AFTER_DISPATCH@  for (int i = 0; i < c.world; ++i) {
    expert_kernel<<<w, THREADS, 0, stream>>>(c, i, i + 1, 0, ALL_ROWS, @WAIT@, 0);
    cudaEventRecord(st->step[i], stream);
    cudaStreamWaitEvent(st->side, st->step[i], 0);
    combine_kernel<<<COMM_CTAS, THREADS, 0, st->side>>>(c, i, i + 1);  // step i's results go home
  }
@FINISH@""" + _RETURN

DEV_SPLIT = _ENTRY + _FORK + r"""  layout_kernel<<<1, THREADS, 0, stream>>>(c);
  cudaEventRecord(st->fork, stream);
  cudaStreamWaitEvent(st->side, st->fork, 0);
  dispatch_kernel<<<COMM_CTAS, THREADS, 0, st->side>>>(c, 0, c.world);  // put early
@AFTER_DISPATCH@  // every tile goes home as soon as it is done
  expert_kernel<<<w, THREADS, 0, stream>>>(c, 0, c.world, 0, ALL_ROWS, @WAIT@, 1);
@FINISH@""" + _RETURN

DEV_FUSED = r"""
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const cuco_ctx& c = *ctx;
  // every CTA must be co-resident (compute CTAs wait on comm CTAs): one CTA per SM
  fused_kernel<<<COMM_CTAS + workers(c), THREADS, 0, stream>>>(c);
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

AFTER_DISPATCH_BARRIER = r"""  barrier_kernel<<<1, 32, 0, st->side>>>(c, 0);
  cudaEventRecord(st->done, st->side);
  cudaStreamWaitEvent(stream, st->done, 0);  // wait late: every rank's rows have landed
"""

FINISH_BARRIER_SIDE = r"""  barrier_kernel<<<1, 32, 0, st->side>>>(c, 1);
  cudaEventRecord(st->join, st->side);
  cudaStreamWaitEvent(stream, st->join, 0);
  final_kernel<<<w, THREADS, 0, stream>>>(c, 0);
"""

FINISH_BARRIER_MAIN = r"""  barrier_kernel<<<1, 32, 0, stream>>>(c, 1);
  final_kernel<<<w, THREADS, 0, stream>>>(c, 0);
  cudaEventRecord(st->join, st->side);
  cudaStreamWaitEvent(stream, st->join, 0);
"""

FINISH_SIGNALS = r"""  final_kernel<<<w, THREADS, 0, stream>>>(c, 1);  // each token waits for its own results
  cudaEventRecord(st->join, st->side);
  cudaStreamWaitEvent(stream, st->join, 0);
"""

# --- copy_engine ---------------------------------------------------------------------------------

CE_TRANSFERS = r"""
// copy_engine: headers travel by DMA like the rows; the host reads both directions' counts (and
// the targets of its stream waits) once every source's header has landed.
static int ce_headers(const cuco_ctx& c, const Problem& p, cudaStream_t s, int64_t** out, int64_t** in) {
  const size_t words = (size_t)p.world * p.hi;
  int64_t* h;
  if (int err = host_headers(c, 2 * words, &h)) return err;
  for (int d = 0; d < p.world; ++d) {
    cuco_ce_put(c, d, p.hdr_in + (size_t)p.rank * p.hi * 8, hdr_out(c, p, d), p.hi * 8, s);
    cuco_ce_signal(c, d, SLOT_HDR(p.rank), 1, s);
  }
  cudaMemcpyAsync(h, symm_at(c, p.hdr_out), words * 8, cudaMemcpyDeviceToHost, s);
  for (int src = 0; src < p.world; ++src) cuco_ce_wait(c, SLOT_HDR(src), c.epoch, s);
  cudaMemcpyAsync(h + words, symm_at(c, p.hdr_in), words * 8, cudaMemcpyDeviceToHost, s);
  *out = h;
  *in = h + words;
  return (int)cudaStreamSynchronize(s);
}

// Rows [0, count) from src to the peer's block at dst_off: one DMA copy per chunk.
static void ce_chunks(const cuco_ctx& c, const Problem& p, int peer, size_t dst_off, const char* src, int64_t count,
                      int tile_slot, int peer_slot, cudaStream_t s) {
  const int64_t rows = chunk_rows(p, count);
  for (int64_t q = 0; q * rows < count; ++q) {
    const int64_t n = imin(rows, count - q * rows);
    cuco_ce_put(c, peer, dst_off + (size_t)(q * rows) * p.row, src + (size_t)(q * rows) * p.row, n * p.row, s);
@CHUNK_SIGNAL@  }
@PEER_SIGNAL@}
static void ce_dispatch(const cuco_ctx& c, const Problem& p, const int64_t* out, int d, cudaStream_t s) {
  int64_t base = 0;
  for (int e = 0; e < d; ++e) base += out[e * p.hi + H_COUNT];
  ce_chunks(c, p, d, recv_off(p, p.rank, 0), symm_at(c, send_off(p, base)), out[d * p.hi + H_COUNT],
            SLOT_DTILE(p.rank, 0), SLOT_DPEER(p.rank), s);
}
static void ce_combine(const cuco_ctx& c, const Problem& p, const int64_t* in, int src, cudaStream_t s) {
  ce_chunks(c, p, src, comb_off(p, p.rank, 0), symm_at(c, recv_off(p, src, 0)), in[src * p.hi + H_COUNT],
            SLOT_CTILE(p.rank, 0), SLOT_CPEER(p.rank), s);
}
"""

CE_CHUNK_SIGNAL = "    cuco_ce_signal(c, peer, tile_slot + (int)q, (uint64_t)n, s);  // after the copy, in stream order\n"
CE_PEER_SIGNAL = "  cuco_ce_signal(c, peer, peer_slot, (uint64_t)count, s);  // the whole block has landed\n"

_CE_PROLOGUE = r"""  const Problem p = problem(c);
  int64_t *out, *in;
  layout_kernel<<<1, THREADS, 0, stream>>>(c);
  pack_kernel<<<w, THREADS, 0, stream>>>(c);
  if (int err = ce_headers(c, p, stream, &out, &in)) return err;
"""

CE_SEQUENTIAL = _ENTRY + _CE_PROLOGUE + r"""  for (int i = 0; i < c.world; ++i)
    ce_dispatch(c, p, out, (c.rank + i) % c.world, stream);
  barrier_kernel<<<1, 32, 0, stream>>>(c, 0);
  expert_kernel<<<w, THREADS, 0, stream>>>(c, 0, c.world, 0, ALL_ROWS, 0, 0);
  for (int i = 0; i < c.world; ++i) ce_combine(c, p, in, (c.rank - i + c.world) % c.world, stream);
  barrier_kernel<<<1, 32, 0, stream>>>(c, 1);
  final_kernel<<<w, THREADS, 0, stream>>>(c, 0);
""" + _RETURN

CE_PIPELINE = _ENTRY + _FORK + _CE_PROLOGUE + r"""  cudaEventRecord(st->fork, stream);
  cudaStreamWaitEvent(st->side, st->fork, 0);
  for (int i = 0; i < c.world; ++i) ce_dispatch(c, p, out, (c.rank + i) % c.world, st->side);
@AFTER_DISPATCH@  for (int i = 0; i < c.world; ++i) {
    const int src = (c.rank - i + c.world) % c.world;
@COMPUTE@    cudaEventRecord(st->step[i], stream);
    cudaStreamWaitEvent(st->side, st->step[i], 0);
    ce_combine(c, p, in, src, st->side);  // step i's results go home while step i + 1 computes
  }
@FINISH@""" + _RETURN

CE_COMPUTE_ALL = "    expert_kernel<<<w, THREADS, 0, stream>>>(c, i, i + 1, 0, ALL_ROWS, 0, 0);\n"
CE_COMPUTE_DEVICE_WAIT = ("    expert_kernel<<<w, THREADS, 0, stream>>>(c, i, i + 1, 0, ALL_ROWS, 1, 0);"
                          "  // tiles wait on device signals\n")
CE_COMPUTE_PER_PEER = r"""    // the stream waits until the peer's whole block has landed
    cuco_ce_wait(c, SLOT_DPEER(src), (uint64_t)in[src * p.hi + H_PEER], stream);
    expert_kernel<<<w, THREADS, 0, stream>>>(c, i, i + 1, 0, ALL_ROWS, 0, 0);
"""
CE_COMPUTE_PER_CHUNK = r"""    const int64_t count = in[src * p.hi + H_COUNT], rows = chunk_rows(p, count);
    for (int64_t q = 0; q * rows < count; ++q) {  // each chunk computes as soon as it has landed
      cuco_ce_wait(c, SLOT_DTILE(src, q), (uint64_t)in[src * p.hi + H_CNT + p.El + q], stream);
      expert_kernel<<<w, THREADS, 0, stream>>>(c, i, i + 1, q * rows, (q + 1) * rows, 0, 0);
    }
"""
CE_FINISH_PER_PEER = r"""  for (int d = 0; d < c.world; ++d)
    cuco_ce_wait(c, SLOT_CPEER(d), (uint64_t)out[d * p.hi + H_PEER], stream);
  final_kernel<<<w, THREADS, 0, stream>>>(c, 0);
  cudaEventRecord(st->join, st->side);
  cudaStreamWaitEvent(stream, st->join, 0);
"""

# --- host_nccl ------------------------------------------------------------------------------------

NCCL_TRANSFERS = r"""
// host_nccl: every rank's headers are all-gathered, so each rank knows the whole count matrix.
static int nccl_headers(const cuco_ctx& c, const Problem& p, cudaStream_t s, int64_t** all) {
  const size_t words = (size_t)p.world * p.world * p.hi;
  int64_t* h;
  if (int err = host_headers(c, words, &h)) return err;
  if (cudaError_t err = cuco_coll_allgather(c, hdr_out(c, p, 0), (size_t)p.world * p.hi * 8, p.allhdr, s))
    return (int)err;
  cudaMemcpyAsync(h, symm_at(c, p.allhdr), words * 8, cudaMemcpyDeviceToHost, s);
  *all = h;
  return (int)cudaStreamSynchronize(s);
}
// Rows every rank moves at shift i: the largest count of that shift, as both ends of a send/recv
// must agree on its size (the padding rows are never read).
static int64_t shift_rows(const Problem& p, const int64_t* all, int i) {
  int64_t n = 0;
  for (int r = 0; r < p.world; ++r) n = imax(n, all[((size_t)r * p.world + (r + i) % p.world) * p.hi + H_COUNT]);
  return n;
}
// Shift i, one send/recv per chunk. dir 0 (dispatch): this rank's rows for rank + i (from SEND)
// into its RECV block i, rank - i's into ours. dir 1 (combine): results of rank - i (our RECV
// block i) into its COMB block i, rank + i's results into ours.
static int nccl_shift(const cuco_ctx& c, const Problem& p, const int64_t* all, int i, int dir, cudaStream_t s) {
  const int64_t n = shift_rows(p, all, i), rows = chunk_rows(p, n);
  const int to = dir == 0 ? (p.rank + i) % p.world : (p.rank - i + p.world) % p.world;
  const int from = dir == 0 ? (p.rank - i + p.world) % p.world : (p.rank + i) % p.world;
  int64_t base = 0;
  for (int d = 0; dir == 0 && d < to; ++d) base += all[((size_t)p.rank * p.world + d) * p.hi + H_COUNT];
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    const size_t src = dir == 0 ? send_off(p, base + r0) : recv_off(p, i, r0);
    const size_t dst = dir == 0 ? recv_off(p, i, r0) : comb_off(p, i, r0);
    if (cudaError_t err = cuco_coll_sendrecv(c, to, src, from, dst, (size_t)imin(rows, n - r0) * p.row, s))
      return (int)err;
  }
  return 0;
}
"""

_NCCL_PROLOGUE = r"""  const Problem p = problem(c);
  int64_t* all;
  layout_kernel<<<1, THREADS, 0, stream>>>(c);
  pack_kernel<<<w, THREADS, 0, stream>>>(c);
  if (int err = nccl_headers(c, p, stream, &all)) return err;
"""

NCCL_SEQUENTIAL = _ENTRY + _NCCL_PROLOGUE + r"""  for (int i = 0; i < c.world; ++i)
    if (int err = nccl_shift(c, p, all, i, 0, stream)) return err;
  expert_kernel<<<w, THREADS, 0, stream>>>(c, 0, c.world, 0, ALL_ROWS, 0, 0);
  for (int i = 0; i < c.world; ++i)
    if (int err = nccl_shift(c, p, all, i, 1, stream)) return err;
  final_kernel<<<w, THREADS, 0, stream>>>(c, 0);
""" + _RETURN

NCCL_STREAM_OVERLAP = _ENTRY + _FORK + _NCCL_PROLOGUE + r"""  cudaEventRecord(st->fork, stream);
  cudaStreamWaitEvent(st->side, st->fork, 0);
  for (int i = 0; i < c.world; ++i) {  // every shift's rows on the side stream, in the same order on every rank
    if (int err = nccl_shift(c, p, all, i, 0, st->side)) return err;
    cudaEventRecord(st->step[i], st->side);
  }
  for (int i = 0; i < c.world; ++i) {  // shift i computes as soon as it has landed
    cudaStreamWaitEvent(stream, st->step[i], 0);
    expert_kernel<<<w, THREADS, 0, stream>>>(c, i, i + 1, 0, ALL_ROWS, 0, 0);
    cudaEventRecord(st->res[i], stream);
  }
  for (int i = 0; i < c.world; ++i) {  // results go home shift by shift behind the compute
    cudaStreamWaitEvent(st->side, st->res[i], 0);
    if (int err = nccl_shift(c, p, all, i, 1, st->side)) return err;
  }
  cudaEventRecord(st->join, st->side);
  cudaStreamWaitEvent(stream, st->join, 0);
  final_kernel<<<w, THREADS, 0, stream>>>(c, 0);
""" + _RETURN
