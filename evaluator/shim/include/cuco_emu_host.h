// cuco CPU emulator: the CUDA runtime host API. Streams are FIFO queues of operations that the
// rank's scheduler runs concurrently with each other (shim/streams.cpp); kernel launches made
// by the source rewrite land in cuco_launch_kernel below.
#ifndef CUCO_EMU_HOST_H_
#define CUCO_EMU_HOST_H_
#include <tuple>
#include <type_traits>
#include <utility>
#include "cuco_emu_defs.h"

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchFailure = 719,
  cudaErrorCooperativeLaunchTooLarge = 720,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef void (*cudaHostFn_t)(void*);
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrCooperativeLaunch = 95,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106,
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1, cudaFuncCachePreferL1 = 2, cudaFuncCachePreferEqual = 3 };
enum cudaLimit { cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2 };
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaSharedmemCarveoutMaxShared 100

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
  int regsPerBlock, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
  int clockRate, multiProcessorCount, major, minor, maxThreadsPerMultiProcessor;
  int l2CacheSize, memoryBusWidth, memoryClockRate, concurrentKernels, cooperativeLaunch;
  int maxBlocksPerMultiProcessor, asyncEngineCount, unifiedAddressing, managedMemory;
};
struct cudaFuncAttributes {
  size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, maxDynamicSharedSizeBytes;
};

const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaMalloc(void** p, size_t n);
cudaError_t cudaMallocHost(void** p, size_t n);
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags);
cudaError_t cudaMallocManaged(void** p, size_t n, unsigned flags = cudaMemAttachGlobal);
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s);
cudaError_t cudaFree(void* p);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaFreeAsync(void* p, cudaStream_t s);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemset(void* p, int value, size_t n);
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s = 0);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value);
cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int priority);
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s = 0, unsigned flags = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaGetDevice(int* d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);

namespace cuco_emu {
cudaError_t launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, void (*thunk)(void*), void (*del)(void*),
                   void* pack);
cudaError_t set_error(cudaError_t e);
int occupancy(int block_threads, size_t smem);
int num_sms();

template <class F, class Tuple>
struct LaunchPack {
  F f;
  Tuple args;
};
template <class P, size_t... I>
static void invoke_pack(P* p, std::index_sequence<I...>) {
  p->f(std::get<I>(p->args)...);  // every CUDA thread gets its own copies of the arguments
}
template <class P>
static void run_pack(void* p) {
  invoke_pack(static_cast<P*>(p), std::make_index_sequence<std::tuple_size<decltype(P::args)>::value>());
}
template <class P>
static void delete_pack(void* p) {
  delete static_cast<P*>(p);
}
template <class F, class... A>
static cudaError_t launch_callable(F f, dim3 g, dim3 b, size_t smem, cudaStream_t s, A&&... args) {
  typedef std::tuple<typename std::decay<A>::type...> Tuple;
  typedef LaunchPack<F, Tuple> P;
  P* pack = new P{f, Tuple(std::forward<A>(args)...)};  // arguments are captured at launch time
  return launch(g, b, smem, s, &run_pack<P>, &delete_pack<P>, pack);
}
}  // namespace cuco_emu

// What `kern<<<g, b, smem, stream>>>(args...)` becomes (see evaluator/source_rewrite.py).
template <class F, class... A>
static inline cudaError_t cuco_launch_kernel(F f, dim3 g, dim3 b, size_t smem, cudaStream_t s, A&&... args) {
  return cuco_emu::launch_callable(f, g, b, smem, s, std::forward<A>(args)...);
}

template <class... P>
static inline cudaError_t cudaLaunchKernel(void (*f)(P...), dim3 g, dim3 b, void** args, size_t smem = 0,
                                           cudaStream_t s = 0) {
  typedef std::tuple<typename std::decay<P>::type...> Tuple;
  Tuple t;
  size_t i = 0;
  std::apply([&](auto&... x) { ((x = *static_cast<typename std::decay<decltype(x)>::type*>(args[i++])), ...); }, t);
  return std::apply(
      [&](auto&... x) { return cuco_emu::launch_callable([f](auto... a) { f(a...); }, g, b, smem, s, x...); }, t);
}
template <class T>
static inline cudaError_t cudaLaunchCooperativeKernel(T*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0) {
  cuco_emu::not_emulatable("cudaLaunchCooperativeKernel (grid-wide sync)");
}

template <class T>
static inline cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
template <class T>
static inline cudaError_t cudaMallocHost(T** p, size_t n) { return cudaMallocHost(reinterpret_cast<void**>(p), n); }
template <class T>
static inline cudaError_t cudaMallocManaged(T** p, size_t n, unsigned f = cudaMemAttachGlobal) {
  return cudaMallocManaged(reinterpret_cast<void**>(p), n, f);
}
template <class T>
static inline cudaError_t cudaMallocAsync(T** p, size_t n, cudaStream_t s) {
  return cudaMallocAsync(reinterpret_cast<void**>(p), n, s);
}
template <class T>
static inline cudaError_t cudaFuncSetAttribute(T*, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize && (value < 0 || value > 232448))
    return cuco_emu::set_error(cudaErrorInvalidValue);
  return cudaSuccess;
}
template <class T>
static inline cudaError_t cudaFuncSetCacheConfig(T*, cudaFuncCache) { return cudaSuccess; }
template <class T>
static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, T*) {
  memset(a, 0, sizeof(*a));
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 32;
  a->maxDynamicSharedSizeBytes = 49152;
  a->ptxVersion = a->binaryVersion = 90;
  return cudaSuccess;
}
template <class T>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, T*, int block, size_t smem) {
  *n = cuco_emu::occupancy(block, smem);
  return cudaSuccess;
}
template <class T>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, T* f, int block, size_t smem,
                                                                                  unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, f, block, smem);
}
template <class T>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int* grid, int* block, T*, size_t smem = 0, int limit = 0) {
  *block = (limit > 0 && limit < 1024) ? limit : 1024;
  *grid = cuco_emu::num_sms() * cuco_emu::occupancy(*block, smem);
  return cudaSuccess;
}
template <class T>
static inline cudaError_t cudaMemcpyToSymbol(T& sym, const void* src, size_t n, size_t off = 0,
                                             cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  return cudaMemcpy(reinterpret_cast<char*>(&sym) + off, src, n, kind);
}
template <class T>
static inline cudaError_t cudaMemcpyToSymbolAsync(T& sym, const void* src, size_t n, size_t off = 0,
                                                  cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t s = 0) {
  return cudaMemcpyAsync(reinterpret_cast<char*>(&sym) + off, src, n, kind, s);
}
template <class T>
static inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& sym, size_t n, size_t off = 0,
                                               cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  return cudaMemcpy(dst, reinterpret_cast<const char*>(&sym) + off, n, kind);
}
template <class T>
static inline cudaError_t cudaGetSymbolAddress(void** p, const T& sym) {
  *p = const_cast<void*>(static_cast<const void*>(&sym));
  return cudaSuccess;
}
#endif  // CUCO_EMU_HOST_H_
