// GIN semantics of the cuco comm API: GPU-initiated one-sided puts with remote signals.
//
//   cuco_gin_put(c, gctx, peer, dst_offset, src_offset, bytes, slot, inc)
//     ONE thread posts a put of `bytes` from this rank's symmetric buffer at src_offset into
//     peer's symmetric buffer at dst_offset; once the data has landed, `inc` is added to the
//     peer's GIN signal `slot` (slot < 0: no signal). Asynchronous: the source must not change
//     before cuco_gin_flush, and the destination may be read only after waiting on the signal.
//   cuco_gin_signal(c, gctx, peer, slot, inc)   a signal alone, ordered after this context's
//                                      earlier puts to that peer (ncclGin::signal).
//   cuco_gin_wait(c, slot, at_least)   this thread waits until its own GIN signal reaches at_least.
//   cuco_gin_flush(c, gctx)            every put this rank posted on gctx has consumed its source.
//
// nccl: ncclGin put with a strong signal add (the signal implies every earlier put on that context
// to that peer has settled), waitSignal, flush. symm: the posting thread copies, fences and signals
// (no NIC on one node; same semantics). cpu: a faithful emulation of the asynchrony -- puts sit in
// a queue and are delivered one at a time only when nothing in any rank can run (as late as
// the semantics allow: when no rank can get anywhere); ops to one peer on one context keep their
// order, others land newest first; flush snapshots the sources but still delivers late. So a
// consumer that reads before waiting, or a producer that reuses a source before flushing, fails
// emulation. In the calls that follow back to back (CUCO_EMU_FENCED_CALLS) puts land at once
// instead, so one that overwrites a peer still in the previous call fails too.
#ifndef CUCO_GIN_H_
#define CUCO_GIN_H_

#if defined(CUCO_COMM_NCCL)
// Not inlined: every ncclGin call inlines all of NCCL's GIN backends (GDAKI and proxy), which made a
// GIN candidate's nvcc build 2.4x slower (16.8 s vs 6.9 s for an 8-kernel MoE source, nvcc 13.0);
// a call costs a few cycles beside a network put.
static __device__ __noinline__ void cuco_gin_put(const cuco_ctx& c, int gctx, int peer, size_t dst_offset,
                                                    size_t src_offset, size_t bytes, int slot, uint64_t inc) {
  const cuco_nccl_comm& nc = cuco_nccl(c);
  ncclGin gin(nc.dev, gctx);
  if (slot >= 0)
    gin.put(ncclTeamWorld(nc.dev), peer, nc.symm_win, dst_offset, nc.symm_win, src_offset, bytes,
            ncclGin_StrongSignalAdd{(ncclGinSignal_t)slot, inc});
  else
    gin.put(ncclTeamWorld(nc.dev), peer, nc.symm_win, dst_offset, nc.symm_win, src_offset, bytes);
}
static __device__ __noinline__ void cuco_gin_signal(const cuco_ctx& c, int gctx, int peer, int slot, uint64_t inc) {
  const cuco_nccl_comm& nc = cuco_nccl(c);
  ncclGin gin(nc.dev, gctx);
  gin.signal(ncclTeamWorld(nc.dev), peer, ncclGin_StrongSignalAdd{(ncclGinSignal_t)slot, inc});
}
static __device__ __noinline__ void cuco_gin_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  ncclGin gin(cuco_nccl(c).dev, 0);
  gin.waitSignal(ncclCoopThread(), (ncclGinSignal_t)slot, at_least);
}
static __device__ __noinline__ void cuco_gin_flush(const cuco_ctx& c, int gctx) {
  ncclGin gin(cuco_nccl(c).dev, gctx);
  gin.flush(ncclCoopThread());
}
// The API's own protocols (cuco_enter.h); only the emulator traces, so here they are the public calls.
static __device__ __forceinline__ void cuco_internal_gin_signal(const cuco_ctx& c, int gctx, int peer, int slot,
                                                                uint64_t inc) {
  cuco_gin_signal(c, gctx, peer, slot, inc);
}
static __device__ __forceinline__ void cuco_internal_gin_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_gin_wait(c, slot, at_least);
}

#elif defined(CUCO_COMM_SYMM)
static __device__ __forceinline__ void cuco_gin_put(const cuco_ctx& c, int, int peer, size_t dst_offset,
                                                    size_t src_offset, size_t bytes, int slot, uint64_t inc) {
  cuco_copy_group(static_cast<char*>(cuco_peer(c, peer)) + dst_offset,
                  static_cast<const char*>(c.symm) + src_offset, bytes, 0, 1);
  if (slot >= 0) cuco_signal_add(c, peer, CUCO_GIN_BASE + slot, inc);
}
static __device__ __forceinline__ void cuco_gin_signal(const cuco_ctx& c, int, int peer, int slot, uint64_t inc) {
  cuco_signal_add(c, peer, CUCO_GIN_BASE + slot, inc);
}
static __device__ __forceinline__ void cuco_gin_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_wait(c, CUCO_GIN_BASE + slot, at_least);
}
static __device__ __forceinline__ void cuco_gin_flush(const cuco_ctx&, int) {}
static __device__ __forceinline__ void cuco_internal_gin_signal(const cuco_ctx& c, int, int peer, int slot,
                                                                uint64_t inc) {
  cuco_internal_signal_add(c, peer, CUCO_GIN_BASE + slot, inc);
}
static __device__ __forceinline__ void cuco_internal_gin_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_internal_wait(c, CUCO_GIN_BASE + slot, at_least);
}

#else  // CUCO_COMM_CPU
#include <stdlib.h>
#include <string.h>
#define CUCO_GIN_QUEUE 4096
extern "C" void cuco_emu_set_progress_hook(int (*hook)(void));

struct cuco_gin_op {
  char* dst;
  const char* src;
  char* staged;  // snapshot of the source taken by a flush, delivered instead of src
  size_t bytes;
  uint64_t* signal;
  uint64_t inc;
  int gctx;
  int peer;
  bool done;  // delivered (ops to different peers or contexts may land out of posting order)
};
static cuco_gin_op cuco_gin_queue[CUCO_GIN_QUEUE];
static size_t cuco_gin_head, cuco_gin_tail;  // ops [head, tail) modulo the size, some already done

static void cuco_gin_land(cuco_gin_op& op) {
  memcpy(op.dst, op.staged ? op.staged : op.src, op.bytes);
  free(op.staged);
  op.staged = nullptr;
  op.done = true;
  if (op.signal) {
    cuco_fence_system();
    cuco_add_release(op.signal, op.inc);
  }
  while (cuco_gin_head != cuco_gin_tail && cuco_gin_queue[cuco_gin_head % CUCO_GIN_QUEUE].done) ++cuco_gin_head;
}

// The "NIC": ops to one peer on one context land in posting order (a signal implies the puts before
// it); across peers and contexts nothing is ordered, so the adversary lands the most recently posted
// op that is first in its (context, peer) order. Returns 1 if it delivered one.
static int cuco_gin_deliver_one(void) {
  for (size_t i = cuco_gin_tail; i-- != cuco_gin_head;) {
    cuco_gin_op& op = cuco_gin_queue[i % CUCO_GIN_QUEUE];
    if (op.done) continue;
    bool first = true;
    for (size_t j = cuco_gin_head; j != i && first; ++j) {
      const cuco_gin_op& o = cuco_gin_queue[j % CUCO_GIN_QUEUE];
      first = o.done || o.peer != op.peer || o.gctx != op.gctx;
    }
    if (first) {
      cuco_gin_land(op);
      return 1;
    }
  }
  return 0;
}
// Queue a put (bytes 0: a signal alone); the public calls below trace it first.
static void cuco_internal_gin_post(const cuco_ctx& c, int gctx, int peer, size_t dst_offset, size_t src_offset,
                                   size_t bytes, int slot, uint64_t inc) {
  static bool hooked = false;
  if (!hooked) cuco_emu_set_progress_hook(cuco_gin_deliver_one), hooked = true;
  if (cuco_gin_tail - cuco_gin_head == CUCO_GIN_QUEUE)  // a full queue progresses: the oldest op lands
    cuco_gin_land(cuco_gin_queue[cuco_gin_head % CUCO_GIN_QUEUE]);
  cuco_gin_op& op = cuco_gin_queue[cuco_gin_tail++ % CUCO_GIN_QUEUE];
  // the NIC addresses the peer itself: no cuco_peer (a peer pointer the code took) in the trace
  op = cuco_gin_op{static_cast<char*>(c.peer_symm[peer]) + dst_offset, static_cast<const char*>(c.symm) + src_offset,
                   nullptr, bytes, slot >= 0 ? cuco_peer_signals(c, peer) + CUCO_GIN_BASE + slot : nullptr, inc, gctx,
                   peer, false};
  if (c.epoch > CUCO_EMU_FENCED_CALLS)  // calls back to back: land at once, after what went before to that peer
    for (size_t i = cuco_gin_head; i != cuco_gin_tail; ++i) {
      cuco_gin_op& o = cuco_gin_queue[i % CUCO_GIN_QUEUE];
      if (!o.done && o.peer == peer && o.gctx == gctx) cuco_gin_land(o);
    }
}
static void cuco_gin_put(const cuco_ctx& c, int gctx, int peer, size_t dst_offset, size_t src_offset,
                         size_t bytes, int slot, uint64_t inc) {
  CUCO_EMU_TRACE(bytes ? CUCO_EMU_TR_GIN_PUT : CUCO_EMU_TR_GIN_SIGNAL, bytes, slot);  // slot < 0: none
  cuco_internal_gin_post(c, gctx, peer, dst_offset, src_offset, bytes, slot, inc);
}
static void cuco_gin_signal(const cuco_ctx& c, int gctx, int peer, int slot, uint64_t inc) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_GIN_SIGNAL, 0, slot);
  cuco_internal_gin_post(c, gctx, peer, 0, 0, 0, slot, inc);  // an empty put: delivered late, in order
}
static void cuco_gin_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  CUCO_EMU_TRACE(CUCO_EMU_TR_GIN_WAIT, 0, slot);
  cuco_internal_wait(c, CUCO_GIN_BASE + slot, at_least);
}
static void cuco_internal_gin_signal(const cuco_ctx& c, int gctx, int peer, int slot, uint64_t inc) {
  cuco_internal_gin_post(c, gctx, peer, 0, 0, 0, slot, inc);
}
static void cuco_internal_gin_wait(const cuco_ctx& c, int slot, uint64_t at_least) {
  cuco_internal_wait(c, CUCO_GIN_BASE + slot, at_least);
}
static void cuco_gin_flush(const cuco_ctx&, int gctx) {
  for (size_t i = cuco_gin_head; i != cuco_gin_tail; ++i) {
    cuco_gin_op& op = cuco_gin_queue[i % CUCO_GIN_QUEUE];
    if (op.gctx == gctx && !op.done && !op.staged) {
      op.staged = static_cast<char*>(malloc(op.bytes ? op.bytes : 1));
      memcpy(op.staged, op.src, op.bytes);
    }
  }
}
#endif

#endif  // CUCO_GIN_H_
