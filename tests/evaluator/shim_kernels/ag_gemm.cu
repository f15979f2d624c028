// All-gather + GEMM, shaped like a real candidate: C = allgather(A) @ B on every rank.
// dims = (M, N, K): A is sharded by rows (M / world rows per rank, input 0), B (K x N, input 1)
// is replicated, C (M x N, output 0) is complete on every rank. The all-gather runs on a side
// stream (one CTA per peer, put + signal); the GEMM on the caller's stream waits for the
// signals of the shards its row tile needs, then computes 32x32 tiles with 256 threads
// (2x2 outputs per thread) through __shared__ tiles. Element type: cuco_t (CUCO_DTYPE).
#include <cuda_runtime.h>
#include <stdint.h>
#include "cuco_comm.h"

#define TILE 32
#define THREADS 256

// EVOLVE-BLOCK-START
__global__ void gather_shards(const cuco_ctx c) {
  const int peer = blockIdx.x;
  const long rows = c.dims[0] / c.world, k = c.dims[2];
  const size_t shard_bytes = (size_t)rows * k * sizeof(cuco_t);
  cuco_put_cta(c, peer, (size_t)c.rank * shard_bytes, c.in[0], shard_bytes);
  __syncthreads();  // the whole CTA's writes happen before the signal
  if (threadIdx.x == 0) cuco_signal_add(c, peer, c.rank, 1);
}

__device__ __forceinline__ void wait_for_rows(const cuco_ctx& c, long row0, long row1) {
  const long rows = c.dims[0] / c.world;
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    for (long r = row0 / rows; r <= (row1 - 1) / rows && r < c.world; ++r) cuco_wait(c, (int)r, c.epoch);
  }
  __syncthreads();
}

template <int TM, int TN>
__global__ void __launch_bounds__(THREADS) gemm_tiles(const cuco_ctx c) {
  const long M = c.dims[0], N = c.dims[1], K = c.dims[2];
  const cuco_t* A = static_cast<const cuco_t*>(c.symm);  // gathered, M x K
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]);  // K x N
  cuco_t* C = static_cast<cuco_t*>(c.out[0]);             // M x N
  __shared__ float As[TILE][TILE + 1];
  __shared__ float Bs[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;  // 16 x 16 threads
  const long row0 = (long)blockIdx.y * TILE, col0 = (long)blockIdx.x * TILE;
  wait_for_rows(c, row0, row0 + TILE < M ? row0 + TILE : M);
  float acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  const int lin = ty * blockDim.x + tx;
  for (long k0 = 0; k0 < K; k0 += TILE) {
    for (int e = lin; e < TILE * TILE; e += THREADS) {
      const int r = e / TILE, q = e % TILE;
      const long ar = row0 + r, ak = k0 + q, bk = k0 + r, bc = col0 + q;
      As[r][q] = (ar < M && ak < K) ? cuco_to_float(A[ar * K + ak]) : 0.f;
      Bs[r][q] = (bk < K && bc < N) ? cuco_to_float(B[bk * N + bc]) : 0.f;
    }
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) {
      float a[TM], b[TN];
      for (int i = 0; i < TM; ++i) a[i] = As[ty * TM + i][kk];
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; ++i) {
    for (int j = 0; j < TN; ++j) {
      const long r = row0 + ty * TM + i, q = col0 + tx * TN + j;
      if (r < M && q < N) C[r * N + q] = cuco_from_float<cuco_t>(acc[i][j]);
    }
  }
}
// EVOLVE-BLOCK-END

namespace {
struct SideStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
};
SideStream g_side;

int ensure_side_stream() {
  if (g_side.stream) return 0;
  if (cudaStreamCreateWithFlags(&g_side.stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
  if (cudaEventCreateWithFlags(&g_side.fork, cudaEventDisableTiming) != cudaSuccess) return 1;
  if (cudaEventCreateWithFlags(&g_side.join, cudaEventDisableTiming) != cudaSuccess) return 1;
  return 0;
}
}  // namespace

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const long M = ctx->dims[0], N = ctx->dims[1], K = ctx->dims[2];
  if (M % ctx->world != 0 || M <= 0 || N <= 0 || K <= 0) return 1;
  if (ctx->symm_bytes < (size_t)(M * K) * sizeof(cuco_t)) return 2;
  if (ensure_side_stream() != 0) return 3;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  if (sms < 1) return 4;
  // Fork: the side stream starts after earlier work on the caller's stream.
  cudaEventRecord(g_side.fork, stream);
  cudaStreamWaitEvent(g_side.stream, g_side.fork, 0);
  gather_shards<<<ctx->world, 128, 0, g_side.stream>>>(*ctx);
  const dim3 block(16, 16);
  const dim3 grid((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE));
  gemm_tiles<2, 2><<<grid, block, 0, stream>>>(*ctx);
  // Join: the caller's stream does not finish before the side stream.
  cudaEventRecord(g_side.join, g_side.stream);
  cudaStreamWaitEvent(stream, g_side.join, 0);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    printf("launch failed: %s\n", cudaGetErrorString(err));
    return 5;
  }
  return 0;
}
