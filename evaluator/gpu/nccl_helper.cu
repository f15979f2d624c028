// Host helper of the GPU harness for the `nccl` comm backend (compiled once per NCCL version).
//
// Gives a candidate its own NCCL communicator, symmetric windows over its symmetric buffer and
// signal pad, and a device communicator, and takes them down again (also after a failure half
// way). Every call is collective over the ranks, like the NCCL calls it makes.
//
//   cuco_nccl_unique_id(out, len)              -> bytes written (NCCL_UNIQUE_ID_BYTES) or -1
//   cuco_nccl_open(id, rank, world, symm_bytes, signal_bytes, err, errlen) -> handle or NULL
//   cuco_nccl_pointers(h, out[4])              symm, signals, ctx.comm (device cuco_nccl_comm),
//                                              ctx.host_comm (ncclComm_t*)
//   cuco_nccl_peer_pointers(h, peer, out[2])   peer's symm buffer and signal pad (device pointers)
//   cuco_nccl_zero(h, symm_bytes, signal_bytes) zero both buffers (between cases)
//   cuco_nccl_properties(h, out[3])            deviceApiSupport, multimemSupport, ginType
//   cuco_nccl_close(h, err, errlen)            -> 0, or the first failure (everything is still freed)
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "cuco_comm.h"  // cuco_nccl_comm, CUCO_MAX_BARRIERS, CUCO_GIN_SIGNALS (built with CUCO_COMM_NCCL)

#define CUCO_API extern "C" __attribute__((visibility("default")))

struct cuco_nccl_state {
  ncclComm_t comm = nullptr;
  void* symm = nullptr;
  void* signals = nullptr;
  ncclWindow_t symm_win = nullptr, signal_win = nullptr;
  ncclDevComm dev{};
  bool dev_made = false;
  cuco_nccl_comm* dev_ptr = nullptr;  // device copy for ctx.comm
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
};

static int cuco_fail(char* err, int len, const char* what, const char* why) {
  if (err && len > 0 && !err[0]) snprintf(err, len, "%s: %s", what, why);
  return -1;
}
#define CUCO_NCCL(call) \
  do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) return cuco_fail(err, len, #call, ncclGetErrorString(r_)); } while (0)
#define CUCO_CUDA(call) \
  do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return cuco_fail(err, len, #call, cudaGetErrorString(e_)); } while (0)

CUCO_API int cuco_nccl_version(void) {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : -1;
}

CUCO_API int cuco_nccl_unique_id(char* out, int out_len) {
  ncclUniqueId id;
  if (out_len < (int)sizeof id || ncclGetUniqueId(&id) != ncclSuccess) return -1;
  memcpy(out, &id, sizeof id);
  return (int)sizeof id;
}

static int cuco_open_steps(cuco_nccl_state* s, const char* id_bytes, int rank, int world, size_t symm_bytes,
                           size_t signal_bytes, char* err, int len) {
  ncclUniqueId id;
  memcpy(&id, id_bytes, sizeof id);
  CUCO_NCCL(ncclCommInitRank(&s->comm, world, id, rank));
  CUCO_NCCL(ncclCommQueryProperties(s->comm, &s->props));
  if (!s->props.deviceApiSupport)
    return cuco_fail(err, len, "ncclCommQueryProperties", "this NCCL/GPU setup has no device API support");
  CUCO_NCCL(ncclMemAlloc(&s->symm, symm_bytes));
  CUCO_NCCL(ncclMemAlloc(&s->signals, signal_bytes));
  CUCO_CUDA(cudaMemset(s->symm, 0, symm_bytes));
  CUCO_CUDA(cudaMemset(s->signals, 0, signal_bytes));
  CUCO_CUDA(cudaDeviceSynchronize());
  CUCO_NCCL(ncclCommWindowRegister(s->comm, s->symm, symm_bytes, &s->symm_win, NCCL_WIN_COLL_SYMMETRIC));
  CUCO_NCCL(ncclCommWindowRegister(s->comm, s->signals, signal_bytes, &s->signal_win, NCCL_WIN_COLL_SYMMETRIC));
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = CUCO_MAX_BARRIERS;
  reqs.lsaMultimem = s->props.multimemSupport;
  if (s->props.ginType != NCCL_GIN_TYPE_NONE) {  // a GIN backend exists (a NIC): ask for the signals
    reqs.ginConnectionType = NCCL_GIN_CONNECTION_FULL;
    reqs.ginContextCount = CUCO_GIN_CONTEXTS;
    reqs.ginSignalCount = CUCO_GIN_SIGNALS;
  }
  CUCO_NCCL(ncclDevCommCreate(s->comm, &reqs, &s->dev));
  s->dev_made = true;
  cuco_nccl_comm host{s->dev, s->symm_win, s->signal_win};
  CUCO_CUDA(cudaMalloc((void**)&s->dev_ptr, sizeof host));
  CUCO_CUDA(cudaMemcpy(s->dev_ptr, &host, sizeof host, cudaMemcpyHostToDevice));
  return 0;
}

// Free what exists, in reverse order; keep the first error but go on freeing.
static int cuco_teardown(cuco_nccl_state* s, char* err, int len) {
  int rc = 0;
  if (s->dev_ptr && cudaFree(s->dev_ptr) != cudaSuccess) rc = cuco_fail(err, len, "cudaFree", "device comm copy");
  if (s->dev_made) {
    ncclResult_t r = ncclDevCommDestroy(s->comm, &s->dev);
    if (r != ncclSuccess) rc = cuco_fail(err, len, "ncclDevCommDestroy", ncclGetErrorString(r));
  }
  ncclWindow_t* wins[2] = {&s->signal_win, &s->symm_win};
  for (ncclWindow_t* w : wins) {
    if (!*w) continue;
    ncclResult_t r = ncclCommWindowDeregister(s->comm, *w);
    if (r != ncclSuccess) rc = cuco_fail(err, len, "ncclCommWindowDeregister", ncclGetErrorString(r));
  }
  void* bufs[2] = {s->signals, s->symm};
  for (void* b : bufs)
    if (b && ncclMemFree(b) != ncclSuccess) rc = cuco_fail(err, len, "ncclMemFree", "buffer");
  if (s->comm) {
    ncclResult_t r = ncclCommDestroy(s->comm);
    if (r != ncclSuccess) rc = cuco_fail(err, len, "ncclCommDestroy", ncclGetErrorString(r));
  }
  delete s;
  return rc;
}

CUCO_API void* cuco_nccl_open(const char* id_bytes, int rank, int world, size_t symm_bytes, size_t signal_bytes,
                              char* err, int len) {
  if (err && len > 0) err[0] = 0;
  cuco_nccl_state* s = new cuco_nccl_state();
  if (cuco_open_steps(s, id_bytes, rank, world, symm_bytes, signal_bytes, err, len) != 0) {
    cuco_teardown(s, nullptr, 0);  // the first error is already in err
    return nullptr;
  }
  return s;
}

CUCO_API void cuco_nccl_pointers(void* h, void** out) {
  cuco_nccl_state* s = static_cast<cuco_nccl_state*>(h);
  out[0] = s->symm;
  out[1] = s->signals;
  out[2] = s->dev_ptr;
  out[3] = &s->comm;  // ctx.host_comm: an ncclComm_t* in host memory (cuco_coll.h)
}

// Peer `peer`'s symmetric buffer and signal pad as device pointers this process can use (for
// ctx.peer_symm / ctx.peer_signals: copy-engine transfers address peers from the host). 0 or -1.
CUCO_API int cuco_nccl_peer_pointers(void* h, int peer, void** out) {
  cuco_nccl_state* s = static_cast<cuco_nccl_state*>(h);
  if (ncclGetPeerDevicePointer(s->symm_win, 0, peer, &out[0]) != ncclSuccess) return -1;
  return ncclGetPeerDevicePointer(s->signal_win, 0, peer, &out[1]) == ncclSuccess ? 0 : -1;
}

// Zero this rank's symmetric buffer and signal pad (between cases; synchronous).
CUCO_API int cuco_nccl_zero(void* h, size_t symm_bytes, size_t signal_bytes) {
  cuco_nccl_state* s = static_cast<cuco_nccl_state*>(h);
  if (cudaMemset(s->symm, 0, symm_bytes) != cudaSuccess || cudaMemset(s->signals, 0, signal_bytes) != cudaSuccess)
    return -1;
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

CUCO_API void cuco_nccl_properties(void* h, int* out) {
  cuco_nccl_state* s = static_cast<cuco_nccl_state*>(h);
  out[0] = s->props.deviceApiSupport;
  out[1] = s->props.multimemSupport;
  out[2] = (int)s->props.ginType;
}

CUCO_API int cuco_nccl_close(void* h, char* err, int len) {
  if (err && len > 0) err[0] = 0;
  return h ? cuco_teardown(static_cast<cuco_nccl_state*>(h), err, len) : 0;
}
