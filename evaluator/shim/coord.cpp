// cuco CPU emulator: coordination between ranks, deadlock detection and crash reports.
//
// Ranks are processes, but only one runs at a time: it holds a baton until all its fibers are
// blocked (or it has run a long slice) and then hands it to the next live rank. A multi-rank
// run is therefore one deterministic interleaving (rank 0 first, each rank as far as it can
// go), which is what makes a deleted barrier fail on every run, and it keeps 4 ranks from
// fighting over 2 cores. When the baton comes back and no rank got anywhere in the whole round,
// the rank backs off (50 us doubling to 2 ms) and, after `stall_seconds` without progress
// anywhere, declares a deadlock: every rank prints its blocked threads and exits 3.
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include "emu_internal.h"
#include "harness.h"

namespace cuco_emu {
namespace {
SharedHeader* H = nullptr;
int R = 0;
uint64_t g_last_seen = ~0ull;  // H->progress when this rank last handed the baton on
int64_t g_backoff_ns = 50000;

long futex(int* addr, int op, int val, const timespec* ts) {
  return syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

[[noreturn]] void report_deadlock_and_exit() {
  dump_blocked(R, 20);
  fflush(stdout);
  _exit(3);
}

void wait_for_baton() {
  int* turn = &H->ranks[R].turn;
  while (!__atomic_load_n(turn, __ATOMIC_ACQUIRE)) {
    if (__atomic_load_n(&H->deadlock, __ATOMIC_ACQUIRE)) report_deadlock_and_exit();
    const timespec ts{0, 200 * 1000 * 1000};
    futex(turn, FUTEX_WAIT, 0, &ts);
    if (getppid() == 1) _exit(5);  // the parent died: nobody will collect our results
  }
  __atomic_store_n(turn, 0, __ATOMIC_RELAXED);
  if (__atomic_load_n(&H->deadlock, __ATOMIC_ACQUIRE)) report_deadlock_and_exit();
}

void pass_baton() {
  const int w = H->world;
  for (int k = 1; k <= w; ++k) {
    const int next = (R + k) % w;
    if (H->ranks[next].exited) continue;
    __atomic_store_n(&H->ranks[next].turn, 1, __ATOMIC_RELEASE);
    futex(&H->ranks[next].turn, FUTEX_WAKE, 1, nullptr);
    return;
  }
}

void declare_deadlock() {
  __atomic_store_n(&H->deadlock, 1, __ATOMIC_RELEASE);
  for (int r = 0; r < H->world; ++r) futex(&H->ranks[r].turn, FUTEX_WAKE, 1, nullptr);
  report_deadlock_and_exit();
}

// Called with the baton in hand: was there progress anywhere since we last passed it?
void check_stall() {
  if (__atomic_load_n(&H->progress, __ATOMIC_ACQUIRE) != g_last_seen) {
    g_backoff_ns = 50000;
    return;
  }
  const timespec ts{0, g_backoff_ns};
  nanosleep(&ts, nullptr);
  g_backoff_ns = std::min<int64_t>(g_backoff_ns * 2, 2000000);
  const int64_t idle = monotonic_ns() - __atomic_load_n(&H->last_progress_ns, __ATOMIC_ACQUIRE);
  if (idle > (int64_t)(H->stall_seconds * 1e9)) declare_deadlock();
}
}  // namespace

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void rank_main_loop(SharedHeader* hdr, int rank) {
  H = hdr;
  R = rank;
  for (;;) {
    wait_for_baton();
    // Puts in flight land only when no rank got anywhere in a whole round: as late as the
    // semantics allow, so a source reused before its flush, or a slot refilled on a credit that
    // overtook a put to another peer, is caught. Pending puts are progress, never a deadlock.
    bool delivered = false;
    if (__atomic_load_n(&H->progress, __ATOMIC_ACQUIRE) == g_last_seen && nic_deliver_one())
      delivered = true;
    else
      check_stall();
    bool progressed = false;
    const Hold h = sched_run_hold(&progressed);
    if (progressed || delivered) {
      __atomic_add_fetch(&H->progress, 1, __ATOMIC_ACQ_REL);
      __atomic_store_n(&H->last_progress_ns, monotonic_ns(), __ATOMIC_RELEASE);
    }
    g_last_seen = __atomic_load_n(&H->progress, __ATOMIC_ACQUIRE);
    if (h == Hold::HostDone) {
      while (nic_deliver_one()) {
      }  // puts still in flight land (a stray one faults here, reported like any crash)
      __atomic_store_n(&H->ranks[R].exited, 1, __ATOMIC_RELEASE);
      pass_baton();
      fflush(stdout);
      fflush(stderr);
      _exit(0);  // leftover work on streams nobody joined is abandoned, as the harness allows
    }
    pass_baton();
  }
}

// ------------------------------------------------------------------ crash reports

namespace {
const CrashRegion* g_regions = nullptr;
int g_nregions = 0;
size_t g_page = 4096;
int g_crash_rank = 0;

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal";
  }
}

int g_current_call = 0;

// A fault inside a buffer this process may not touch: another rank's private memory, or its own
// buffers of another call. Returns false when the address is in none of them.
bool describe_foreign(const CrashRegion& r, uintptr_t a, char* buf, size_t n) {
  if (a < r.lo || a >= r.hi) return false;
  if (r.owner >= 0 && r.owner != g_crash_rank) {
    snprintf(buf, n, " at %p (rank %d touched %s: another rank's memory is reachable only through the comm API -- "
             "symmetric buffers, puts and signals)", (void*)a, g_crash_rank, r.name);
    return true;
  }
  if (r.call > 0 && r.call != g_current_call) {
    snprintf(buf, n, " at %p (%s is not accessible %s: every call gets fresh inputs and a fresh output buffer, so "
             "results cannot be carried over between calls)", (void*)a, r.name,
             g_current_call ? "during another call" : "outside its call");
    return true;
  }
  return false;
}

void describe_address(const void* addr, char* buf, size_t n) {
  const uintptr_t a = (uintptr_t)addr;
  if (a < 65536) {
    snprintf(buf, n, " at %p (null pointer)", addr);
    return;
  }
  for (int i = 0; i < g_nregions; ++i)
    if (describe_foreign(g_regions[i], a, buf, n)) return;
  for (int i = 0; i < g_nregions; ++i) {
    const CrashRegion& r = g_regions[i];
    const uintptr_t guard_end = (r.hi + g_page - 1) / g_page * g_page + g_page;
    if (a >= r.lo && a < r.hi && r.readonly) {
      snprintf(buf, n, " at %p (write to read-only %s)", addr, r.name);
      return;
    }
    if (a >= r.hi && a < guard_end) {
      snprintf(buf, n, " at %p (%zu bytes past the end of %s)", addr, (size_t)(a - r.hi), r.name);
      return;
    }
  }
  // Beyond a guard page: name the nearest buffer below (an overrun rather than a stray pointer).
  const CrashRegion* below = nullptr;
  for (int i = 0; i < g_nregions; ++i)
    if (g_regions[i].hi <= a && (!below || g_regions[i].hi > below->hi)) below = &g_regions[i];
  if (below && a - below->hi < (uintptr_t)64 << 20) {
    snprintf(buf, n, " at %p (%zu bytes past the end of %s, beyond its guard page)", addr, (size_t)(a - below->hi),
             below->name);
    return;
  }
  if (addr_in_current_dyn_guard(addr)) {
    snprintf(buf, n, " at %p (past the end of dynamic shared memory)", addr);
  } else if (addr_in_current_stack_guard(addr)) {
    snprintf(buf, n, " at %p (stack overflow: each emulated thread has a %zu KiB stack)", addr,
             thread_stack_bytes() / 1024);
  } else {
    snprintf(buf, n, " at %p", addr);
  }
}

void on_crash(int sig, siginfo_t* si, void*) {
  char who[96], where[200] = "", line[400];
  describe_fiber(current(), who, sizeof who);
  if (sig == SIGSEGV || sig == SIGBUS) describe_address(si->si_addr, where, sizeof where);
  const int len = snprintf(line, sizeof line, "crash: rank %d %s: %s%s\n", g_crash_rank, who, signal_name(sig), where);
  if (write(2, line, (size_t)std::max(0, std::min<int>(len, (int)sizeof line - 1))) < 0) {
  }
  signal(sig, SIG_DFL);
  raise(sig);  // delivered with the default action once the handler returns
}
}  // namespace

// A fiber that runs for many seconds without ever yielding is almost always spinning on a
// plain or volatile load: nothing else in its rank can run, so it would spin forever. Report it
// as a hang (exit 3) instead of leaving only the caller's timeout.
namespace {
int g_runaway_limit = 20, g_still = 0, g_watch_rank = 0;
uint64_t g_seen_switches = ~0ull;

void on_alarm(int) {
  const Fiber* f = current();
  const uint64_t sw = switch_count();
  if (!f || sw != g_seen_switches) {
    g_seen_switches = sw;
    g_still = 0;
    return;
  }
  if (++g_still < g_runaway_limit) return;
  char who[96], line[400];
  describe_fiber(f, who, sizeof who);
  const int len = snprintf(line, sizeof line,
                           "deadlock: rank %d %s: ran %d s without yielding (a spin on a plain or volatile load never "
                           "lets other threads run in the emulator: poll with cuco_wait, an atomic or __nanosleep)\n",
                           g_watch_rank, who, g_still);
  if (write(2, line, (size_t)std::max(0, std::min<int>(len, (int)sizeof line - 1))) < 0) {
  }
  _exit(3);
}
}  // namespace

void start_runaway_watchdog(int rank, int seconds) {
  g_watch_rank = rank;
  g_runaway_limit = seconds;
  struct sigaction sa{};
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, nullptr);
  const itimerval tick{{1, 0}, {1, 0}};
  setitimer(ITIMER_REAL, &tick, nullptr);
}

void set_current_call(int call) { g_current_call = call; }

void install_crash_handler(int rank, const CrashRegion* regions, int nregions, size_t page) {
  g_crash_rank = rank;
  g_regions = regions;
  g_nregions = nregions;
  g_page = page;
  static char altstack[1 << 16];
  stack_t ss{};
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  sigaltstack(&ss, nullptr);  // a fiber stack overflow must not need the overflowed stack
  struct sigaction sa{};
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigaction(sig, &sa, nullptr);
}
}  // namespace cuco_emu
