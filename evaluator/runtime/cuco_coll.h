// Library collectives for the host-driven baseline (backend host_nccl): launched from the host,
// every rank calling the same ones in the same order. Regions live in the symmetric buffers;
// counts are cuco_t elements.
//
//   cuco_coll_allgather(c, send, bytes, dst_offset, s)      every rank's bytes -> dst_offset + rank*bytes, all ranks
//   cuco_coll_reduce_scatter(c, src_offset, count, recv, s) recv = sum over ranks of their block `rank`
//   cuco_coll_allreduce(c, src_offset, count, out, s)       out = sum over ranks of [src_offset, +count)
//   cuco_coll_alltoall(c, src_offset, bytes_per_peer, dst_offset, s)  my block j -> rank j's block `rank`
//   cuco_coll_sendrecv(c, send_peer, src_offset, recv_peer, dst_offset, bytes, s)  (-1: none)
//
// nccl: the NCCL host API on ctx.host_comm (an ncclComm_t*). symm and cpu: barrier, copy or
// reduce kernels over peer pointers, barrier (barrier index CUCO_COLL_BARRIER).
#ifndef CUCO_COLL_H_
#define CUCO_COLL_H_

#if defined(CUCO_COMM_NCCL)
static inline ncclComm_t cuco_coll_comm(const cuco_ctx& c) { return *static_cast<const ncclComm_t*>(c.host_comm); }
static inline ncclDataType_t cuco_coll_type() {
  return CUCO_DTYPE == CUCO_F32 ? ncclFloat32 : CUCO_DTYPE == CUCO_F16 ? ncclFloat16 : ncclBfloat16;
}
static inline cudaError_t cuco_coll_status(ncclResult_t r) {
  return r == ncclSuccess ? cudaGetLastError() : cudaErrorUnknown;
}
static inline char* cuco_coll_symm(const cuco_ctx& c, size_t offset) { return static_cast<char*>(c.symm) + offset; }

static inline cudaError_t cuco_coll_allgather(const cuco_ctx& c, const void* send, size_t bytes, size_t dst_offset,
                                              cudaStream_t s) {
  return cuco_coll_status(ncclAllGather(send, cuco_coll_symm(c, dst_offset), bytes, ncclInt8, cuco_coll_comm(c), s));
}
static inline cudaError_t cuco_coll_reduce_scatter(const cuco_ctx& c, size_t src_offset, size_t count, void* recv,
                                                   cudaStream_t s) {
  return cuco_coll_status(ncclReduceScatter(cuco_coll_symm(c, src_offset), recv, count, cuco_coll_type(), ncclSum,
                                            cuco_coll_comm(c), s));
}
static inline cudaError_t cuco_coll_allreduce(const cuco_ctx& c, size_t src_offset, size_t count, void* out,
                                              cudaStream_t s) {
  return cuco_coll_status(ncclAllReduce(cuco_coll_symm(c, src_offset), out, count, cuco_coll_type(), ncclSum,
                                        cuco_coll_comm(c), s));
}
static inline cudaError_t cuco_coll_alltoall(const cuco_ctx& c, size_t src_offset, size_t bytes_per_peer,
                                             size_t dst_offset, cudaStream_t s) {
  ncclResult_t r = ncclGroupStart();
  for (int p = 0; p < c.world && r == ncclSuccess; ++p) {
    r = ncclSend(cuco_coll_symm(c, src_offset + p * bytes_per_peer), bytes_per_peer, ncclInt8, p, cuco_coll_comm(c), s);
    if (r == ncclSuccess)
      r = ncclRecv(cuco_coll_symm(c, dst_offset + p * bytes_per_peer), bytes_per_peer, ncclInt8, p, cuco_coll_comm(c), s);
  }
  const ncclResult_t end = ncclGroupEnd();
  return cuco_coll_status(r != ncclSuccess ? r : end);
}
static inline cudaError_t cuco_coll_sendrecv(const cuco_ctx& c, int send_peer, size_t src_offset, int recv_peer,
                                             size_t dst_offset, size_t bytes, cudaStream_t s) {
  ncclResult_t r = ncclGroupStart();
  if (r == ncclSuccess && send_peer >= 0)
    r = ncclSend(cuco_coll_symm(c, src_offset), bytes, ncclInt8, send_peer, cuco_coll_comm(c), s);
  if (r == ncclSuccess && recv_peer >= 0)
    r = ncclRecv(cuco_coll_symm(c, dst_offset), bytes, ncclInt8, recv_peer, cuco_coll_comm(c), s);
  const ncclResult_t end = ncclGroupEnd();
  return cuco_coll_status(r != ncclSuccess ? r : end);
}

#else  // symm and cpu: kernels over peer pointers between two barriers
#if defined(CUCO_COMM_CPU)
#define CUCO_COLL_GRID 2  // every emulated thread is a fiber: keep the library kernels small
#define CUCO_COLL_THREADS 64
#else
#define CUCO_COLL_GRID 16
#define CUCO_COLL_THREADS 256
#endif
enum { CUCO_COLL_AG, CUCO_COLL_RS, CUCO_COLL_AR, CUCO_COLL_A2A, CUCO_COLL_SR };
struct cuco_coll_args {
  int op, send_peer;
  size_t src_offset, dst_offset, bytes, count;
  const void* send;
  void* out;
};

__global__ void __launch_bounds__(32) cuco_coll_barrier_kernel(cuco_ctx c) { cuco_barrier(c, CUCO_COLL_BARRIER); }

static __device__ void cuco_coll_sum(const cuco_ctx& c, size_t first, size_t count, cuco_t* out, size_t i0, size_t step) {
  for (size_t i = i0; i < count; i += step) {
    float sum = 0.f;
    for (int p = 0; p < c.world; ++p)
      sum += cuco_to_float(static_cast<const cuco_t*>(cuco_peer(c, p))[first + i]);
    out[i] = cuco_from_float<cuco_t>(sum);
  }
}

__global__ void __launch_bounds__(CUCO_COLL_THREADS) cuco_coll_kernel(cuco_ctx c, cuco_coll_args a) {
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, n = (size_t)gridDim.x * blockDim.x;
  const size_t el = sizeof(cuco_t);
  char* own = static_cast<char*>(c.symm);
  if (a.op == CUCO_COLL_RS) return cuco_coll_sum(c, a.src_offset / el + c.rank * a.count, a.count, (cuco_t*)a.out, t, n);
  if (a.op == CUCO_COLL_AR) return cuco_coll_sum(c, a.src_offset / el, a.count, (cuco_t*)a.out, t, n);
  for (int p = 0; p < c.world; ++p) {
    char* peer = static_cast<char*>(cuco_peer(c, p));
    if (a.op == CUCO_COLL_AG)
      cuco_copy_group(peer + a.dst_offset + c.rank * a.bytes, a.send, a.bytes, t, n);
    else if (a.op == CUCO_COLL_A2A)
      cuco_copy_group(peer + a.dst_offset + c.rank * a.bytes, own + a.src_offset + p * a.bytes, a.bytes, t, n);
    else if (a.op == CUCO_COLL_SR && p == a.send_peer)
      cuco_copy_group(peer + a.dst_offset, own + a.src_offset, a.bytes, t, n);
  }
}

// Barrier (sources ready, destinations free), move or reduce, barrier (everything landed).
static inline cudaError_t cuco_coll_run(const cuco_ctx& c, cuco_coll_args a, cudaStream_t s) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_COLL, a.bytes ? a.bytes : a.count * sizeof(cuco_t), (long)(intptr_t)s);
  CUCO_LAUNCH(cuco_coll_barrier_kernel, 1, 32, s, c);
  CUCO_LAUNCH(cuco_coll_kernel, CUCO_COLL_GRID, CUCO_COLL_THREADS, s, c, a);
  CUCO_LAUNCH(cuco_coll_barrier_kernel, 1, 32, s, c);
  return cudaGetLastError();
}
static inline cudaError_t cuco_coll_allgather(const cuco_ctx& c, const void* send, size_t bytes, size_t dst_offset,
                                              cudaStream_t s) {
  return cuco_coll_run(c, cuco_coll_args{CUCO_COLL_AG, -1, 0, dst_offset, bytes, 0, send, nullptr}, s);
}
static inline cudaError_t cuco_coll_reduce_scatter(const cuco_ctx& c, size_t src_offset, size_t count, void* recv,
                                                   cudaStream_t s) {
  return cuco_coll_run(c, cuco_coll_args{CUCO_COLL_RS, -1, src_offset, 0, 0, count, nullptr, recv}, s);
}
static inline cudaError_t cuco_coll_allreduce(const cuco_ctx& c, size_t src_offset, size_t count, void* out,
                                              cudaStream_t s) {
  return cuco_coll_run(c, cuco_coll_args{CUCO_COLL_AR, -1, src_offset, 0, 0, count, nullptr, out}, s);
}
static inline cudaError_t cuco_coll_alltoall(const cuco_ctx& c, size_t src_offset, size_t bytes_per_peer,
                                             size_t dst_offset, cudaStream_t s) {
  return cuco_coll_run(c, cuco_coll_args{CUCO_COLL_A2A, -1, src_offset, dst_offset, bytes_per_peer, 0, nullptr, nullptr},
                       s);
}
static inline cudaError_t cuco_coll_sendrecv(const cuco_ctx& c, int send_peer, size_t src_offset, int /*recv_peer*/,
                                             size_t dst_offset, size_t bytes, cudaStream_t s) {
  return cuco_coll_run(c, cuco_coll_args{CUCO_COLL_SR, send_peer, src_offset, dst_offset, bytes, 0, nullptr, nullptr}, s);
}
#endif

#endif  // CUCO_COLL_H_
