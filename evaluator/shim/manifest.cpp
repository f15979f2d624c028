// cuco CPU emulator: manifest parsing and the shared arena (see manifest.h).
#include "manifest.h"
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sstream>

namespace cuco_emu {
namespace {

bool bad(std::string* err, int line, const std::string& what) {
  *err = "line " + std::to_string(line) + ": " + what;
  return false;
}

bool parse_io(std::istringstream& in, int world, int slots, IoSpec* io) {
  long long nbytes = -1;
  if (!(in >> io->rank >> io->slot >> nbytes)) return false;
  std::getline(in, io->path);
  const size_t b = io->path.find_first_not_of(" \t");
  io->path = b == std::string::npos ? "" : io->path.substr(b);
  io->nbytes = (size_t)nbytes;
  return io->rank >= 0 && io->rank < world && io->slot >= 0 && io->slot < slots && nbytes > 0 && !io->path.empty();
}

bool parse_line(const std::string& key, std::istringstream& in, Manifest* m, std::string* what) {
  if (key == "world") return (bool)(in >> m->world) && m->world >= 1 && m->world <= CUCO_MAX_RANKS;
  if (key == "num_sms") return (bool)(in >> m->num_sms) && m->num_sms >= 1;
  if (key == "iterations") return (bool)(in >> m->iterations) && m->iterations >= 1;
  if (key == "stall_seconds") return (bool)(in >> m->stall_seconds) && m->stall_seconds > 0;
  if (key == "dtype") return (bool)(in >> m->dtype) && m->dtype >= 0 && m->dtype <= 2;
  if (key == "symm_bytes") return (bool)(in >> m->symm_bytes);
  if (key == "workspace_bytes") return (bool)(in >> m->workspace_bytes);
  if (key == "runaway_seconds") return (bool)(in >> m->runaway_seconds) && m->runaway_seconds >= 1;
  if (key == "device_memory_bytes") return (bool)(in >> m->device_memory_bytes);
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
  if (key == "input" || key == "output") {
    if (m->world == 0) {
      *what = "'world' must come before inputs and outputs";
      return false;
    }
    IoSpec io;
    if (!parse_io(in, m->world, key == "input" ? CUCO_MAX_INPUTS : CUCO_MAX_OUTPUTS, &io)) return false;
    std::vector<IoSpec>& list = key == "input" ? m->inputs : m->outputs;
    for (const IoSpec& o : list)
      if (o.rank == io.rank && o.slot == io.slot) {
        *what = "duplicate " + key;
        return false;
      }
    list.push_back(io);
    return true;
  }
  *what = "unknown key '" + key + "'";
  return false;
}

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Red-zone bytes: neither 0 nor 0xFF (the poison), so a stray zero or NaN store shows.
constexpr unsigned char kCanary = 0xCA;
}  // namespace

bool parse_manifest(const char* path, Manifest* m, std::string* err) {
  FILE* f = fopen(path, "r");
  if (!f) {
    *err = std::string("cannot open ") + path;
    return false;
  }
  char buf[4096];
  int line = 0;
  bool ok = true;
  while (ok && fgets(buf, sizeof buf, f)) {
    ++line;
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    std::istringstream in(s);
    std::string key;
    if (!(in >> key) || key[0] == '#') continue;
    std::string what;
    if (!parse_line(key, in, m, &what)) ok = bad(err, line, what.empty() ? "bad value for '" + key + "'" : what);
  }
  fclose(f);
  if (ok && m->world == 0) ok = bad(err, line, "missing 'world'");
  return ok;
}

bool Arena::build(const Manifest& m, std::string* err) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  ranks.assign(m.world, RankBufs{});
  struct Plan {
    Buf* buf;
    size_t n;
    std::string name;
    bool readonly;
    bool poison;  // 0xFF (NaN) instead of the mapping's zeros; signal pads must start at 0
  };
  std::vector<Plan> plan;
  for (int r = 0; r < m.world; ++r) {
    const std::string rk = "rank " + std::to_string(r) + " ";
    RankBufs& rb = ranks[r];
    plan.push_back({&rb.symm, m.symm_bytes, rk + "symmetric buffer", false, true});
    plan.push_back({&rb.signals, CUCO_SIGNAL_SLOTS * sizeof(uint64_t), rk + "signal pad", false, false});
    plan.push_back({&rb.workspace, m.workspace_bytes, rk + "workspace", false, true});
    for (const IoSpec& io : m.inputs)
      if (io.rank == r) plan.push_back({&rb.in[io.slot], io.nbytes, rk + "input " + std::to_string(io.slot), true, false});
    for (const IoSpec& io : m.outputs)
      if (io.rank == r) plan.push_back({&rb.out[io.slot], io.nbytes, rk + "output " + std::to_string(io.slot), false, true});
  }
  // Per buffer: red page, buffer region (ends page-aligned), guard page.
  size_t total = round_up(sizeof(SharedHeader), page) + page;
  for (const Plan& p : plan) total += page + round_up(p.n ? p.n : 1, page) + page;
  char* base = (char*)mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    *err = "cannot map a shared arena of " + std::to_string(total) + " bytes";
    return false;
  }
  header = reinterpret_cast<SharedHeader*>(base);
  size_t off = round_up(sizeof(SharedHeader), page);
  mprotect(base + off, page, PROT_NONE);
  off += page;
  std::string prev;
  auto add_red_zone = [&](unsigned char* lo, size_t n, const Plan& p, bool after) {
    if (n == 0) return;
    memset(lo, kCanary, n);
    RedZone z{lo, n, p.buf->ptr, p.n, after, {}, {}};
    snprintf(z.name, sizeof z.name, "%s", p.name.c_str());
    snprintf(z.prev, sizeof z.prev, "%s", prev.c_str());
    red.push_back(z);
  };
  for (const Plan& p : plan) {
    const size_t region = round_up(p.n ? p.n : 1, page);
    char* red_lo = base + off;
    char* end = red_lo + page + region;
    p.buf->n = p.n;
    p.buf->ptr = p.n ? end - round_up(p.n, 16) : nullptr;
    mprotect(end, page, PROT_NONE);
    if (p.n) {
      CrashRegion cr{(uintptr_t)p.buf->ptr, (uintptr_t)p.buf->ptr + p.n, p.readonly, {}};
      snprintf(cr.name, sizeof cr.name, "%s", p.name.c_str());
      regions.push_back(cr);
      if (p.poison) memset(p.buf->ptr, 0xFF, p.n);
      add_red_zone((unsigned char*)red_lo, (size_t)(p.buf->ptr - red_lo), p, false);
      add_red_zone((unsigned char*)p.buf->ptr + p.n, (size_t)(end - p.buf->ptr - p.n), p, true);
      prev = p.name;
    }
    off += page + region + page;
  }
  for (const IoSpec& io : m.inputs) {
    Buf& b = ranks[io.rank].in[io.slot];
    FILE* f = fopen(io.path.c_str(), "rb");
    const bool ok = f && fread(b.ptr, 1, b.n, f) == b.n;
    if (f) fclose(f);
    if (!ok) {
      *err = "cannot read " + std::to_string(b.n) + " bytes of input from " + io.path;
      return false;
    }
    // Inputs are read-only: a candidate that writes them would change its own later iterations.
    char* lo = (char*)((uintptr_t)b.ptr & ~(uintptr_t)(page - 1));
    mprotect(lo, round_up(b.n, page), PROT_READ);
  }
  header->world = m.world;
  header->stall_seconds = m.stall_seconds;
  header->last_progress_ns = monotonic_ns();
  header->ranks[0].turn = 1;  // rank 0 holds the baton first
  return true;
}

void Arena::fill_ctx(int rank, const Manifest& m, cuco_ctx* c) const {
  memset(c, 0, sizeof(*c));
  const RankBufs& rb = ranks[rank];
  c->rank = rank;
  c->world = m.world;
  c->num_sms = m.num_sms;
  c->dtype = m.dtype;
  memcpy(c->dims, m.dims, sizeof(c->dims));
  for (int s = 0; s < CUCO_MAX_INPUTS; ++s) c->in[s] = rb.in[s].ptr;
  for (int s = 0; s < CUCO_MAX_OUTPUTS; ++s) c->out[s] = rb.out[s].ptr;
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
  // 0xFF bytes are NaN in fp32, fp16 and bf16: unwritten outputs and unsent data show up.
  const RankBufs& rb = ranks[rank];
  for (const Buf* b : {&rb.symm, &rb.workspace, &rb.out[0], &rb.out[1]})
    if (b->ptr) memset(b->ptr, 0xFF, b->n);
}

std::string Arena::check_red_zones() const {
  for (const RedZone& z : red) {
    size_t i = 0;
    while (i < z.n && z.lo[i] == kCanary) ++i;
    if (i == z.n) continue;
    char line[320];
    const unsigned char* at = z.lo + i;
    if (z.after) {
      snprintf(line, sizeof line, "out-of-bounds write %zu bytes past the end of %s", (size_t)(at - (const unsigned char*)z.buf - z.buf_n),
               z.name);
    } else {
      const size_t before = (size_t)((const unsigned char*)z.buf - at);
      if (z.prev[0])
        snprintf(line, sizeof line, "out-of-bounds write %zu bytes before the start of %s (or past the end of %s, beyond "
                 "its guard page)", before, z.name, z.prev);
      else
        snprintf(line, sizeof line, "out-of-bounds write %zu bytes before the start of %s", before, z.name);
    }
    return line;
  }
  return "";
}

}  // namespace cuco_emu
