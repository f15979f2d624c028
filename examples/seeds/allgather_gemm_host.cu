// A host-driven all-gather + GEMM, the kind of program `cuco init --from-seed` starts from:
// every rank gathers the row shards of A with ncclAllGather, then multiplies the gathered A by
// its column shard of B with a naive kernel, both launched from the host on one stream.
//
//   rank r: A_r [M/n, K], B_r [K, N/n]  ->  C_r = allgather(A) @ B_r  [M, N/n]
//
// One process drives every visible GPU (ncclCommInitAll). Build:
//   nvcc -std=c++17 -O2 allgather_gemm_host.cu -o ag_gemm -l:libnccl.so.2
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK_CUDA(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
  std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); std::exit(1); } } while (0)
#define CHECK_NCCL(x) do { ncclResult_t res_ = (x); if (res_ != ncclSuccess) { \
  std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, ncclGetErrorString(res_)); std::exit(1); } } while (0)

// C[M, Nl] = A[M, K] @ B[K, Nl], row-major, fp32 accumulation: one thread per output element.
__global__ void naive_gemm(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C,
                           int M, int Nl, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= Nl) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += __bfloat162float(A[(size_t)row * K + k]) * __bfloat162float(B[(size_t)k * Nl + col]);
  C[(size_t)row * Nl + col] = __float2bfloat16(acc);
}

int main() {
  int world = 0;
  CHECK_CUDA(cudaGetDeviceCount(&world));
  const int M = 4096, N = 49152, K = 12288;  // the REFERENCE worked example (TP=8)
  const int shard = M / world, Nl = N / world;

  std::vector<ncclComm_t> comms(world);
  std::vector<int> devs(world);
  for (int r = 0; r < world; ++r) devs[r] = r;
  CHECK_NCCL(ncclCommInitAll(comms.data(), world, devs.data()));

  std::vector<cudaStream_t> streams(world);
  std::vector<__nv_bfloat16*> a_shard(world), a_full(world), b(world), c(world);
  for (int r = 0; r < world; ++r) {
    CHECK_CUDA(cudaSetDevice(r));
    CHECK_CUDA(cudaStreamCreate(&streams[r]));
    CHECK_CUDA(cudaMalloc(&a_shard[r], (size_t)shard * K * sizeof(__nv_bfloat16)));
    CHECK_CUDA(cudaMalloc(&a_full[r], (size_t)M * K * sizeof(__nv_bfloat16)));
    CHECK_CUDA(cudaMalloc(&b[r], (size_t)K * Nl * sizeof(__nv_bfloat16)));
    CHECK_CUDA(cudaMalloc(&c[r], (size_t)M * Nl * sizeof(__nv_bfloat16)));
    CHECK_CUDA(cudaMemset(a_shard[r], 0, (size_t)shard * K * sizeof(__nv_bfloat16)));
    CHECK_CUDA(cudaMemset(b[r], 0, (size_t)K * Nl * sizeof(__nv_bfloat16)));
  }

  // Communicate: gather every rank's rows of A (one call per rank, grouped in one thread).
  CHECK_NCCL(ncclGroupStart());
  for (int r = 0; r < world; ++r)
    CHECK_NCCL(ncclAllGather(a_shard[r], a_full[r], (size_t)shard * K, ncclBfloat16, comms[r], streams[r]));
  CHECK_NCCL(ncclGroupEnd());

  // Compute: only after the whole gather (same stream), so nothing overlaps.
  const dim3 block(16, 16), grid((Nl + 15) / 16, (M + 15) / 16);
  for (int r = 0; r < world; ++r) {
    CHECK_CUDA(cudaSetDevice(r));
    naive_gemm<<<grid, block, 0, streams[r]>>>(a_full[r], b[r], c[r], M, Nl, K);
    CHECK_CUDA(cudaGetLastError());
  }
  for (int r = 0; r < world; ++r) {
    CHECK_CUDA(cudaSetDevice(r));
    CHECK_CUDA(cudaStreamSynchronize(streams[r]));
    cudaFree(a_shard[r]); cudaFree(a_full[r]); cudaFree(b[r]); cudaFree(c[r]);
    ncclCommDestroy(comms[r]);
  }
  std::printf("done: %d ranks, C_r [%d, %d]\n", world, M, Nl);
  return 0;
}
