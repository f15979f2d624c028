// cuco CPU emulator: what the candidate's code was observed to do, for the observed design point.
//
// The comm API's CPU implementation (runtime/cuco_comm.h, cuco_gin.h, cuco_multimem.h,
// cuco_coll.h), the GEMM tile (cuco_gemm.h) and the shim's own copies report here: which
// transfers, signals, waits and barriers ran with how many bytes, which CTAs of which launch
// issued communication and which ran tensor-core tiles, which streams kernels ran on. At the end
// the harness writes a summary ("key value" lines) into this rank's trace region of the
// evaluator's I/O file. Candidates cannot name any of this (the guard refuses cuco_emu* names);
// one that corrupts the harness's memory can only fail itself, since the evaluator cross-checks
// the summary against what it knows (evaluator/observed_point.py).
#include <stdio.h>
#include <string.h>
#include <algorithm>
#include <cmath>
#include <unordered_set>
#include "cuco_ctx.h"
#include "emu_internal.h"

namespace cuco_emu {
namespace {

constexpr int kKinds = CUCO_EMU_TR_KINDS;
const char* const kNames[kKinds] = {"put_thread", "put_warp", "put_cta", "signal", "wait", "barrier",
                                    "gin_put", "gin_signal", "gin_wait", "mm_reduce", "mm_store", "coll",
                                    "mma", "peer", "ce_copy", "enter", "enter_wait"};

struct Totals {
  unsigned long long calls[kKinds] = {}, bytes[kKinds] = {}, max_bytes[kKinds] = {};
  unsigned long long launches = 0, side_launches = 0, fused_launches = 0, comm_launches = 0, mma_launches = 0;
  unsigned long long max_comm_blocks = 0, max_xfer_blocks = 0, max_mma_blocks = 0, max_issuers_per_warp = 0, max_issuing_warps = 0;
  unsigned long long side_copies = 0, side_colls = 0;
  std::unordered_set<long> wait_slots;
  int main_stream = 0;
};
Totals T;

struct PeerRange {
  uintptr_t lo, hi;
};
PeerRange g_peers[CUCO_MAX_RANKS];
int g_npeers = 0;

bool is_comm(int kind) {
  return kind != CUCO_EMU_TR_MMA && kind != CUCO_EMU_TR_WAIT && kind != CUCO_EMU_TR_ENTER &&
         kind != CUCO_EMU_TR_ENTER_WAIT;
}
bool is_transfer(int kind) {
  return kind <= CUCO_EMU_TR_PUT_CTA || kind == CUCO_EMU_TR_GIN_PUT || kind == CUCO_EMU_TR_MM_REDUCE ||
         kind == CUCO_EMU_TR_MM_STORE;
}

void note_block(Fiber* f, int kind) {
  Block* b = f->block;
  Launch* L = b->L;
  if (kind == CUCO_EMU_TR_MMA) {
    if (!b->did_mma) b->did_mma = 1, ++L->mma_blocks;
    return;
  }
  if (!is_comm(kind)) return;
  if (!b->did_comm) b->did_comm = 1, ++L->comm_blocks;
  if (!is_transfer(kind)) return;
  if (!b->did_xfer) b->did_xfer = 1, ++L->xfer_blocks;
  // who issues transfers: threads per warp, warps per block (the issuer dimension)
  const unsigned w = f->linear / 32, lane = f->linear % 32;
  if (!b->issuers) b->issuers = new uint32_t[(b->nthreads + 31) / 32]();
  b->issuers[w] |= 1u << lane;
}
// The call-entry protocol (runtime/cuco_enter.h) owns the last CUCO_MAX_RANKS pad and GIN slots. A
// plain signal or wait there is the design's synchronisation hidden from its observed point, and a
// second announcement of one call makes "peer entered" mean something else: both are refused.
int g_rank = -1, g_call = 0;
unsigned long long g_entered[CUCO_MAX_RANKS] = {};  // announcements this rank sent to each peer

void check_reserved_slots(int kind, long slot) {
  const bool pad = kind == CUCO_EMU_TR_SIGNAL || kind == CUCO_EMU_TR_WAIT;
  const bool gin = kind == CUCO_EMU_TR_GIN_SIGNAL || kind == CUCO_EMU_TR_GIN_PUT || kind == CUCO_EMU_TR_GIN_WAIT;
  // Past the user slots lie cuco_barrier's flags and the GIN signals (cuco_ctx.h), which only the
  // runtime's untraced internals touch: a plain signal there is a barrier or GIN signal in disguise.
  if (pad && (slot < 0 || slot >= CUCO_USER_SIGNALS))
    fail(kExitContract, "contract: rank %d, call %d: %s on signal-pad slot %ld, past the candidate's slots, "
         "which are reserved for cuco_barrier and the GIN signals; use slots 0 .. CUCO_ENTER_BASE - 1 for your "
         "own signals, and cuco_barrier / cuco_gin_* for those", g_rank, g_call, kNames[kind], slot);
  // A GIN wait below slot 0 would read the barrier region beneath the GIN signals (a put or signal
  // with slot < 0 carries no signal).
  if (kind == CUCO_EMU_TR_GIN_WAIT && slot < 0)
    fail(kExitContract, "contract: rank %d, call %d: gin_wait on GIN slot %ld; GIN slots run from 0 to "
         "CUCO_GIN_ENTER_BASE - 1", g_rank, g_call, slot);
  if ((pad && slot >= CUCO_ENTER_BASE) || (gin && slot >= CUCO_GIN_ENTER_BASE))
    fail(kExitContract, "contract: rank %d, call %d: %s on %s slot %ld, which is reserved for the call-entry "
         "signals; use cuco_enter / cuco_wait_entered (cuco_enter.h) for those, and slots below %s for your own",
         g_rank, g_call, kNames[kind], pad ? "signal-pad" : "GIN", slot,
         pad ? "CUCO_ENTER_BASE" : "CUCO_GIN_ENTER_BASE");
}

void count_enter(long peer, long from) {
  if (from != g_rank || peer < 0 || peer >= CUCO_MAX_RANKS || peer == g_rank)
    fail(kExitContract, "contract: rank %d, call %d: an enter signal for rank %ld sent to rank %ld; call "
         "cuco_enter with the ctx the harness passed", g_rank, g_call, from, peer);
  if (++g_entered[peer] > (unsigned long long)g_call)
    fail(kExitContract, "contract: rank %d announced call %d to rank %ld more than once; call cuco_enter, "
         "cuco_gin_enter or cuco_ce_enter once per call, at its start", g_rank, g_call, peer);
}
}  // namespace

void trace_set_rank(int rank) { g_rank = rank; }
void trace_begin_call(int call) { g_call = call; }

void trace_block_done(Block* b) {
  if (!b->issuers) return;
  unsigned long long warps = 0;
  for (unsigned w = 0; w < (b->nthreads + 31) / 32; ++w) {
    const unsigned n = (unsigned)__builtin_popcount(b->issuers[w]);
    if (n) ++warps;
    T.max_issuers_per_warp = std::max<unsigned long long>(T.max_issuers_per_warp, n);
  }
  T.max_issuing_warps = std::max(T.max_issuing_warps, warps);
  delete[] b->issuers;
  b->issuers = nullptr;
}

void trace_launch_done(Launch* L, int stream_id) {
  ++T.launches;
  if (stream_id != T.main_stream) ++T.side_launches;
  if (L->comm_blocks) ++T.comm_launches;
  if (L->mma_blocks) ++T.mma_launches;
  if (L->xfer_blocks && L->mma_blocks) ++T.fused_launches;  // moved data and ran tiles in one launch
  T.max_comm_blocks = std::max<unsigned long long>(T.max_comm_blocks, L->comm_blocks);
  T.max_xfer_blocks = std::max<unsigned long long>(T.max_xfer_blocks, L->xfer_blocks);
  T.max_mma_blocks = std::max<unsigned long long>(T.max_mma_blocks, L->mma_blocks);
}

void trace_set_main_stream(int id) { T.main_stream = id; }

// The dependence probe: in a run the evaluator marks (manifest `perturb_tile 1` or `2`), every
// finished tile's accumulators get large, finite noise of varied size, positive in mode 1 (noise
// from several ranks or tiles summed into one output cannot cancel) and of random sign in mode 2
// (a normalisation cannot scale it away); the evaluator runs both. So every output that depends on a
// tile's result changes, and outputs computed some other way (a scalar loop beside a decoy tile
// whose result is dropped or multiplied by zero) do not. The evaluator credits tile FLOPs only
// up to the share of the outputs that changed (evaluator/emulate.py).
static int g_perturb = 0;
static unsigned long long g_tile_results = 0;
void trace_set_perturb(int mode) { g_perturb = mode; }

static inline unsigned long long mix(unsigned long long x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void trace_set_peer_ranges(const void* const* lo, const size_t* n, int count) {
  g_npeers = std::min(count, (int)CUCO_MAX_RANKS);
  for (int i = 0; i < g_npeers; ++i) g_peers[i] = PeerRange{(uintptr_t)lo[i], (uintptr_t)lo[i] + n[i]};
}

// A stream copy that reads or writes another rank's symmetric buffer is a copy-engine transfer.
void trace_copy(const void* dst, const void* src, size_t n, int stream_id) {
  for (int i = 0; i < g_npeers; ++i) {
    const PeerRange& r = g_peers[i];
    const bool hit = ((uintptr_t)dst >= r.lo && (uintptr_t)dst < r.hi) || ((uintptr_t)src >= r.lo && (uintptr_t)src < r.hi);
    if (!hit) continue;
    ++T.calls[CUCO_EMU_TR_CE_COPY];
    T.bytes[CUCO_EMU_TR_CE_COPY] += n;
    T.max_bytes[CUCO_EMU_TR_CE_COPY] = std::max<unsigned long long>(T.max_bytes[CUCO_EMU_TR_CE_COPY], n);
    if (stream_id != T.main_stream) ++T.side_copies;
    return;
  }
}

int trace_summary(char* buf, size_t cap, int calls) {
  size_t used = 0;
  auto put = [&](const char* key, unsigned long long v) {
    if (used < cap) used += (size_t)snprintf(buf + used, cap - used, "%s %llu\n", key, v);
  };
  put("calls", (unsigned long long)calls);
  for (int k = 0; k < kKinds; ++k) {
    char key[48];
    snprintf(key, sizeof key, "%s.calls", kNames[k]);
    put(key, T.calls[k]);
    snprintf(key, sizeof key, "%s.bytes", kNames[k]);
    put(key, T.bytes[k]);
    snprintf(key, sizeof key, "%s.max_bytes", kNames[k]);
    put(key, T.max_bytes[k]);
  }
  put("wait.slots", T.wait_slots.size());
  put("launches", T.launches);
  put("side_launches", T.side_launches);
  put("side_copies", T.side_copies);
  put("side_colls", T.side_colls);
  put("comm_launches", T.comm_launches);
  put("mma_launches", T.mma_launches);
  put("fused_launches", T.fused_launches);
  put("max_comm_blocks", T.max_comm_blocks);
  put("max_xfer_blocks", T.max_xfer_blocks);
  put("max_mma_blocks", T.max_mma_blocks);
  put("max_issuers_per_warp", T.max_issuers_per_warp);
  put("max_issuing_warps", T.max_issuing_warps);
  return (int)std::min(used, cap);
}
}  // namespace cuco_emu

extern "C" void cuco_emu_tile_result(float* acc, int n) {
  using namespace cuco_emu;
  if (!g_perturb || acc == nullptr || n <= 0) return;
  // Noise far above the values (4x the largest |accumulator| this thread holds), so what a
  // normalisation or a softmax makes of a perturbed row is unrelated to the true one.
  float scale = 0.f;
  for (int i = 0; i < n; ++i) scale = std::max(scale, std::fabs(acc[i]));
  scale = 4.f * (1.f + scale);
  const unsigned long long call = ++g_tile_results;
  for (int i = 0; i < n; ++i) {
    const unsigned long long h = mix(call * 1315423911ull + (unsigned long long)i);
    const float mag = scale * (0.5f + (float)(h >> 40) / (float)(1ull << 24));  // [0.5, 1.5) x scale
    acc[i] += (g_perturb == 2 && (h & 1)) ? -mag : mag;
  }
}

extern "C" void cuco_emu_trace(int kind, unsigned long long bytes, long slot) {
  using namespace cuco_emu;
  if (kind < 0 || kind >= kKinds) return;
  check_reserved_slots(kind, slot);
  if (kind == CUCO_EMU_TR_ENTER) count_enter(slot / CUCO_MAX_RANKS, slot % CUCO_MAX_RANKS);
  if (kind == CUCO_EMU_TR_BARRIER && slot >= CUCO_COLL_BARRIER) return;  // a library collective's own barrier
  Fiber* f = current();
  if (kind == CUCO_EMU_TR_COLL && !(f && f->block) && stream_id((cudaStream_t)slot) != T.main_stream) ++T.side_colls;
  ++T.calls[kind];
  T.bytes[kind] += bytes;
  T.max_bytes[kind] = std::max(T.max_bytes[kind], bytes);
  if (kind == CUCO_EMU_TR_WAIT || kind == CUCO_EMU_TR_GIN_WAIT) T.wait_slots.insert(kind * 1000003L + slot);
  if (f && f->block) note_block(f, kind);
}
