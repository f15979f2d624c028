// Times cuco's GEMM tile primitive (evaluator/runtime/cuco_gemm.h) on one GPU: C = A @ B with
// A [M, K], B [K, N] row-major, a persistent grid over output tiles (as the templates run it).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -DCUCO_COMM_SYMM -DCUCO_DTYPE=2 -I evaluator/runtime \
//        scripts/tile_bench.cu -o tile_bench
//   ./tile_bench M N K [iterations]   ->   "tile M N K seconds TFLOP/s max_abs_err_vs_fp32_check"
//
// scripts/gpu_check_steps.py (calibrate) builds it, runs it at each GEMM family's headline per-rank
// GEMM and compares with torch.matmul (cuBLAS) to write the model's calibration file.
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>
#include "cuco_comm.h"

typedef cuco_gemm_large Cfg;
extern __shared__ __align__(16) unsigned char smem[];

__global__ void __launch_bounds__(Cfg::THREADS) gemm(const cuco_t* A, const cuco_t* B, cuco_t* C, int64_t M,
                                                     int64_t N, int64_t K) {
  const int64_t tn = (N + Cfg::BN - 1) / Cfg::BN, tiles = (M + Cfg::BM - 1) / Cfg::BM * tn;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t m0 = t / tn * Cfg::BM, n0 = t % tn * Cfg::BN;
    cuco_gemm_acc<Cfg> acc;
    acc.zero();
    cuco_gemm_tile<Cfg>(acc, smem, A + m0 * K, K, M - m0, B + n0, N, N - n0, K);
    cuco_gemm_store(acc, C + m0 * N + n0, N, M - m0, N - n0, cuco_gemm_epilogue());
  }
}

__global__ void fill(cuco_t* p, int64_t n, unsigned seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const unsigned h = (unsigned)(i * 2654435761u) ^ seed;
    p[i] = cuco_from_float<cuco_t>(((h >> 8) % 17 - 8) / 8.f);  // multiples of 1/8: exact products
  }
}

static int check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fprintf(stderr, "tile_bench: %s: %s\n", what, cudaGetErrorString(e));
  return e != cudaSuccess;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s M N K [iterations]\n", argv[0]);
    return 2;
  }
  const int64_t M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
  const int iters = argc > 4 ? atoi(argv[4]) : 20;
  cuco_t *A, *B, *C;
  if (check(cudaMalloc(&A, M * K * sizeof(cuco_t)), "cudaMalloc A") ||
      check(cudaMalloc(&B, K * N * sizeof(cuco_t)), "cudaMalloc B") ||
      check(cudaMalloc(&C, M * N * sizeof(cuco_t)), "cudaMalloc C"))
    return 1;
  fill<<<1024, 256>>>(A, M * K, 1u);
  fill<<<1024, 256>>>(B, K * N, 2u);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cfg::SMEM_BYTES);
  const int grid = 2 * sms;
  for (int i = 0; i < 3; ++i) gemm<<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(A, B, C, M, N, K);
  if (check(cudaDeviceSynchronize(), "warm-up")) return 1;
  std::vector<float> ms(iters);
  cudaEvent_t s, e;
  cudaEventCreate(&s);
  cudaEventCreate(&e);
  for (int i = 0; i < iters; ++i) {
    cudaEventRecord(s);
    gemm<<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(A, B, C, M, N, K);
    cudaEventRecord(e);
    cudaEventSynchronize(e);
    cudaEventElapsedTime(&ms[i], s, e);
  }
  if (check(cudaGetLastError(), "gemm")) return 1;
  std::vector<float> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double sec = sorted[iters / 2] / 1e3;
  // one output element checked against a CPU dot product (inputs are exact in bf16/fp16)
  std::vector<cuco_t> a(K), b(K);
  cuco_t c0;
  const int64_t row = M / 2, col = N / 3;
  cudaMemcpy(a.data(), A + row * K, K * sizeof(cuco_t), cudaMemcpyDeviceToHost);
  cudaMemcpy2D(b.data(), sizeof(cuco_t), B + col, N * sizeof(cuco_t), sizeof(cuco_t), K, cudaMemcpyDeviceToHost);
  cudaMemcpy(&c0, C + row * N + col, sizeof(cuco_t), cudaMemcpyDeviceToHost);
  double ref = 0;
  for (int64_t k = 0; k < K; ++k) ref += (double)cuco_to_float(a[k]) * cuco_to_float(b[k]);
  printf("tile %lld %lld %lld %.9f %.1f %.4g\n", (long long)M, (long long)N, (long long)K, sec,
         2.0 * M * N * K / sec / 1e12, fabs(ref - cuco_to_float(c0)));
  return 0;
}
