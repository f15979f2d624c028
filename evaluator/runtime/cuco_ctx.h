// cuco device contract: the context one rank's host entry receives.
//
//   extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream);
//
// The harness (never the candidate) fills the context: inputs, outputs, symmetric buffers and
// signal pads. `cuco_run` launches one rank's work on `stream` (side streams must join back
// into it before returning) and returns 0, or a non-zero code on a launch error.
// The struct is plain data so kernels can take it by value (~720 bytes, under the 4 KiB limit).
#ifndef CUCO_CTX_H_
#define CUCO_CTX_H_
#include <stddef.h>
#include <stdint.h>

#define CUCO_MAX_RANKS 32
#define CUCO_MAX_DIMS 8
#define CUCO_MAX_INPUTS 4
#define CUCO_MAX_OUTPUTS 2

// Signal pad layout (uint64 slots). Slots [0, CUCO_USER_SIGNALS) belong to the candidate;
// the rest are reserved for cuco_barrier (flags per barrier index and peer, then one
// arrival counter per barrier index that only the owning CTA of this rank touches).
#define CUCO_USER_SIGNALS 32768
#define CUCO_MAX_BARRIERS 256
#define CUCO_BAR_FLAGS CUCO_USER_SIGNALS
#define CUCO_BAR_COUNTS (CUCO_BAR_FLAGS + CUCO_MAX_BARRIERS * CUCO_MAX_RANKS)
// GIN signals (cuco_gin_put / cuco_gin_wait) on the symm and cpu backends; the nccl backend
// uses NCCL's own GIN signals (ginSignalCount >= CUCO_GIN_SIGNALS) and leaves this region unused.
#define CUCO_GIN_SIGNALS 4096
#define CUCO_GIN_CONTEXTS 4
#define CUCO_GIN_BASE (CUCO_BAR_COUNTS + CUCO_MAX_BARRIERS)
#define CUCO_SIGNAL_SLOTS (CUCO_GIN_BASE + CUCO_GIN_SIGNALS)
// The enter signals (cuco_enter.h) use the last CUCO_MAX_RANKS user slots and GIN signals, one per
// source rank.
#define CUCO_ENTER_BASE (CUCO_USER_SIGNALS - CUCO_MAX_RANKS)
#define CUCO_GIN_ENTER_BASE (CUCO_GIN_SIGNALS - CUCO_MAX_RANKS)
// Barrier indices from here on belong to the library collectives (cuco_coll_*).
#define CUCO_COLL_BARRIER 240

// Element type codes (CUCO_DTYPE at build time; ctx.dtype at run time).
#define CUCO_F32 0
#define CUCO_F16 1
#define CUCO_BF16 2

typedef struct cuco_ctx {
  int32_t rank;     // this rank, 0..world-1
  int32_t world;    // number of ranks
  int32_t num_sms;  // SMs this rank may occupy: size persistent grids from it
  int32_t dtype;    // CUCO_F32 / CUCO_F16 / CUCO_BF16
  int64_t dims[CUCO_MAX_DIMS];         // pattern-defined global problem dimensions
  const void* in[CUCO_MAX_INPUTS];     // this rank's inputs (device memory)
  void* out[CUCO_MAX_OUTPUTS];         // this rank's outputs (poisoned before every run)
  void* symm;                          // this rank's symmetric buffer
  size_t symm_bytes;                   // bytes of each rank's symmetric buffer
  void* peer_symm[CUCO_MAX_RANKS];     // every rank's symmetric buffer (symm/cpu backends)
  uint64_t* signals;                   // this rank's signal pad (CUCO_SIGNAL_SLOTS slots)
  uint64_t* peer_signals[CUCO_MAX_RANKS];
  void* workspace;                     // private scratch (device memory)
  size_t workspace_bytes;
  uint64_t epoch;                      // 1, 2, 3, ... per call, equal on all ranks
  const void* comm;                    // backend handle in device memory (nccl), else NULL
  void* multimem;                      // multicast address of the symmetric buffers (symm on
                                       // NVSwitch), else NULL: cuco_mm_* fall back to peer loops
  const void* host_comm;               // host-side library communicator (ncclComm_t*), else NULL
} cuco_ctx;

#endif  // CUCO_CTX_H_
