// cuco GEMM tile, GPU primitives for sm_80+ (included by cuco_gemm_detail.h, never on the CPU
// emulator): cp.async copies, ldmatrix and mma.sync m16n8k16 on bf16/fp16 with fp32 accumulators.
#ifndef CUCO_GEMM_SM80_H_
#define CUCO_GEMM_SM80_H_
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "cuco_gemm.h needs sm_80 or newer (cp.async, ldmatrix, mma.sync m16n8k16)"
#endif

namespace cuco_gemm_detail {

static __device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared without passing through registers, bypassing L1 (.cg). Bytes
// [src_bytes, 16) of the destination are zero filled; src_bytes == 0 reads nothing.
static __device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
// 16 bytes, or (zero) 16 zero bytes without reading src.
static __device__ __forceinline__ void cp_async16_or_zero(void* dst, const void* src, bool zero) {
  asm volatile(
      "{\n .reg .pred z;\n setp.ne.b32 z, %2, 0;\n cp.async.cg.shared.global [%0], [%1], 16, z;\n}\n" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"((int)zero));
}
static __device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most N committed groups of this thread are still in flight.
template <int N>
static __device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lane l gives the address of row l % 8 of matrix l / 8, and register j
// of lane l receives elements (l / 4, 2 * (l % 4) + {0, 1}) of matrix j (transposed: .trans).
static __device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

// d += a (16x16, row) * b (16x8, col), fp32 accumulators.
static __device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if CUCO_DTYPE == CUCO_BF16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// Zero the k >= kleft halves of an A fragment (0 < kleft < 16): register j holds k = 2*(lane%4)
// (+8 for j >= 2) in its low half and k + 1 in its high half.
static __device__ __forceinline__ void mask_a_fragment(uint32_t (&a)[4], int kleft, int lane) {
  for (int j = 0; j < 4; ++j) {
    const int k = (j >= 2 ? 8 : 0) + 2 * (lane % 4);
    if (k >= kleft) a[j] = 0u;
    else if (k + 1 >= kleft) a[j] &= 0xFFFFu;
  }
}

// One pipeline stage on tensor cores: acc += a[:, 0:BK] * b[0:BK, :]. `a` is the swizzled A
// stage, or (A_SMEM) the caller's row-major A at this stage's first column with `kvalid`
// columns left before K. `b` is the swizzled B stage.
//
// Addresses are byte offsets: each lane's part is computed once; the loops add whole 8-row
// blocks or XOR whole chunk pairs, which commute with the swizzle (it depends on row % 8 only
// and the XORed chunk bits are disjoint from the lane's), so each ldmatrix costs one add.
template <class Cfg, int B_LAYOUT, bool A_SMEM>
static __device__ __forceinline__ void stage_mma(cuco_gemm_acc<Cfg>& acc, int t, const cuco_t* a, int lda_s,
                                                 const cuco_t* b, int kvalid) {
  constexpr int CH_K = Cfg::BK / kVec, CH_N = Cfg::BN / kVec;  // 16-byte chunks per smem row
  constexpr int E = (int)sizeof(cuco_t);
  const int lane = t % 32, warp = t / 32;
  const int wm = warp / Cfg::WARPS_N, wn = warp % Cfg::WARPS_N;
  // A: lanes 0-15 address rows 0-15 at k 0-7, lanes 16-31 the same rows at k 8-15.
  const int a_row = wm * Cfg::WM + lane % 16;
  const uint32_t a_stage = smem_u32(a);
  const uint32_t a_lane = A_SMEM ? (uint32_t)(a_row * lda_s + (lane / 16) * kVec) * E
                                 : (uint32_t)swizzle<CH_K>(a_row, lane / 16) * E;
  // B: matrices 0-3 = (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15).
  const uint32_t b_stage = smem_u32(b);
  const uint32_t b_lane =
      B_LAYOUT == CUCO_B_KN
          ? (uint32_t)swizzle<CH_N>(lane % 8 + ((lane / 8) % 2) * 8, wn * Cfg::WN / kVec + lane / 16) * E
          : (uint32_t)swizzle<CH_K>(wn * Cfg::WN + lane % 8 + (lane / 16) * 8, (lane / 8) % 2) * E;
#pragma unroll
  for (int kk = 0; kk < Cfg::BK / 16; ++kk) {
    if (A_SMEM && kk * 16 >= kvalid) break;
    uint32_t af[Cfg::MI][4], bf[Cfg::NI][2];
#pragma unroll
    for (int mi = 0; mi < Cfg::MI; ++mi) {
      const uint32_t off = A_SMEM ? a_lane + (uint32_t)(kk * 16 + mi * 16 * lda_s) * E
                                  : (a_lane ^ (uint32_t)(kk * 32)) + mi * 16 * CH_K * 16;
      ldmatrix_x4(af[mi], a_stage + off);
      if (A_SMEM && kk * 16 + 16 > kvalid) mask_a_fragment(af[mi], kvalid - kk * 16, lane);
    }
#pragma unroll
    for (int nj = 0; nj < Cfg::NI / 2; ++nj) {  // two n8 tiles per ldmatrix
      uint32_t q[4];
      if (B_LAYOUT == CUCO_B_KN)  // rows k, n chunks: .trans gives the col-major fragment
        ldmatrix_x4_trans(q, b_stage + (b_lane ^ (uint32_t)(nj * 32)) + kk * 16 * CH_N * 16);
      else  // rows n, k chunks
        ldmatrix_x4(q, b_stage + (b_lane ^ (uint32_t)(kk * 32)) + nj * 16 * CH_K * 16);
      bf[2 * nj][0] = q[0], bf[2 * nj][1] = q[1], bf[2 * nj + 1][0] = q[2], bf[2 * nj + 1][1] = q[3];
    }
#pragma unroll
    for (int mi = 0; mi < Cfg::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < Cfg::NI; ++ni) mma_16816(acc.v[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
  }
}

}  // namespace cuco_gemm_detail
#endif  // CUCO_GEMM_SM80_H_
