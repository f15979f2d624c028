// Checked kernel launches for GPU evaluation (built with -DCUCO_CHECKED_LAUNCH).
//
// Virtual ranks run N rank instances on one GPU at once; kernels that wait on each other's
// signals deadlock unless every block of every instance is resident together. The harness gives
// each rank a share of the SMs (cuco_gpu_set_sm_share) and evaluator/gpu/launch_rewrite.py turns
// every `kern<<<g, b, s, st>>>(args)` of the candidate into cuco_checked_launch(kern, ...), which
// refuses (does not launch) a grid larger than share x the kernel's blocks per SM.
//
// The harness first calls cuco_run with the dry-run flag set: every checked launch is checked and
// skipped, so a refusal is found before anything that could wait on the refused kernel runs.
// The first refusal's reason is kept for cuco_gpu_refusal(); a refused launch sets no CUDA error.
//
// Every checked launch also records its stream (per host thread: virtual ranks call cuco_run from
// one thread each). The harness calls cuco_gpu_run_tracked instead of cuco_run and gets back the
// side streams the call launched on; once `stream` has finished, a side stream still busy
// (cuco_gpu_stream_busy) holds work cuco_run never joined, which the harness's timer on `stream`
// would not see: the candidate is rejected.
#ifndef CUCO_LAUNCH_CHECK_H_
#define CUCO_LAUNCH_CHECK_H_
#include <cuda_runtime.h>
#include <stdio.h>
#include <utility>

#if defined(__GNUC__)
#define CUCO_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define CUCO_EXPORT extern "C"
#endif

// inline variables: one instance per shared library, whatever includes this header
inline int cuco_gpu_sm_share = 0;  // 0: unchecked (the harness did not set a share)
inline int cuco_gpu_dry_run = 0;
inline int cuco_gpu_launches = 0;  // checked launches seen since the last reset
inline char cuco_gpu_refusal_text[512] = {0};

CUCO_EXPORT void cuco_gpu_set_sm_share(int sms);
CUCO_EXPORT void cuco_gpu_set_dry_run(int on);
CUCO_EXPORT const char* cuco_gpu_refusal(void);
CUCO_EXPORT int cuco_gpu_launch_count(void);
CUCO_EXPORT void cuco_gpu_reset(void);

struct cuco_ctx;  // cuco_ctx.h may come later: this header is force-included first
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream);

#define CUCO_GPU_MAX_TRACKED 64
inline thread_local cudaStream_t cuco_gpu_tracked[CUCO_GPU_MAX_TRACKED];
inline thread_local int cuco_gpu_ntracked = 0;

static inline void cuco_gpu_track(cudaStream_t s) {
  for (int i = 0; i < cuco_gpu_ntracked; ++i)
    if (cuco_gpu_tracked[i] == s) return;
  if (cuco_gpu_ntracked < CUCO_GPU_MAX_TRACKED) cuco_gpu_tracked[cuco_gpu_ntracked++] = s;
}

// Grid `grid` x `block` with `smem` dynamic bytes of `kernel`: 0 if it may launch, else -1 with
// the reason recorded (the first one wins).
static inline int cuco_launch_allowed(const void* kernel, const char* name, dim3 grid, dim3 block, size_t smem) {
  ++cuco_gpu_launches;
  if (cuco_gpu_sm_share <= 0) return 0;
  const long long blocks = (long long)grid.x * grid.y * grid.z;
  const int threads = (int)(block.x * block.y * block.z);
  int per_sm = 0;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // the launch itself will report the real problem
    return 0;
  }
  const long long limit = (long long)per_sm * cuco_gpu_sm_share;
  if (blocks <= limit) return 0;
  if (!cuco_gpu_refusal_text[0])
    snprintf(cuco_gpu_refusal_text, sizeof cuco_gpu_refusal_text,
             "launch of %lld blocks of %s exceeds co-residency: %d SMs for this rank x %d blocks per SM "
             "(%d threads, %zu bytes dynamic smem) = %lld; size grids from ctx.num_sms",
             blocks, name, cuco_gpu_sm_share, per_sm, threads, smem, limit);
  return -1;
}

template <typename... KArgs, typename... Args>
static inline void cuco_checked_launch_named(void (*kernel)(KArgs...), const char* name, dim3 grid, dim3 block,
                                             size_t smem, cudaStream_t stream, Args&&... args) {
  cuco_gpu_track(stream);
  if (cuco_launch_allowed((const void*)kernel, name, grid, block, smem) != 0 || cuco_gpu_dry_run) return;
  kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
}
#define cuco_checked_launch(kernel, ...) cuco_checked_launch_named(kernel, #kernel, __VA_ARGS__)

#if defined(CUCO_LAUNCH_CHECK_DEFINE)  // exactly one translation unit defines the exports
CUCO_EXPORT void cuco_gpu_set_sm_share(int sms) { cuco_gpu_sm_share = sms; }
CUCO_EXPORT void cuco_gpu_set_dry_run(int on) { cuco_gpu_dry_run = on; }
CUCO_EXPORT const char* cuco_gpu_refusal(void) { return cuco_gpu_refusal_text; }
CUCO_EXPORT int cuco_gpu_launch_count(void) { return cuco_gpu_launches; }
CUCO_EXPORT void cuco_gpu_reset(void) {
  cuco_gpu_refusal_text[0] = 0;
  cuco_gpu_launches = 0;
}
// cuco_run, then the streams other than `stream` that its checked launches used (at most max_side).
CUCO_EXPORT int cuco_gpu_run_tracked(const cuco_ctx* ctx, cudaStream_t stream, cudaStream_t* side, int max_side,
                                     int* n_side) {
  cuco_gpu_ntracked = 0;
  const int rc = cuco_run(ctx, stream);
  int n = 0;
  for (int i = 0; i < cuco_gpu_ntracked; ++i)
    if (cuco_gpu_tracked[i] != stream && n < max_side) side[n++] = cuco_gpu_tracked[i];
  *n_side = n;
  return rc;
}
// 1 while `s` still has queued work; 0 when idle (or no longer valid: the candidate destroyed it).
CUCO_EXPORT int cuco_gpu_stream_busy(cudaStream_t s) {
  const cudaError_t e = cudaStreamQuery(s);
  if (e == cudaErrorNotReady) return 1;
  if (e != cudaSuccess) (void)cudaGetLastError();
  return 0;
}
#endif

#endif  // CUCO_LAUNCH_CHECK_H_
