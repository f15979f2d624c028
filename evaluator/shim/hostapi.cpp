// cuco CPU emulator: device memory and device queries of the CUDA runtime API.
// Device memory is process memory (each rank is a process); fresh allocations are poisoned
// with 0xFF bytes (NaN for every float type), as uninitialised GPU memory would be garbage.
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <unordered_map>
#include "emu_internal.h"

namespace cuco_emu {
namespace {
int g_num_sms = 1, g_rank = 0;
std::unordered_map<void*, size_t> g_allocations;
size_t g_allocated = 0, g_budget = size_t(256) << 20;

// Ranks share one host: a candidate that allocates (and the poison touches) more than the
// budget would take the machine's memory, so it is stopped with a reason instead.
cudaError_t allocate(const char* api, void** p, size_t n) {
  require_host(api);
  if (!p) return set_error(cudaErrorInvalidValue);
  *p = nullptr;
  if (n == 0) return cudaSuccess;
  if (n > g_budget - g_allocated)
    fail(kExitMemory, "memory: rank %d: %s of %zu bytes refused: this rank already holds %zu bytes and the emulator "
         "allows %zu bytes of allocations per rank (keep scratch in ctx.workspace or the symmetric buffer)", g_rank,
         api, n, g_allocated, g_budget);
  void* q = nullptr;
  if (posix_memalign(&q, 256, n) != 0) return set_error(cudaErrorMemoryAllocation);
  memset(q, 0xFF, n);
  g_allocations[q] = n;
  g_allocated += n;
  *p = q;
  return cudaSuccess;
}

cudaError_t release(void* p) {
  if (!p) return cudaSuccess;
  auto it = g_allocations.find(p);
  if (it == g_allocations.end()) return set_error(cudaErrorInvalidValue);
  g_allocated -= it->second;
  g_allocations.erase(it);
  free(p);
  return cudaSuccess;
}
}  // namespace

void free_device(void* p) { release(p); }
void set_num_sms(int n) { g_num_sms = n > 0 ? n : 1; }
void set_device_memory_budget(int rank, size_t bytes) {
  g_rank = rank;
  g_budget = bytes;
}
int num_sms() { return g_num_sms; }

int occupancy(int block_threads, size_t smem) {
  if (block_threads <= 0) return 0;
  int n = 2048 / block_threads;
  if (smem > 0) n = std::min<int>(n, (int)(233472 / (smem + 1024)));
  return std::max(0, std::min(n, 32));
}
}  // namespace cuco_emu

cudaError_t cudaMalloc(void** p, size_t n) { return cuco_emu::allocate("cudaMalloc", p, n); }
cudaError_t cudaMallocHost(void** p, size_t n) { return cuco_emu::allocate("cudaMallocHost", p, n); }
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) { return cuco_emu::allocate("cudaHostAlloc", p, n); }
cudaError_t cudaMallocManaged(void** p, size_t n, unsigned) { return cuco_emu::allocate("cudaMallocManaged", p, n); }
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) { return cuco_emu::allocate("cudaMallocAsync", p, n); }
// cudaFree implicitly synchronises the device in CUDA; so does the emulator.
cudaError_t cudaFree(void* p) {
  cudaDeviceSynchronize();
  return cuco_emu::release(p);
}
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaDeviceReset() { cuco_emu::not_emulatable("cudaDeviceReset"); }
cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *v = cuco_emu::num_sms(); break;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *v = 64; break;
    case cudaDevAttrMaxGridDimX: *v = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *v = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = 49152; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = 232448; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = 233472; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: *v = 65536; break;
    case cudaDevAttrClockRate: *v = 1980000; break;
    case cudaDevAttrL2CacheSize: *v = 50 * 1024 * 1024; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrCooperativeLaunch: *v = 0; break;  // grid-wide sync cannot be emulated
    case cudaDevAttrMaxBlocksPerMultiprocessor: *v = 32; break;
    default: return cuco_emu::set_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  memset(p, 0, sizeof(*p));
  // the device the reported compute capability 9.0 belongs to: code must not tell it is emulated
  snprintf(p->name, sizeof p->name, "NVIDIA H100 80GB HBM3");
  p->totalGlobalMem = size_t(1) << 34;
  p->sharedMemPerBlock = 49152;
  p->sharedMemPerBlockOptin = 232448;
  p->sharedMemPerMultiprocessor = 233472;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->clockRate = 1980000;
  p->multiProcessorCount = cuco_emu::num_sms();
  p->major = 9;
  p->minor = 0;
  p->maxThreadsPerMultiProcessor = 2048;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->concurrentKernels = 1;
  p->maxBlocksPerMultiProcessor = 32;
  p->unifiedAddressing = 1;
  return cudaSuccess;
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
  }
}
