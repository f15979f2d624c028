// cuco CPU emulator: the run manifest (text, one setting per line) and the address-space arena.
#ifndef CUCO_EMU_MANIFEST_H_
#define CUCO_EMU_MANIFEST_H_
#include <stddef.h>
#include <stdint.h>
#include <string>
#include <vector>
#include "cuco_ctx.h"
#include "emu_internal.h"
#include "harness.h"

namespace cuco_emu {

// One input or output buffer of one rank for one call (iteration), inside the I/O file the
// evaluator created: its region starts at `offset` (page-aligned) and holds a red zone (canary
// bytes, at least a page) followed by the buffer, which ends 16-byte aligned at the region's end.
struct IoSlot {
  int rank = 0, iter = 0, slot = 0;
  bool output = false;
  size_t nbytes = 0;
  uint64_t offset = 0;
  size_t region = 0;  // bytes of the region (a multiple of the page size)
};

struct Manifest {
  int world = 0, num_sms = 1, iterations = 1, dtype = 0;
  double stall_seconds = 3.0;
  int runaway_seconds = 20;  // a thread running this long without yielding is reported as a hang
  int64_t dims[CUCO_MAX_DIMS] = {};
  size_t symm_bytes = 0, workspace_bytes = 0, stack_kib = 64;
  size_t device_memory_bytes = size_t(256) << 20;  // per rank: cudaMalloc past it is refused (exit 7)
  int perturb_tile = 0;  // 1, 2: every GEMM tile's accumulators get noise (the evaluator's dependence probe)
  std::vector<IoSlot> io;
  struct Trace {
    int rank;
    uint64_t offset;
    size_t bytes;
  };
  std::vector<Trace> traces;  // where each rank writes what it was observed to do
};

// The manifest comes from a sealed file descriptor the evaluator made (never a path).
bool read_manifest_fd(int fd, Manifest* m, std::string* err);

// Every rank's buffers at fixed addresses inside ONE reserved range, identical in every rank's
// process. Shared (mapped before fork): the harness header and every rank's symmetric buffer and
// signal pad. Private (mapped by the owner only, after fork): its workspace and its inputs and
// outputs, one region per call, from the evaluator's I/O file. In any other rank the private
// ranges stay PROT_NONE, so touching another rank's memory faults and the crash report names
// whose memory it was: peers are reachable only through the comm API. Each buffer ends at a
// PROT_NONE guard page and starts after a red zone of canary bytes checked after every call.
struct Arena {
  struct RedZone {
    unsigned char* lo;
    size_t n;
    const char* buf;  // start of the buffer the zone is next to
    size_t buf_n;
    bool after;       // the slack after the buffer's end (else the page and slack before it)
    int owner;        // -1: shared (checked by every rank)
    char name[64];
  };
  struct Buf {
    char* ptr = nullptr;  // the buffer
    size_t n = 0;
    char* region = nullptr;  // red zone + buffer, page-aligned
    size_t region_len = 0;
  };
  struct RankBufs {
    Buf symm, signals, workspace;
    std::vector<Buf> in[CUCO_MAX_INPUTS], out[CUCO_MAX_OUTPUTS];  // one per call
  };
  SharedHeader* header = nullptr;
  std::vector<RankBufs> ranks;
  char* trace = nullptr;  // this rank's trace region (after map_private)
  size_t trace_bytes = 0;
  std::vector<CrashRegion> regions;
  std::vector<RedZone> red;
  size_t page = 4096;

  bool reserve_and_share(const Manifest& m, std::string* err);  // before fork
  bool map_private(int rank, const Manifest& m, int io_fd, std::string* err);  // in rank `rank`'s process
  // Call `it` (1-based) of `rank`: its inputs readable, its outputs writable, every other call's
  // buffers inaccessible; ctx.in/out point at this call's buffers.
  void enter_call(int rank, int it, const Manifest& m, cuco_ctx* ctx) const;
  void leave_call(int rank, int it, const Manifest& m) const;
  void fill_ctx(int rank, const Manifest& m, cuco_ctx* ctx) const;
  void poison_rank(int rank) const;  // symmetric buffer and workspace (outputs arrive poisoned)
  void poison_workspace(int rank) const;  // the private workspace alone (calls after the first)
  // The first changed red-zone byte this rank can see, as one report line ("" when intact).
  std::string check_red_zones(int rank) const;
};

}  // namespace cuco_emu
#endif  // CUCO_EMU_MANIFEST_H_
