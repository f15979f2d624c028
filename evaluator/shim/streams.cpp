// cuco CPU emulator: streams, events and kernel launches.
// A stream is a FIFO queue of operations; only its head runs. Kernel heads of different streams
// run concurrently (their fibers interleave); copies, memsets, event records and host functions
// complete the moment they reach the head. A stream-wait-event op holds its stream until the
// record it captured (the event's latest record at the time of the wait call) has completed.
// The legacy default stream (0) is an ordinary stream here: it does not implicitly synchronise
// with other streams.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <deque>
#include "emu_internal.h"

struct CUstream_st {
  uint32_t magic;
};
struct CUevent_st {
  uint32_t magic;
};

namespace cuco_emu {
namespace {
constexpr uint32_t kStreamMagic = 0x5354524Du, kEventMagic = 0x45564E54u;
constexpr uint64_t kMaxBlocks = 1ull << 20;

struct RecordState {
  bool done = false;
  double ms = 0;
};

struct Op {
  enum Kind : uint8_t { Kernel, Copy, Set, Record, WaitEvent, HostFn, Free } kind;
  bool owns_src = false;  // src is a private snapshot (pageable host source), freed after the copy
  Launch* L = nullptr;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t n = 0;
  int value = 0;
  RecordState* rs = nullptr;
  cudaHostFn_t fn = nullptr;
};

}  // namespace

struct Stream : CUstream_st {
  int id = 0;
  uint64_t enqueued = 0, completed = 0;  // operation counts: an op's number is its position
  bool kernel_running = false;
  std::deque<Op> q;
};

namespace {
struct Event : CUevent_st {
  unsigned flags = 0;
  RecordState* last = nullptr;  // records are never freed: a few per call, and waits keep them
};

std::vector<Stream*> g_streams;
uint64_t g_launch_seq = 0;
cudaError_t g_last_error = cudaSuccess;

double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

Stream* new_stream() {
  Stream* s = new Stream;
  s->magic = kStreamMagic;
  s->id = (int)g_streams.size();
  g_streams.push_back(s);
  return s;
}

Stream* resolve(cudaStream_t h) {
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) {
    if (g_streams.empty()) new_stream();
    return g_streams[0];
  }
  return h->magic == kStreamMagic ? static_cast<Stream*>(h) : nullptr;
}

Event* resolve(cudaEvent_t h) { return h && h->magic == kEventMagic ? static_cast<Event*>(h) : nullptr; }

void execute(Op& op) {
  switch (op.kind) {
    case Op::Copy:
      memmove(op.dst, op.src, op.n);
      if (op.owns_src) free(const_cast<void*>(op.src));
      break;
    case Op::Set: memset(op.dst, op.value, op.n); break;
    case Op::Record:
      op.rs->done = true;
      op.rs->ms = now_ms();
      break;
    case Op::HostFn: op.fn(op.dst); break;
    case Op::Free: free_device(op.dst); break;
    default: break;
  }
}

// Run stream s forward as far as it can go; true if anything changed.
bool advance_one(Stream* s) {
  bool changed = false;
  while (!s->q.empty()) {
    Op& op = s->q.front();
    if (op.kind == Op::Kernel) {
      if (!s->kernel_running) {
        s->kernel_running = true;
        activate_launch(op.L);
        changed = true;
      }
      return changed;
    }
    if (op.kind == Op::WaitEvent && op.rs && !op.rs->done) return changed;
    execute(op);
    s->q.pop_front();
    ++s->completed;
    note_progress();
    changed = true;
  }
  return changed;
}

cudaError_t enqueue(cudaStream_t h, const Op& op) {
  require_host("a stream operation");
  Stream* s = resolve(h);
  if (!s) return set_error(cudaErrorInvalidResourceHandle);
  s->q.push_back(op);
  ++s->enqueued;
  mark_streams_dirty();
  return cudaSuccess;
}

bool host_stack_holds(const void* p) {
  const Fiber* f = current();
  return f && !f->block && f->stack && (const char*)p >= f->stack && (const char*)p < f->stack + f->stack_len;
}

struct OpWait {
  Stream* s;
  uint64_t upto;
};
bool op_done(void* w) {
  const OpWait* ow = static_cast<OpWait*>(w);
  return ow->s->completed >= ow->upto;
}

bool stream_idle(void* s) { return static_cast<Stream*>(s)->q.empty(); }
bool all_idle(void*) {
  for (Stream* s : g_streams)
    if (!s->q.empty()) return false;
  return true;
}
bool record_done(void* r) { return !r || static_cast<RecordState*>(r)->done; }
}  // namespace

void advance_streams() {
  while (true) {
    bool changed = false;
    for (Stream* s : g_streams) changed |= advance_one(s);
    if (!changed) return;
  }
}

int unjoined_stream(cudaStream_t joined) {
  const Stream* j = resolve(joined);
  for (const Stream* s : g_streams)
    if (s != j && !s->q.empty()) return s->id;
  return -1;
}

int stream_id(cudaStream_t h) {
  const Stream* s = resolve(h);
  return s ? s->id : -1;
}

void kernel_done(Launch* L) {
  Stream* s = L->stream;
  trace_launch_done(L, s->id);
  s->q.pop_front();
  ++s->completed;
  s->kernel_running = false;
  mark_streams_dirty();
}

void require_host(const char* what) {
  Fiber* f = current();
  if (f && f->block) {
    char buf[160];
    snprintf(buf, sizeof buf, "%s called from device code", what);
    not_emulatable(buf);
  }
}

void host_wait(const char* what, long slot, bool (*done)(void*), void* arg) {
  require_host(what);
  while (!done(arg)) cuco_emu_block_wait(what, slot, 0, 1);
}

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) g_last_error = e;
  return e;
}

cudaError_t launch(dim3 g, dim3 b, size_t smem, cudaStream_t h, void (*thunk)(void*), void (*del)(void*), void* pack) {
  require_host("a kernel launch (dynamic parallelism)");
  const uint64_t threads = (uint64_t)b.x * b.y * b.z, blocks = (uint64_t)g.x * g.y * g.z;
  cudaError_t err = cudaSuccess;
  if (threads == 0 || threads > 1024 || b.z > 64 || blocks == 0 || g.y > 65535 || g.z > 65535)
    err = cudaErrorInvalidConfiguration;
  else if (smem > 232448)
    err = cudaErrorInvalidValue;
  else if (!resolve(h))
    err = cudaErrorInvalidResourceHandle;
  if (err != cudaSuccess) {
    del(pack);
    return set_error(err);
  }
  if (blocks > kMaxBlocks) not_emulatable("a grid of more than 2^20 blocks");
  Launch* L = new Launch;
  L->seq = ++g_launch_seq;
  L->grid = g;
  L->block = b;
  L->smem = smem;
  L->nthreads = (unsigned)threads;
  L->nblocks = blocks;
  L->thunk = thunk;
  L->del = del;
  L->pack = pack;
  L->stream = resolve(h);
  Op op{Op::Kernel};
  op.L = L;
  return enqueue(h, op);
}
}  // namespace cuco_emu

using cuco_emu::Event;
using cuco_emu::Op;
using cuco_emu::resolve;
using cuco_emu::set_error;

cudaError_t cudaGetLastError() {
  const cudaError_t e = cuco_emu::g_last_error;
  cuco_emu::g_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return cuco_emu::g_last_error; }

cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  if (cuco_emu::g_streams.empty()) cuco_emu::new_stream();  // stream 0 is the default stream
  *s = cuco_emu::new_stream();
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int) {
  return cudaStreamCreateWithFlags(s, flags);
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  // CUDA lets queued work finish after destroy; the stream object simply stays alive here.
  return resolve(s) ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaStreamSynchronize(cudaStream_t h) {
  cuco_emu::Stream* s = resolve(h);
  if (!s) return set_error(cudaErrorInvalidResourceHandle);
  cuco_emu::host_wait("cudaStreamSynchronize", s->id, cuco_emu::stream_idle, s);
  return cudaSuccess;
}
// Queries yield once before answering "not ready", so a host loop polling them lets kernels run.
cudaError_t cudaStreamQuery(cudaStream_t h) {
  cuco_emu::Stream* s = resolve(h);
  if (!s) return set_error(cudaErrorInvalidResourceHandle);
  if (!s->q.empty()) cuco_emu_block_wait("cudaStreamQuery", s->id, 0, 1);
  return s->q.empty() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaDeviceSynchronize() {
  cuco_emu::host_wait("cudaDeviceSynchronize", -1, cuco_emu::all_idle, nullptr);
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  Event* ev = resolve(e);
  if (!ev) return set_error(cudaErrorInvalidResourceHandle);
  Op op{Op::WaitEvent};
  op.rs = ev->last;
  return cuco_emu::enqueue(s, op);
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  Op op{Op::HostFn};
  op.fn = fn;
  op.dst = data;
  return cuco_emu::enqueue(s, op);
}

cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  Event* ev = new Event;
  ev->magic = cuco_emu::kEventMagic;
  ev->flags = flags;
  *e = ev;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  return resolve(e) ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return cudaEventRecordWithFlags(e, s, 0); }
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned) {
  Event* ev = resolve(e);
  if (!ev) return set_error(cudaErrorInvalidResourceHandle);
  Op op{Op::Record};
  op.rs = new cuco_emu::RecordState;
  const cudaError_t err = cuco_emu::enqueue(s, op);
  if (err == cudaSuccess) ev->last = op.rs;
  return err;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  Event* ev = resolve(e);
  if (!ev) return set_error(cudaErrorInvalidResourceHandle);
  cuco_emu::host_wait("cudaEventSynchronize", -1, cuco_emu::record_done, ev->last);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  Event* ev = resolve(e);
  if (!ev) return set_error(cudaErrorInvalidResourceHandle);
  if (!cuco_emu::record_done(ev->last)) cuco_emu_block_wait("cudaEventQuery", -1, 0, 1);
  return cuco_emu::record_done(ev->last) ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  Event *ea = resolve(a), *eb = resolve(b);
  if (!ea || !eb || (ea->flags | eb->flags) & cudaEventDisableTiming) return set_error(cudaErrorInvalidResourceHandle);
  if (!ea->last || !eb->last || !ea->last->done || !eb->last->done) return cudaErrorNotReady;
  *ms = (float)(eb->last->ms - ea->last->ms);  // wall time of the emulator: meaningless as a GPU time
  return cudaSuccess;
}

// CUDA semantics for pageable host memory, which is what a candidate's host variables are:
// a copy from the host captures the source when called (it is staged), and a copy to the host
// returns only when it is done. Both matter: a candidate may pass the address of a local.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  if ((unsigned)kind > cudaMemcpyDefault) return set_error(cudaErrorInvalidMemcpyDirection);
  if (n == 0) return cudaSuccess;
  Op op{Op::Copy};
  op.dst = dst;
  op.src = src;
  op.n = n;
  cuco_emu::trace_copy(dst, src, n, cuco_emu::stream_id(s));
  const bool from_host = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost ||
                         (kind == cudaMemcpyDefault && cuco_emu::host_stack_holds(src));
  if (from_host) {
    void* copy = malloc(n);
    if (!copy) return set_error(cudaErrorMemoryAllocation);
    memcpy(copy, src, n);
    op.src = copy;
    op.owns_src = true;
  }
  const cudaError_t err = cuco_emu::enqueue(s, op);
  if (err != cudaSuccess || kind != cudaMemcpyDeviceToHost) return err;
  cuco_emu::OpWait w{resolve(s), resolve(s)->enqueued};
  cuco_emu::host_wait("cudaMemcpyAsync to host", w.s->id, cuco_emu::op_done, &w);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  Op op{Op::Set};
  op.dst = p;
  op.value = value;
  op.n = n;
  return cuco_emu::enqueue(s, op);
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  if (!p) return cudaSuccess;
  Op op{Op::Free};
  op.dst = p;
  return cuco_emu::enqueue(s, op);
}
// Synchronous copies and memsets behave as on the legacy default stream with blocking
// streams: they wait for all queued work first (conservative).
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if ((unsigned)kind > cudaMemcpyDefault) return set_error(cudaErrorInvalidMemcpyDirection);
  cudaDeviceSynchronize();
  cuco_emu::trace_copy(dst, src, n, -1);
  memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t n) {
  cudaDeviceSynchronize();
  memset(p, value, n);
  return cudaSuccess;
}
