// cuco CPU emulator: the harness executable. `emu MANIFEST_FD IO_FD` runs a candidate's cuco_run
// on `world` ranks (forked processes). Both descriptors come from the evaluator: the manifest is a
// sealed file; the I/O file holds every rank's inputs and (poisoned) outputs, one region per call.
// Each rank maps only its own regions; the evaluator reads the outputs after this process exits,
// so nothing this process writes or prints decides the verdict.
//
// Exit codes: 0 ok, 2 a rank crashed, 3 deadlock, 4 cuco_run / CUDA error, 5 bad manifest or
// harness error, 6 not emulatable, 7 memory violation (a red zone written, allocations over the
// budget), 8 contract violation (work left on a stream cuco_run never joined). Diagnostics go to stderr, one summary line to stdout.
// There is no wall-clock limit here: the Python sandbox that runs `emu` owns timeouts.
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <vector>
#include "emu_internal.h"
#include "harness.h"
#include "manifest.h"

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream);

namespace cuco_emu {
namespace {

struct RankRun {
  const Manifest* m;
  Arena* arena;
  int rank;
  cuco_ctx ctx;
  uint64_t barrier_gen;
};

// All ranks meet here; runs in the host fiber, so waiting lets leftover kernel work go on.
void harness_barrier(RankRun& run, const char* what) {
  SharedHeader* h = run.arena->header;
  const uint64_t target = (uint64_t)run.m->world * ++run.barrier_gen;
  __atomic_add_fetch(&h->barrier_count, 1, __ATOMIC_ACQ_REL);
  uint64_t have;
  while ((have = __atomic_load_n(&h->barrier_count, __ATOMIC_ACQUIRE)) < target)
    cuco_emu_block_wait(what, -1, have, target);
}

// Ranks start a call one after another, each only once the one before it has started the call and
// handed the baton on (done with it or fully blocked): rank 0 first in odd calls, the last rank first
// in even ones. A run is one fixed interleaving, and between the two orders every rank runs ahead of
// every peer once, so a missing wait on any peer's data shows in one of them, not by luck.
void rank_gate(RankRun& run, uint64_t epoch) {
  SharedHeader* h = run.arena->header;
  const int world = run.m->world;
  const int before = epoch % 2 ? run.rank - 1 : run.rank + 1;
  if (before >= 0 && before < world) {
    const uint64_t* prev = &h->ranks[before].epoch_started;
    uint64_t have;
    while ((have = __atomic_load_n(prev, __ATOMIC_ACQUIRE)) < epoch)
      cuco_emu_block_wait("rank gating", before, have, epoch);
  }
  __atomic_store_n(&h->ranks[run.rank].epoch_started, epoch, __ATOMIC_RELEASE);
}

// The first two calls start behind a barrier, on poisoned buffers, gated in both orders. Later
// calls follow back to back, as calls queued on one stream do on a GPU: a rank that finishes a
// call runs straight into the next while its peers may still be in the last one, so a buffer
// refilled before its reader is done with it (a missing credit or epoch wait) fails here too.

// After a call: every red zone intact (a write that jumped a guard page, or landed before a
// buffer, changed one) and no work left on a stream that cuco_run never joined into `stream`
// (on a GPU the harness's timer, recorded on `stream`, would not see that work).
void check_contract(RankRun& run, cudaStream_t stream, int it) {
  const std::string oob = run.arena->check_red_zones(run.rank);
  if (!oob.empty()) fail(kExitMemory, "memory: found by rank %d after iteration %d: %s", run.rank, it, oob.c_str());
  if (stream == nullptr) return;
  const int left = unjoined_stream(stream);
  if (left >= 0)
    fail(kExitContract, "contract: rank %d, iteration %d: work still queued on stream %d after cuco_run's stream "
         "finished: join every side stream into `stream` (cudaEventRecord + cudaStreamWaitEvent) before returning",
         run.rank, it, left);
}

void harness_host(void* arg) {
  RankRun& run = *static_cast<RankRun*>(arg);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  trace_set_main_stream(stream_id(stream));
  for (int it = 1; it <= run.m->iterations; ++it) {
    const bool fenced = it <= CUCO_EMU_FENCED_CALLS;
    if (fenced) {
      harness_barrier(run, "harness barrier (previous call done)");
      run.arena->poison_rank(run.rank);  // symmetric buffer and workspace; outputs arrive poisoned
    } else {
      run.arena->poison_workspace(run.rank);  // private; a peer may already have filled our symmetric buffer
    }
    run.arena->enter_call(run.rank, it, *run.m, &run.ctx);
    if (fenced) {
      harness_barrier(run, "harness barrier (buffers poisoned)");
      rank_gate(run, (uint64_t)it);
    }
    run.ctx.epoch = (uint64_t)it;
    trace_begin_call(it);
    const int rc = cuco_run(&run.ctx, stream);
    if (rc != 0)
      fail(4, "error: rank %d cuco_run returned %d in call %d (last CUDA error: %s)", run.rank, rc, it,
           cudaGetErrorString(cudaPeekAtLastError()));
    const cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) fail(4, "error: rank %d cudaStreamSynchronize: %s", run.rank, cudaGetErrorString(e));
    if (cudaPeekAtLastError() != cudaSuccess)
      fprintf(stderr, "warning: rank %d: CUDA error pending after cuco_run: %s\n", run.rank,
              cudaGetErrorString(cudaPeekAtLastError()));
    check_contract(run, stream, it);
    // This call's outputs are final: work that touches them later (a stream never joined) faults.
    run.arena->leave_call(run.rank, it, *run.m);
  }
  harness_barrier(run, "harness barrier (exit)");
  check_contract(run, nullptr, run.m->iterations);  // peers' last writes are in by now
  if (run.arena->trace) {
    if (mprotect(run.arena->trace, run.arena->trace_bytes, PROT_READ | PROT_WRITE) != 0)
      fail(5, "emu: cannot open rank %d's trace region", run.rank);
    trace_summary(run.arena->trace, run.arena->trace_bytes - 1, run.m->iterations);
  }
  run.arena->header->ranks[run.rank].done_ok = 1;
}

[[noreturn]] void child_main(const Manifest& m, Arena& arena, int rank, pid_t parent, int io_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(5);
  std::string err;
  if (!arena.map_private(rank, m, io_fd, &err)) fail(5, "emu: %s", err.c_str());
  close(io_fd);  // the mappings stay; the candidate gets no descriptor to the evaluator's file
  const void* peers[CUCO_MAX_RANKS];
  size_t sizes[CUCO_MAX_RANKS];
  int npeers = 0;
  for (int r = 0; r < m.world; ++r)
    if (r != rank && arena.ranks[r].symm.ptr) peers[npeers] = arena.ranks[r].symm.ptr, sizes[npeers++] = arena.ranks[r].symm.n;
  trace_set_peer_ranges(peers, sizes, npeers);
  trace_set_perturb(m.perturb_tile);
  trace_set_rank(rank);
  install_crash_handler(rank, arena.regions.data(), (int)arena.regions.size(), arena.page);
  start_runaway_watchdog(rank, m.runaway_seconds);
  set_num_sms(m.num_sms);
  set_device_memory_budget(rank, m.device_memory_bytes);
  set_thread_stack_bytes(m.stack_kib * 1024);
  static RankRun run;
  run.m = &m;
  run.arena = &arena;
  run.rank = rank;
  run.barrier_gen = 0;
  arena.fill_ctx(rank, m, &run.ctx);
  sched_start_host(harness_host, &run);
  rank_main_loop(arena.header, rank);
}

struct Outcome {
  int code = 0;
  std::string why;
};

// Collect the children; the first failure decides the exit code and the others are killed
// (they may wait forever on the failed rank). After a deadlock the others get 2 s to print.
Outcome wait_children(const std::vector<pid_t>& pids, SharedHeader* h) {
  Outcome out;
  std::vector<bool> alive(pids.size(), true), killed(pids.size(), false);
  size_t remaining = pids.size();
  int64_t deadline = 0;
  while (remaining) {
    int st = 0;
    const pid_t p = waitpid(-1, &st, deadline ? WNOHANG : 0);
    if (p == 0) {
      if (monotonic_ns() > deadline)
        for (size_t r = 0; r < pids.size(); ++r)
          if (alive[r] && !killed[r]) killed[r] = kill(pids[r], SIGKILL) == 0;
      usleep(5000);
      continue;
    }
    if (p < 0) break;
    size_t r = 0;
    while (r < pids.size() && pids[r] != p) ++r;
    if (r == pids.size()) continue;
    alive[r] = false;
    --remaining;
    if (killed[r]) continue;
    int code = 0;
    char why[160] = "";
    if (WIFSIGNALED(st)) {
      code = 2;
      snprintf(why, sizeof why, "rank %zu crashed (%s)", r, strsignal(WTERMSIG(st)));
    } else if (WEXITSTATUS(st) != 0) {
      const int c = WEXITSTATUS(st);
      code = (c >= 3 && c <= kExitContract) ? c : 4;
      snprintf(why, sizeof why, c == 3 ? "deadlock (reported by rank %zu)" : "rank %zu failed with exit code %d", r, c);
    } else if (!h->ranks[r].done_ok) {
      code = 4;
      snprintf(why, sizeof why, "rank %zu exited before finishing its iterations", r);
    }
    if (code == 0 || out.code != 0) continue;
    out.code = code;
    out.why = why;
    if (code == 3) {
      deadline = monotonic_ns() + 2000000000LL;
    } else {
      for (size_t k = 0; k < pids.size(); ++k)
        if (alive[k]) killed[k] = kill(pids[k], SIGKILL) == 0;
    }
  }
  return out;
}
}  // namespace
}  // namespace cuco_emu

int main(int argc, char** argv) {
  using namespace cuco_emu;
  if (argc != 3) {
    fprintf(stderr, "usage: %s MANIFEST_FD IO_FD\n", argv[0]);
    return 5;
  }
  const int64_t t0 = monotonic_ns();
  const int manifest_fd = atoi(argv[1]), io_fd = atoi(argv[2]);
  static Manifest m;
  std::string err;
  if (!read_manifest_fd(manifest_fd, &m, &err)) {
    fprintf(stderr, "emu: bad manifest: %s\n", err.c_str());
    printf("emu: failed code=5: bad manifest\n");
    return 5;
  }
  close(manifest_fd);
  static Arena arena;
  if (!arena.reserve_and_share(m, &err)) {
    fprintf(stderr, "emu: %s\n", err.c_str());
    printf("emu: failed code=5: harness error\n");
    return 5;
  }
  fflush(stdout);
  fflush(stderr);
  // Not dumpable (inherited by the ranks): no rank may open another process's descriptors or
  // memory through /proc, e.g. this process's I/O file, which holds every rank's inputs.
  prctl(PR_SET_DUMPABLE, 0);
  const pid_t parent = getpid();
  std::vector<pid_t> pids;
  for (int r = 0; r < m.world; ++r) {
    const pid_t p = fork();
    if (p == 0) child_main(m, arena, r, parent, io_fd);
    if (p < 0) {
      for (pid_t q : pids) kill(q, SIGKILL);
      fprintf(stderr, "emu: fork failed\n");
      return 5;
    }
    pids.push_back(p);
  }
  close(io_fd);  // every rank has its own copy; this process reads nothing of it
  const Outcome out = wait_children(pids, arena.header);
  const double secs = (monotonic_ns() - t0) / 1e9;
  if (out.code == 0) {
    printf("emu: ok world=%d iterations=%d seconds=%.3f\n", m.world, m.iterations, secs);
  } else {
    fprintf(stderr, "emu: %s\n", out.why.c_str());
    printf("emu: failed code=%d: %s\n", out.code, out.why.c_str());
  }
  return out.code;
}
