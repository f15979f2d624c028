// cuco CPU emulator: manifest parsing and the address-space arena (see manifest.h).
#include "manifest.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sstream>

namespace cuco_emu {
namespace {

bool bad(std::string* err, int line, const std::string& what) {
  *err = "line " + std::to_string(line) + ": " + what;
  return false;
}

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// `io RANK CALL in|out SLOT OFFSET NBYTES REGION`
bool parse_io(std::istringstream& in, const Manifest& m, IoSlot* io) {
  std::string kind;
  long long nbytes = -1, offset = -1, region = -1;
  if (!(in >> io->rank >> io->iter >> kind >> io->slot >> offset >> nbytes >> region)) return false;
  if (kind != "in" && kind != "out") return false;
  io->output = kind == "out";
  io->nbytes = (size_t)nbytes;
  io->offset = (uint64_t)offset;
  io->region = (size_t)region;
  const int slots = io->output ? CUCO_MAX_OUTPUTS : CUCO_MAX_INPUTS;
  const long long page = sysconf(_SC_PAGESIZE);
  return io->rank >= 0 && io->rank < m.world && io->iter >= 1 && io->iter <= m.iterations && io->slot >= 0 &&
         io->slot < slots && nbytes > 0 && offset >= 0 && offset % page == 0 && region % page == 0 &&
         region >= nbytes + page;
}

bool parse_line(const std::string& key, std::istringstream& in, Manifest* m, std::string* what) {
  if (key == "world") return (bool)(in >> m->world) && m->world >= 1 && m->world <= CUCO_MAX_RANKS;
  if (key == "num_sms") return (bool)(in >> m->num_sms) && m->num_sms >= 1;
  if (key == "iterations") return (bool)(in >> m->iterations) && m->iterations >= 1 && m->iterations <= 64;
  if (key == "stall_seconds") return (bool)(in >> m->stall_seconds) && m->stall_seconds > 0;
  if (key == "dtype") return (bool)(in >> m->dtype) && m->dtype >= 0 && m->dtype <= 2;
  if (key == "symm_bytes") return (bool)(in >> m->symm_bytes);
  if (key == "workspace_bytes") return (bool)(in >> m->workspace_bytes);
  if (key == "runaway_seconds") return (bool)(in >> m->runaway_seconds) && m->runaway_seconds >= 1;
  if (key == "device_memory_bytes") return (bool)(in >> m->device_memory_bytes);
  if (key == "perturb_tile") return (bool)(in >> m->perturb_tile) && m->perturb_tile >= 0 && m->perturb_tile <= 2;
  if (key == "stack_kib") return (bool)(in >> m->stack_kib) && m->stack_kib >= 16;
  if (key == "dims") {
    int k = 0;
    int64_t v;
    while (in >> v) {
      if (k == CUCO_MAX_DIMS) return false;
      m->dims[k++] = v;
    }
    return k > 0 && in.eof();
  }
  if (key == "trace") {
    Manifest::Trace t{};
    long long off = -1, n = -1;
    if (!(in >> t.rank >> off >> n) || t.rank < 0 || t.rank >= m->world || off < 0 || n <= 0 ||
        off % sysconf(_SC_PAGESIZE) != 0)
      return false;
    t.offset = (uint64_t)off;
    t.bytes = (size_t)n;
    m->traces.push_back(t);
    return true;
  }
  if (key == "io") {
    if (m->world == 0 || m->iterations == 0) {
      *what = "'world' and 'iterations' must come before io lines";
      return false;
    }
    IoSlot io;
    if (!parse_io(in, *m, &io)) return false;
    for (const IoSlot& o : m->io)
      if (o.rank == io.rank && o.iter == io.iter && o.output == io.output && o.slot == io.slot) {
        *what = "duplicate io slot";
        return false;
      }
    m->io.push_back(io);
    return true;
  }
  *what = "unknown key '" + key + "'";
  return false;
}

// Red-zone bytes: neither 0 nor 0xFF (the poison), so a stray zero or NaN store shows.
constexpr unsigned char kCanary = 0xCA;

char* map_fixed(char* at, size_t n, int prot, int flags, int fd, off_t off) {
  void* p = mmap(at, n, prot, flags | MAP_FIXED, fd, off);
  return p == MAP_FAILED ? nullptr : (char*)p;
}
}  // namespace

bool read_manifest_fd(int fd, Manifest* m, std::string* err) {
  std::string text;
  char buf[4096];
  ssize_t got;
  while ((got = pread(fd, buf, sizeof buf, (off_t)text.size())) > 0) {
    text.append(buf, (size_t)got);
    if (text.size() > (1u << 20)) return bad(err, 0, "manifest larger than 1 MiB");
  }
  if (got < 0) {
    *err = std::string("cannot read the manifest: ") + strerror(errno);
    return false;
  }
  std::istringstream lines(text);
  std::string s;
  int line = 0;
  while (std::getline(lines, s)) {
    ++line;
    while (!s.empty() && s.back() == '\r') s.pop_back();
    std::istringstream in(s);
    std::string key, what;
    if (!(in >> key) || key[0] == '#') continue;
    if (!parse_line(key, in, m, &what)) return bad(err, line, what.empty() ? "bad value for '" + key + "'" : what);
  }
  if (m->world == 0) return bad(err, line, "missing 'world'");
  return true;
}

namespace {
struct Plan {
  Arena::Buf* buf;
  size_t n;
  std::string name;
  int owner;  // -1 shared
  int call;   // 0 every call
  bool readonly;
  bool poison;       // 0xFF (NaN) at start; signal pads must start at 0
  const IoSlot* io;  // from the I/O file, else anonymous memory
};

std::vector<Plan> make_plan(Arena& a, const Manifest& m) {
  std::vector<Plan> plan;
  for (int r = 0; r < m.world; ++r) {
    const std::string rk = "rank " + std::to_string(r) + "'s ";
    Arena::RankBufs& rb = a.ranks[r];
    plan.push_back({&rb.symm, m.symm_bytes, rk + "symmetric buffer", -1, 0, false, true, nullptr});
    plan.push_back({&rb.signals, CUCO_SIGNAL_SLOTS * sizeof(uint64_t), rk + "signal pad", -1, 0, false, false, nullptr});
    plan.push_back({&rb.workspace, m.workspace_bytes, rk + "workspace", r, 0, false, true, nullptr});
  }
  for (const IoSlot& io : m.io) {
    auto& list = io.output ? a.ranks[io.rank].out[io.slot] : a.ranks[io.rank].in[io.slot];
    if ((int)list.size() < m.iterations) list.resize(m.iterations);
  }
  for (const IoSlot& io : m.io) {
    auto& list = io.output ? a.ranks[io.rank].out[io.slot] : a.ranks[io.rank].in[io.slot];
    const std::string name = "rank " + std::to_string(io.rank) + "'s " + (io.output ? "output " : "input ") +
                             std::to_string(io.slot) + " of call " + std::to_string(io.iter);
    plan.push_back({&list[io.iter - 1], io.nbytes, name, io.rank, io.iter, !io.output, false, &io});
  }
  return plan;
}
}  // namespace

bool Arena::reserve_and_share(const Manifest& m, std::string* err) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  ranks.assign(m.world, RankBufs{});
  std::vector<Plan> plan = make_plan(*this, m);
  // Per buffer: red page + buffer (ending page-aligned) + guard page; the I/O file fixes the
  // region size of its buffers.
  const size_t head = round_up(sizeof(SharedHeader), page);
  size_t total = head + page;
  for (const Plan& p : plan) total += (p.io ? p.io->region : page + round_up(p.n ? p.n : 1, page)) + page;
  char* base = (char*)mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    *err = "cannot reserve an arena of " + std::to_string(total) + " bytes";
    return false;
  }
  if (!map_fixed(base, head, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) {
    *err = "cannot map the harness header";
    return false;
  }
  header = reinterpret_cast<SharedHeader*>(base);
  size_t off = head + page;
  for (const Plan& p : plan) {
    const size_t region = p.io ? p.io->region : page + round_up(p.n ? p.n : 1, page);
    Buf& b = *p.buf;
    b.region = base + off;
    b.region_len = region;
    b.n = p.n;
    b.ptr = p.n ? b.region + region - round_up(p.n, 16) : nullptr;
    off += region + page;
    if (b.ptr) {
      CrashRegion cr{(uintptr_t)b.ptr, (uintptr_t)b.ptr + b.n, (uintptr_t)b.region, p.readonly, p.owner, p.call, {}};
      snprintf(cr.name, sizeof cr.name, "%s", p.name.c_str());
      regions.push_back(cr);
    }
    if (p.owner >= 0) continue;  // private: mapped by its owner after fork
    if (!map_fixed(b.region, region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) {
      *err = "cannot map " + p.name;
      return false;
    }
    if (b.ptr && p.poison) memset(b.ptr, 0xFF, b.n);
    if (b.ptr) {
      memset(b.region, kCanary, (size_t)(b.ptr - b.region));
      memset(b.ptr + b.n, kCanary, (size_t)(b.region + region - b.ptr - b.n));
      RedZone lo{(unsigned char*)b.region, (size_t)(b.ptr - b.region), b.ptr, b.n, false, -1, {}};
      RedZone hi{(unsigned char*)b.ptr + b.n, (size_t)(b.region + region - b.ptr - b.n), b.ptr, b.n, true, -1, {}};
      snprintf(lo.name, sizeof lo.name, "%s", p.name.c_str());
      snprintf(hi.name, sizeof hi.name, "%s", p.name.c_str());
      red.push_back(lo);
      if (hi.n) red.push_back(hi);
    }
  }
  header->world = m.world;
  header->stall_seconds = m.stall_seconds;
  header->last_progress_ns = monotonic_ns();
  header->ranks[0].turn = 1;  // rank 0 holds the baton first
  return true;
}

bool Arena::map_private(int rank, const Manifest& m, int io_fd, std::string* err) {
  RankBufs& rb = ranks[rank];
  Buf& w = rb.workspace;
  if (w.region && !map_fixed(w.region, w.region_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
    *err = "cannot map rank " + std::to_string(rank) + "'s workspace";
    return false;
  }
  if (w.ptr) {
    memset(w.region, kCanary, (size_t)(w.ptr - w.region));
    memset(w.ptr + w.n, kCanary, (size_t)(w.region + w.region_len - w.ptr - w.n));
    RedZone lo{(unsigned char*)w.region, (size_t)(w.ptr - w.region), w.ptr, w.n, false, rank, {}};
    RedZone hi{(unsigned char*)w.ptr + w.n, (size_t)(w.region + w.region_len - w.ptr - w.n), w.ptr, w.n, true, rank, {}};
    snprintf(lo.name, sizeof lo.name, "rank %d's workspace", rank);
    snprintf(hi.name, sizeof hi.name, "rank %d's workspace", rank);
    red.push_back(lo);
    if (hi.n) red.push_back(hi);
  }
  struct stat st{};
  if (fstat(io_fd, &st) != 0) {
    *err = std::string("cannot read the I/O file: ") + strerror(errno);
    return false;
  }
  for (const Manifest::Trace& t : m.traces) {
    if (t.rank != rank) continue;
    if (t.offset + t.bytes > (uint64_t)st.st_size) {
      *err = "rank " + std::to_string(rank) + "'s trace region ends beyond the I/O file";
      return false;
    }
    // Inaccessible while the candidate runs: the harness opens it only to write the summary.
    void* p = mmap(nullptr, t.bytes, PROT_NONE, MAP_SHARED, io_fd, (off_t)t.offset);
    if (p == MAP_FAILED) {
      *err = "cannot map rank " + std::to_string(rank) + "'s trace region";
      return false;
    }
    trace = (char*)p;
    trace_bytes = t.bytes;
  }
  for (const IoSlot& io : m.io) {
    if (io.rank != rank) continue;
    if (io.offset + io.region > (uint64_t)st.st_size) {
      *err = "rank " + std::to_string(rank) + "'s I/O region ends beyond the I/O file";
      return false;
    }
    const Buf& b = io.output ? rb.out[io.slot][io.iter - 1] : rb.in[io.slot][io.iter - 1];
    // Inaccessible until its call: enter_call opens it. The evaluator wrote the inputs, the
    // outputs' poison and the red zones' canaries; after this process exits it reads the outputs
    // and checks their red zones itself.
    if (!map_fixed(b.region, b.region_len, PROT_NONE, MAP_SHARED, io_fd, (off_t)io.offset)) {
      *err = "cannot map rank " + std::to_string(rank) + "'s I/O region: " + strerror(errno);
      return false;
    }
  }
  return true;
}

void Arena::enter_call(int rank, int it, const Manifest& m, cuco_ctx* ctx) const {
  const RankBufs& rb = ranks[rank];
  for (int s = 0; s < CUCO_MAX_INPUTS; ++s) {
    ctx->in[s] = nullptr;
    if ((int)rb.in[s].size() < it || !rb.in[s][it - 1].ptr) continue;
    const Buf& b = rb.in[s][it - 1];
    mprotect(b.region, b.region_len, PROT_READ);  // inputs are read-only: later calls get fresh ones
    ctx->in[s] = b.ptr;
  }
  for (int s = 0; s < CUCO_MAX_OUTPUTS; ++s) {
    ctx->out[s] = nullptr;
    if ((int)rb.out[s].size() < it || !rb.out[s][it - 1].ptr) continue;
    const Buf& b = rb.out[s][it - 1];
    mprotect(b.region, b.region_len, PROT_READ | PROT_WRITE);
    ctx->out[s] = b.ptr;
  }
  (void)m;
  set_current_call(it);
}

void Arena::leave_call(int rank, int it, const Manifest& m) const {
  const RankBufs& rb = ranks[rank];
  for (int s = 0; s < CUCO_MAX_INPUTS; ++s)
    if ((int)rb.in[s].size() >= it && rb.in[s][it - 1].ptr) mprotect(rb.in[s][it - 1].region, rb.in[s][it - 1].region_len, PROT_NONE);
  for (int s = 0; s < CUCO_MAX_OUTPUTS; ++s)
    if ((int)rb.out[s].size() >= it && rb.out[s][it - 1].ptr)
      mprotect(rb.out[s][it - 1].region, rb.out[s][it - 1].region_len, PROT_NONE);
  (void)m;
  set_current_call(0);
}

void Arena::fill_ctx(int rank, const Manifest& m, cuco_ctx* c) const {
  memset(c, 0, sizeof(*c));
  const RankBufs& rb = ranks[rank];
  c->rank = rank;
  c->world = m.world;
  c->num_sms = m.num_sms;
  c->dtype = m.dtype;
  memcpy(c->dims, m.dims, sizeof(c->dims));
  c->symm = rb.symm.ptr;
  c->symm_bytes = rb.symm.n;
  for (int r = 0; r < m.world; ++r) {
    c->peer_symm[r] = ranks[r].symm.ptr;
    c->peer_signals[r] = reinterpret_cast<uint64_t*>(ranks[r].signals.ptr);
  }
  c->signals = reinterpret_cast<uint64_t*>(rb.signals.ptr);
  c->workspace = rb.workspace.ptr;
  c->workspace_bytes = rb.workspace.n;
  c->comm = nullptr;
}

void Arena::poison_rank(int rank) const {
  // 0xFF bytes are NaN in fp32, fp16 and bf16: data never sent shows up.
  const RankBufs& rb = ranks[rank];
  for (const Buf* b : {&rb.symm, &rb.workspace})
    if (b->ptr) memset(b->ptr, 0xFF, b->n);
}

void Arena::poison_workspace(int rank) const {
  const Buf& w = ranks[rank].workspace;
  if (w.ptr) memset(w.ptr, 0xFF, w.n);
}

std::string Arena::check_red_zones(int rank) const {
  for (const RedZone& z : red) {
    if (z.owner >= 0 && z.owner != rank) continue;
    size_t i = 0;
    while (i < z.n && z.lo[i] == kCanary) ++i;
    if (i == z.n) continue;
    char line[320];
    const unsigned char* at = z.lo + i;
    if (z.after)
      snprintf(line, sizeof line, "out-of-bounds write %zu bytes past the end of %s",
               (size_t)(at - (const unsigned char*)z.buf - z.buf_n), z.name);
    else
      snprintf(line, sizeof line, "out-of-bounds write %zu bytes before the start of %s (or beyond the guard page "
               "after the buffer in front of it)", (size_t)((const unsigned char*)z.buf - at), z.name);
    return line;
  }
  return "";
}

}  // namespace cuco_emu
