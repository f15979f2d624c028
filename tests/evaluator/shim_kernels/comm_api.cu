// The comm API's GIN, multimem, copy-engine and library-collective calls on n ranks, fp32.
// dims[0] = n floats per rank. Input 0: this rank's n floats. Output 0: what the variant
// computes (see tests/evaluator/test_comm_api.py). One variant per -D:
//   GIN_AG  all-gather by GIN puts (+ GIN_NO_WAIT: skip the wait; GIN_REUSE: overwrite the source
//           right after the put, + GIN_FLUSH: flush before overwriting)
//   MM_AR   all-reduce by multimem ld_reduce;  MM_BCAST  rank 0 broadcasts by multimem st
//   CE_AG   all-gather by copy-engine puts and signals (+ CE_NO_WAIT)
//   COLL_AG / COLL_RS / COLL_AR / COLL_A2A / COLL_SR  the library collectives
#include "cuco_comm.h"

__global__ void stage(const cuco_ctx c, size_t offset) {  // input -> own symm at offset
  const size_t n = (size_t)c.dims[0];
  for (size_t i = threadIdx.x; i < n; i += blockDim.x)
    reinterpret_cast<float*>(static_cast<char*>(c.symm) + offset)[i] = static_cast<const float*>(c.in[0])[i];
}
__global__ void drain(const cuco_ctx c, size_t offset, size_t count) {  // own symm at offset -> output
  for (size_t i = threadIdx.x; i < count; i += blockDim.x)
    static_cast<float*>(c.out[0])[i] = reinterpret_cast<const float*>(static_cast<const char*>(c.symm) + offset)[i];
}

__global__ void gin_allgather(const cuco_ctx c) {
  const size_t bytes = (size_t)c.dims[0] * sizeof(float);
  if (threadIdx.x == 0) {
    for (int p = 0; p < c.world; ++p)
      if (p != c.rank) cuco_gin_put(c, 1, p, c.rank * bytes, c.rank * bytes, bytes, c.rank, 1);
#if defined(GIN_REUSE)
#if defined(GIN_FLUSH)
    cuco_gin_flush(c, 1);
#endif
    float* src = reinterpret_cast<float*>(static_cast<char*>(c.symm) + c.rank * bytes);
    for (size_t i = 0; i < (size_t)c.dims[0]; ++i) src[i] = -1.f;  // reuse the source buffer
#endif
#if !defined(GIN_NO_WAIT)
    for (int p = 0; p < c.world; ++p)
      if (p != c.rank) cuco_gin_wait(c, p, c.epoch);
#endif
  }
}

__global__ void mm_kernel(const cuco_ctx c, int broadcast) {
  const size_t n = (size_t)c.dims[0];
  if (broadcast) {
    if (c.rank == 0)
      for (size_t i = threadIdx.x; i < n; i += blockDim.x) cuco_mm_st(c, (n + i) * sizeof(float), 2.f * i + 1.f);
  } else {
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
      static_cast<float*>(c.out[0])[i] = cuco_mm_ld_reduce(c, i * sizeof(float));
  }
}
__global__ void barrier1(const cuco_ctx c) { cuco_barrier(c, 1); }

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t s) {
  const cuco_ctx& c = *ctx;
  const size_t n = (size_t)c.dims[0], bytes = n * sizeof(float), all = n * c.world;
#if defined(GIN_AG)
  stage<<<1, 64, 0, s>>>(c, c.rank * bytes);
  barrier1<<<1, 32, 0, s>>>(c);  // every rank staged before anyone's puts land
  gin_allgather<<<1, 32, 0, s>>>(c);
  drain<<<1, 64, 0, s>>>(c, 0, all);
#elif defined(MM_AR) || defined(MM_BCAST)
  stage<<<1, 64, 0, s>>>(c, 0);
  barrier1<<<1, 32, 0, s>>>(c);
#if defined(MM_AR)
  mm_kernel<<<1, 64, 0, s>>>(c, 0);
  barrier1<<<1, 32, 0, s>>>(c);  // nobody restages before every rank has reduced
#else
  mm_kernel<<<1, 64, 0, s>>>(c, 1);
  barrier1<<<1, 32, 0, s>>>(c);
  drain<<<1, 64, 0, s>>>(c, bytes, n);
#endif
#elif defined(CE_AG)
  barrier1<<<1, 32, 0, s>>>(c);  // destinations free (peers finished reading the last call)
  for (int p = 0; p < c.world; ++p) {
    cuco_ce_put(c, p, c.rank * bytes, c.in[0], bytes, s);
    cuco_ce_signal(c, p, c.rank, 1, s);
  }
#if !defined(CE_NO_WAIT)
  for (int p = 0; p < c.world; ++p) cuco_ce_wait(c, p, c.epoch, s);
#endif
  drain<<<1, 64, 0, s>>>(c, 0, all);
#elif defined(COLL_AG)
  cuco_coll_allgather(c, c.in[0], bytes, 0, s);
  drain<<<1, 64, 0, s>>>(c, 0, all);
#elif defined(COLL_RS)  // input n floats = world blocks of n/world
  stage<<<1, 64, 0, s>>>(c, 0);
  cuco_coll_reduce_scatter(c, 0, n / c.world, c.out[0], s);
#elif defined(COLL_AR)
  stage<<<1, 64, 0, s>>>(c, 0);
  cuco_coll_allreduce(c, 0, n, c.out[0], s);
#elif defined(COLL_A2A)  // input n floats = world blocks; result lands after them
  stage<<<1, 64, 0, s>>>(c, 0);
  cuco_coll_alltoall(c, 0, bytes / c.world, bytes, s);
  drain<<<1, 64, 0, s>>>(c, bytes, n);
#elif defined(COLL_SR)  // ring shift: send to rank + 1, receive from rank - 1
  stage<<<1, 64, 0, s>>>(c, 0);
  cuco_coll_sendrecv(c, (c.rank + 1) % c.world, 0, (c.rank + c.world - 1) % c.world, bytes, bytes, s);
  drain<<<1, 64, 0, s>>>(c, bytes, n);
#endif
  return cudaGetLastError() != cudaSuccess;
}
