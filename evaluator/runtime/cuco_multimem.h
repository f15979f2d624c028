// multimem (NVLink SHARP) in the cuco comm API: in-switch reduction and broadcast over the
// symmetric buffers. `offset` is the byte offset of one cuco_t element in every rank's buffer.
//
//   float cuco_mm_ld_reduce(c, offset)   sum of that element over all ranks (reduced in the switch)
//   void  cuco_mm_st(c, offset, v)       store v to that element on every rank (switch broadcast)
//   float2 cuco_mm_ld_reduce2 / void cuco_mm_st2: two consecutive elements, offset aligned to two
//          elements -- the forms the switch executes natively for 16-bit types (prefer them)
//
// nccl: the LSA team's multicast address (NCCL window with lsaMultimem); symm: ctx.multimem when
// the harness mapped a multicast object; otherwise (and on the cpu backend, and on GPUs before
// sm_90) the same semantics through peer loads/stores, ranks summed in rank order.
#ifndef CUCO_MULTIMEM_H_
#define CUCO_MULTIMEM_H_

static __device__ __forceinline__ float cuco_mm_ld_reduce_peers(const cuco_ctx& c, size_t offset) {
  float sum = 0.f;
  for (int p = 0; p < c.world; ++p)
    sum += cuco_to_float(*reinterpret_cast<const cuco_t*>(static_cast<const char*>(cuco_peer(c, p)) + offset));
  return sum;
}
static __device__ __forceinline__ void cuco_mm_st_peers(const cuco_ctx& c, size_t offset, float v) {
  const cuco_t x = cuco_from_float<cuco_t>(v);
  for (int p = 0; p < c.world; ++p) *reinterpret_cast<cuco_t*>(static_cast<char*>(cuco_peer(c, p)) + offset) = x;
}

#if !defined(CUCO_COMM_CPU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CUCO_HAS_MULTIMEM_PTX 1
// 16-bit types reduce and store as aligned pairs (the PTX has no scalar 16-bit forms).
static __device__ __forceinline__ float2 cuco_mm_ld_reduce2_ptx(void* mc) {
#if CUCO_DTYPE == CUCO_F32
  float2 v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];" : "=f"(v.x) : "l"(mc) : "memory");
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];" : "=f"(v.y) : "l"((char*)mc + 4) : "memory");
  return v;
#else
  unsigned v;
#if CUCO_DTYPE == CUCO_F16
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.f16x2 %0, [%1];" : "=r"(v) : "l"(mc) : "memory");
#else
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.bf16x2 %0, [%1];" : "=r"(v) : "l"(mc) : "memory");
#endif
  const cuco_t* h = reinterpret_cast<const cuco_t*>(&v);
  return make_float2(cuco_to_float(h[0]), cuco_to_float(h[1]));
#endif
}
static __device__ __forceinline__ void cuco_mm_st2_ptx(void* mc, float2 f) {
#if CUCO_DTYPE == CUCO_F32
  asm volatile("multimem.st.relaxed.sys.global.f32 [%0], %1;" ::"l"(mc), "f"(f.x) : "memory");
  asm volatile("multimem.st.relaxed.sys.global.f32 [%0], %1;" ::"l"((char*)mc + 4), "f"(f.y) : "memory");
#else
  cuco_t h[2] = {cuco_from_float<cuco_t>(f.x), cuco_from_float<cuco_t>(f.y)};
  const unsigned v = *reinterpret_cast<const unsigned*>(h);
#if CUCO_DTYPE == CUCO_F16
  asm volatile("multimem.st.relaxed.sys.global.f16x2 [%0], %1;" ::"l"(mc), "r"(v) : "memory");
#else
  asm volatile("multimem.st.relaxed.sys.global.bf16x2 [%0], %1;" ::"l"(mc), "r"(v) : "memory");
#endif
#endif
}
#endif

// The multicast address of `offset`, or NULL when there is none (then peer loops stand in).
static __device__ __forceinline__ void* cuco_mm_address(const cuco_ctx& c, size_t offset) {
#if defined(CUCO_HAS_MULTIMEM_PTX) && defined(CUCO_COMM_NCCL)
  return ncclGetLsaMultimemPointer(cuco_nccl(c).symm_win, offset, cuco_nccl(c).dev);
#elif defined(CUCO_HAS_MULTIMEM_PTX)
  return c.multimem ? static_cast<char*>(c.multimem) + offset : nullptr;
#else
  (void)c, (void)offset;
  return nullptr;
#endif
}

// Two consecutive elements at `offset` (aligned to two elements): the efficient forms.
static __device__ __forceinline__ float2 cuco_mm_ld_reduce2(const cuco_ctx& c, size_t offset) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_MM_REDUCE, 2 * sizeof(cuco_t), 0);
#if defined(CUCO_HAS_MULTIMEM_PTX)
  if (void* mc = cuco_mm_address(c, offset)) return cuco_mm_ld_reduce2_ptx(mc);
#endif
  return make_float2(cuco_mm_ld_reduce_peers(c, offset), cuco_mm_ld_reduce_peers(c, offset + sizeof(cuco_t)));
}
static __device__ __forceinline__ void cuco_mm_st2(const cuco_ctx& c, size_t offset, float2 v) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_MM_STORE, 2 * sizeof(cuco_t), 0);
#if defined(CUCO_HAS_MULTIMEM_PTX)
  if (void* mc = cuco_mm_address(c, offset)) return cuco_mm_st2_ptx(mc, v);
#endif
  cuco_mm_st_peers(c, offset, v.x);
  cuco_mm_st_peers(c, offset + sizeof(cuco_t), v.y);
}

// One element. A 16-bit element reduces through its aligned pair; a 16-bit store cannot be
// narrowed to one element in the switch, so it goes to each peer (same result, more traffic).
static __device__ __forceinline__ float cuco_mm_ld_reduce(const cuco_ctx& c, size_t offset) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_MM_REDUCE, sizeof(cuco_t), 0);
#if defined(CUCO_HAS_MULTIMEM_PTX)
  const size_t pair = offset & ~(size_t)(2 * sizeof(cuco_t) - 1);
  if (void* mc = cuco_mm_address(c, pair)) {
    const float2 v = cuco_mm_ld_reduce2_ptx(mc);
    return offset == pair ? v.x : v.y;
  }
#endif
  return cuco_mm_ld_reduce_peers(c, offset);
}
static __device__ __forceinline__ void cuco_mm_st(const cuco_ctx& c, size_t offset, float v) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_MM_STORE, sizeof(cuco_t), 0);
#if defined(CUCO_HAS_MULTIMEM_PTX) && CUCO_DTYPE == CUCO_F32
  if (void* mc = cuco_mm_address(c, offset)) {
    asm volatile("multimem.st.relaxed.sys.global.f32 [%0], %1;" ::"l"(mc), "f"(v) : "memory");
    return;
  }
#endif
  cuco_mm_st_peers(c, offset, v);
}

#endif  // CUCO_MULTIMEM_H_
