// Host launcher of an exported cuco kernel: a small C ABI that the Python op (or any host code)
// calls to run kernel.cu's `cuco_run` with the `nccl` comm backend.
//
// It mirrors the setup cuco's GPU harness gives a candidate (evaluator/gpu/nccl_helper.cu): its own
// NCCL communicator from an ncclUniqueId, symmetric windows over a symmetric buffer and a signal
// pad, and an NCCL device communicator; then a cuco_ctx per call. kernel.cu is included here, so
// the candidate and its launcher are ONE translation unit (the comm runtime defines kernels that
// two units would both define).
//
//   int   cuco_export_abi(void)                       ABI version (1)
//   int   cuco_export_dtype(void)                     CUCO_DTYPE of this build (0 f32, 1 f16, 2 bf16)
//   int   cuco_export_nccl_version(void)              the loaded NCCL's version code, or -1
//   int   cuco_export_unique_id(out, len)             bytes written (sizeof ncclUniqueId) or -1
//   void* cuco_export_open(id, rank, world, symm_bytes, err, errlen)   collective; NULL on failure
//   int   cuco_export_run(h, dims, ndims, ins, nin, outs, nout, workspace, workspace_bytes,
//                         symm_bytes, num_sms, stream, err, errlen)    0, or cuco_run's code / -1
//   int   cuco_export_close(h, err, errlen)           collective; 0 or -1 (everything freed anyway)
//
// Every call of cuco_export_run must be made by every rank, in the same order, with the same dims:
// like the NCCL collectives it may issue. Signal pads count up across calls (ctx.epoch = 1, 2, ...);
// when the dims change, the pads and the symmetric buffer are zeroed between two stream-ordered
// barriers and the epoch starts again at 1, as cuco's harness does between shapes.
#include "kernel.cu"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#define CUCO_EXPORT_API extern "C" __attribute__((visibility("default")))
#define CUCO_EXPORT_SIGNAL_BYTES ((size_t)CUCO_SIGNAL_SLOTS * sizeof(uint64_t))

struct cuco_export_state {
  ncclComm_t comm = nullptr;
  int rank = 0, world = 0;
  void* symm = nullptr;
  void* signals = nullptr;
  size_t symm_cap = 0;
  ncclWindow_t symm_win = nullptr, signal_win = nullptr;
  ncclDevComm dev{};
  bool dev_made = false;
  cuco_nccl_comm* dev_ptr = nullptr;  // device copy for ctx.comm
  int* fence = nullptr;               // one int the stream-ordered barriers all-reduce
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  void* peer_symm[CUCO_MAX_RANKS] = {};
  void* peer_signals[CUCO_MAX_RANKS] = {};
  int64_t last_dims[CUCO_MAX_DIMS] = {};
  size_t last_symm = 0;
  bool called = false;
  uint64_t epoch = 0;
};

static int cuco_export_fail(char* err, int len, const char* what, const char* why) {
  if (err && len > 0 && !err[0]) snprintf(err, len, "%s: %s", what, why);
  return -1;
}
#define CUCO_X_NCCL(call)                                                                                  \
  do {                                                                                                     \
    ncclResult_t r_ = (call);                                                                              \
    if (r_ != ncclSuccess) return cuco_export_fail(err, len, #call, ncclGetErrorString(r_));               \
  } while (0)
#define CUCO_X_CUDA(call)                                                                                  \
  do {                                                                                                     \
    cudaError_t e_ = (call);                                                                               \
    if (e_ != cudaSuccess) return cuco_export_fail(err, len, #call, cudaGetErrorString(e_));               \
  } while (0)

CUCO_EXPORT_API int cuco_export_abi(void) { return 1; }
CUCO_EXPORT_API int cuco_export_dtype(void) { return CUCO_DTYPE; }

CUCO_EXPORT_API int cuco_export_nccl_version(void) {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : -1;
}

CUCO_EXPORT_API int cuco_export_unique_id(char* out, int out_len) {
  ncclUniqueId id;
  if (out_len < (int)sizeof id || ncclGetUniqueId(&id) != ncclSuccess) return -1;
  memcpy(out, &id, sizeof id);
  return (int)sizeof id;
}

// Peer buffers as device pointers this process can use (copy-engine transfers address them from
// the host); NULL for a peer on another node.
static void cuco_export_peers(cuco_export_state* s) {
  for (int p = 0; p < s->world; ++p) {
    if (ncclGetPeerDevicePointer(s->symm_win, 0, p, &s->peer_symm[p]) != ncclSuccess) s->peer_symm[p] = nullptr;
    if (ncclGetPeerDevicePointer(s->signal_win, 0, p, &s->peer_signals[p]) != ncclSuccess)
      s->peer_signals[p] = nullptr;
  }
}

static int cuco_export_open_steps(cuco_export_state* s, const char* id_bytes, size_t symm_bytes, char* err,
                                  int len) {
  ncclUniqueId id;
  memcpy(&id, id_bytes, sizeof id);
  CUCO_X_NCCL(ncclCommInitRank(&s->comm, s->world, id, s->rank));
  CUCO_X_NCCL(ncclCommQueryProperties(s->comm, &s->props));
  if (!s->props.deviceApiSupport)
    return cuco_export_fail(err, len, "ncclCommQueryProperties", "this NCCL/GPU setup has no device API support");
  CUCO_X_NCCL(ncclMemAlloc(&s->symm, symm_bytes));
  CUCO_X_NCCL(ncclMemAlloc(&s->signals, CUCO_EXPORT_SIGNAL_BYTES));
  CUCO_X_CUDA(cudaMemset(s->symm, 0, symm_bytes));
  CUCO_X_CUDA(cudaMemset(s->signals, 0, CUCO_EXPORT_SIGNAL_BYTES));
  CUCO_X_CUDA(cudaMalloc((void**)&s->fence, sizeof(int)));
  CUCO_X_CUDA(cudaMemset(s->fence, 0, sizeof(int)));
  CUCO_X_CUDA(cudaDeviceSynchronize());  // zeroed on every rank before any rank may signal into it
  s->symm_cap = symm_bytes;
  CUCO_X_NCCL(ncclCommWindowRegister(s->comm, s->symm, symm_bytes, &s->symm_win, NCCL_WIN_COLL_SYMMETRIC));
  CUCO_X_NCCL(ncclCommWindowRegister(s->comm, s->signals, CUCO_EXPORT_SIGNAL_BYTES, &s->signal_win,
                                     NCCL_WIN_COLL_SYMMETRIC));
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = CUCO_MAX_BARRIERS;
  reqs.lsaMultimem = s->props.multimemSupport;
  if (s->props.ginType != NCCL_GIN_TYPE_NONE) {  // a GIN backend exists (a NIC): ask for the signals
    reqs.ginConnectionType = NCCL_GIN_CONNECTION_FULL;
    reqs.ginContextCount = CUCO_GIN_CONTEXTS;
    reqs.ginSignalCount = CUCO_GIN_SIGNALS;
  }
  CUCO_X_NCCL(ncclDevCommCreate(s->comm, &reqs, &s->dev));
  s->dev_made = true;
  cuco_nccl_comm host{s->dev, s->symm_win, s->signal_win};
  CUCO_X_CUDA(cudaMalloc((void**)&s->dev_ptr, sizeof host));
  CUCO_X_CUDA(cudaMemcpy(s->dev_ptr, &host, sizeof host, cudaMemcpyHostToDevice));
  cuco_export_peers(s);
  return 0;
}

// Free what exists, in reverse order; keep the first error but go on freeing.
static int cuco_export_teardown(cuco_export_state* s, char* err, int len) {
  int rc = 0;
  if (s->dev_ptr && cudaFree(s->dev_ptr) != cudaSuccess) rc = cuco_export_fail(err, len, "cudaFree", "device comm");
  if (s->fence && cudaFree(s->fence) != cudaSuccess) rc = cuco_export_fail(err, len, "cudaFree", "fence");
  if (s->dev_made) {
    ncclResult_t r = ncclDevCommDestroy(s->comm, &s->dev);
    if (r != ncclSuccess) rc = cuco_export_fail(err, len, "ncclDevCommDestroy", ncclGetErrorString(r));
  }
  ncclWindow_t* wins[2] = {&s->signal_win, &s->symm_win};
  for (ncclWindow_t* w : wins) {
    if (!*w) continue;
    ncclResult_t r = ncclCommWindowDeregister(s->comm, *w);
    if (r != ncclSuccess) rc = cuco_export_fail(err, len, "ncclCommWindowDeregister", ncclGetErrorString(r));
  }
  void* bufs[2] = {s->signals, s->symm};
  for (void* b : bufs)
    if (b && ncclMemFree(b) != ncclSuccess) rc = cuco_export_fail(err, len, "ncclMemFree", "buffer");
  if (s->comm) {
    ncclResult_t r = ncclCommDestroy(s->comm);
    if (r != ncclSuccess) rc = cuco_export_fail(err, len, "ncclCommDestroy", ncclGetErrorString(r));
  }
  delete s;
  return rc;
}

CUCO_EXPORT_API void* cuco_export_open(const char* id_bytes, int rank, int world, size_t symm_bytes, char* err,
                                       int len) {
  if (err && len > 0) err[0] = 0;
  if (world < 1 || world > CUCO_MAX_RANKS || rank < 0 || rank >= world) {
    cuco_export_fail(err, len, "cuco_export_open", "rank/world out of range (world <= CUCO_MAX_RANKS)");
    return nullptr;
  }
  cuco_export_state* s = new cuco_export_state();
  s->rank = rank;
  s->world = world;
  if (cuco_export_open_steps(s, id_bytes, symm_bytes ? symm_bytes : 1, err, len) != 0) {
    cuco_export_teardown(s, nullptr, 0);  // the first error is already in err
    return nullptr;
  }
  return s;
}

// Another shape: every rank's earlier call is over (first barrier), then this rank's pads and
// buffer are zeroed, and no rank starts the next call before every rank has zeroed (second one).
static int cuco_export_reset(cuco_export_state* s, cudaStream_t stream, char* err, int len) {
  CUCO_X_NCCL(ncclAllReduce(s->fence, s->fence, 1, ncclInt32, ncclSum, s->comm, stream));
  CUCO_X_CUDA(cudaMemsetAsync(s->signals, 0, CUCO_EXPORT_SIGNAL_BYTES, stream));
  CUCO_X_CUDA(cudaMemsetAsync(s->symm, 0, s->symm_cap, stream));
  CUCO_X_NCCL(ncclAllReduce(s->fence, s->fence, 1, ncclInt32, ncclSum, s->comm, stream));
  s->epoch = 0;
  return 0;
}

static cuco_ctx cuco_export_ctx(const cuco_export_state* s, const int64_t* dims, int ndims, const void* const* ins,
                                int nin, void* const* outs, int nout, void* workspace, size_t workspace_bytes,
                                size_t symm_bytes, int num_sms) {
  cuco_ctx c;
  memset(&c, 0, sizeof c);
  c.rank = s->rank;
  c.world = s->world;
  c.num_sms = num_sms;
  c.dtype = CUCO_DTYPE;
  for (int i = 0; i < ndims; ++i) c.dims[i] = dims[i];
  for (int i = 0; i < nin; ++i) c.in[i] = ins[i];
  for (int i = 0; i < nout; ++i) c.out[i] = outs[i];
  c.symm = s->symm;
  c.symm_bytes = symm_bytes;
  c.signals = static_cast<uint64_t*>(s->signals);
  for (int p = 0; p < s->world; ++p) {
    c.peer_symm[p] = s->peer_symm[p];
    c.peer_signals[p] = static_cast<uint64_t*>(s->peer_signals[p]);
  }
  c.workspace = workspace;
  c.workspace_bytes = workspace_bytes;
  c.epoch = s->epoch;
  c.comm = s->dev_ptr;
  c.multimem = nullptr;  // the nccl backend takes the multicast address from the window
  c.host_comm = &s->comm;
  return c;
}

CUCO_EXPORT_API int cuco_export_run(void* h, const int64_t* dims, int ndims, const void* const* ins, int nin,
                                    void* const* outs, int nout, void* workspace, size_t workspace_bytes,
                                    size_t symm_bytes, int num_sms, cudaStream_t stream, char* err, int len) {
  if (err && len > 0) err[0] = 0;
  cuco_export_state* s = static_cast<cuco_export_state*>(h);
  if (!s) return cuco_export_fail(err, len, "cuco_export_run", "no communicator (open it first)");
  if (ndims > CUCO_MAX_DIMS || nin > CUCO_MAX_INPUTS || nout > CUCO_MAX_OUTPUTS || ndims < 0 || nin < 0 || nout < 0)
    return cuco_export_fail(err, len, "cuco_export_run", "more dims, inputs or outputs than cuco_ctx holds");
  if (symm_bytes > s->symm_cap)
    return cuco_export_fail(err, len, "cuco_export_run", "the symmetric buffer is smaller than this call needs");
  int64_t now[CUCO_MAX_DIMS] = {};
  for (int i = 0; i < ndims; ++i) now[i] = dims[i];
  const bool same = memcmp(now, s->last_dims, sizeof now) == 0 && symm_bytes == s->last_symm;
  if (s->called && !same && cuco_export_reset(s, stream, err, len) != 0) return -1;
  memcpy(s->last_dims, now, sizeof now);
  s->last_symm = symm_bytes;
  s->called = true;
  s->epoch += 1;
  cuco_ctx c = cuco_export_ctx(s, dims, ndims, ins, nin, outs, nout, workspace, workspace_bytes, symm_bytes, num_sms);
  const int rc = cuco_run(&c, stream);
  if (rc != 0) {
    if (err && len > 0)
      snprintf(err, len, "cuco_run returned %d (last CUDA error: %s)", rc, cudaGetErrorString(cudaGetLastError()));
    return rc;
  }
  return 0;
}

CUCO_EXPORT_API int cuco_export_close(void* h, char* err, int len) {
  if (err && len > 0) err[0] = 0;
  return h ? cuco_export_teardown(static_cast<cuco_export_state*>(h), err, len) : 0;
}
