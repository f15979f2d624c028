"""CUDA text more than one template family composes."""

SIDE_STREAM = r"""
// Side stream for communication, created once per process; it joins `stream` before return.
static cudaStream_t g_side;
static cudaEvent_t g_fork, g_join;
static int ensure_side_stream() {
  if (g_side == nullptr) {
    cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&g_fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&g_join, cudaEventDisableTiming);
  }
  return (int)cudaGetLastError();
}
"""
