// Launching kernels from the comm API's own host helpers, on every backend: nvcc takes the
// <<<>>> syntax; the CPU emulator (which rewrites launches only in the candidate's source) takes
// the same call through its launcher.
#ifndef CUCO_LAUNCH_H_
#define CUCO_LAUNCH_H_
#if defined(CUCO_COMM_CPU)
#define CUCO_LAUNCH(kernel, grid, block, stream, ...) \
  cuco_launch_kernel([=](auto... cuco_a) { kernel(cuco_a...); }, dim3(grid), dim3(block), 0, stream, __VA_ARGS__)
#elif defined(CUCO_CHECKED_LAUNCH)  // GPU evaluation: co-residency checked (cuco_launch_check.h)
#include "cuco_launch_check.h"
#define CUCO_LAUNCH(kernel, grid, block, stream, ...) \
  cuco_checked_launch_named(kernel, #kernel, dim3(grid), dim3(block), 0, stream, __VA_ARGS__)
#else
#define CUCO_LAUNCH(kernel, grid, block, stream, ...) kernel<<<grid, block, 0, stream>>>(__VA_ARGS__)
#endif
#endif  // CUCO_LAUNCH_H_
