// cuco CPU emulator: the run manifest (text, one setting per line) and the shared arena.
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

struct IoSpec {
  int rank, slot;
  size_t nbytes;
  std::string path;
};

struct Manifest {
  int world = 0, num_sms = 1, iterations = 1, dtype = 0;
  double stall_seconds = 3.0;
  int runaway_seconds = 20;  // a thread running this long without yielding is reported as a hang
  int64_t dims[CUCO_MAX_DIMS] = {};
  size_t symm_bytes = 0, workspace_bytes = 0, stack_kib = 64;
  size_t device_memory_bytes = size_t(256) << 20;  // per rank: cudaMalloc past it is refused (exit 7)
  std::vector<IoSpec> inputs, outputs;
};

bool parse_manifest(const char* path, Manifest* m, std::string* err);

// One MAP_SHARED mapping made before fork: the header, then per rank its symmetric buffer,
// signal pad, inputs, outputs and workspace. Every buffer ends where a PROT_NONE guard page
// starts (16-byte aligned start), so a write one element past it faults; a red zone of canary
// bytes (one page, plus the alignment slack before and after the buffer) lies in front of every
// buffer, so a write that jumps a guard page, or lands before a buffer, is found after the run.
struct Arena {
  struct RedZone {
    unsigned char* lo;
    size_t n;
    const char* buf;  // start of the buffer the zone is next to
    size_t buf_n;
    bool after;       // the slack after the buffer's end (else the page and slack before it)
    char name[48];    // that buffer
    char prev[48];    // the buffer before the guard page in front of this zone ("" for the first)
  };
  struct Buf {
    char* ptr = nullptr;
    size_t n = 0;
  };
  struct RankBufs {
    Buf symm, signals, workspace, in[CUCO_MAX_INPUTS], out[CUCO_MAX_OUTPUTS];
  };
  SharedHeader* header = nullptr;
  std::vector<RankBufs> ranks;
  std::vector<CrashRegion> regions;
  std::vector<RedZone> red;
  size_t page = 4096;

  bool build(const Manifest& m, std::string* err);
  void fill_ctx(int rank, const Manifest& m, cuco_ctx* ctx) const;
  void poison_rank(int rank) const;
  // The first changed red-zone byte as one report line ("" when every zone is intact).
  std::string check_red_zones() const;
};

}  // namespace cuco_emu
#endif  // CUCO_EMU_MANIFEST_H_
