// cuco CPU emulator: warp-level intrinsics. Lanes are consecutive linear thread ids in groups of
// 32. A warp operation deposits the lane's value and waits until every lane named in its mask
// (that still exists) has arrived; the last one computes every participant's result at once,
// so no lane can overwrite its deposit before the others have read it.
#include <stdarg.h>
#include <unistd.h>
#include "emu_internal.h"

namespace cuco_emu {
namespace {
constexpr unsigned long long kPoison = ~0ull;  // reading a lane that did not take part

unsigned long long lane_value(const Fiber* lanes, unsigned need, int src) {
  if (src < 0 || src >= 32 || !(need & (1u << src))) return kPoison;
  return lanes[src].wval;
}

unsigned long long reduce(int op, const Fiber* lanes, unsigned need) {
  unsigned long long acc = 0;
  bool first = true;
  for (unsigned m = need; m; m &= m - 1) {
    const unsigned v = (unsigned)lanes[__builtin_ctz(m)].wval;
    if (first) {
      acc = v;
      first = false;
      continue;
    }
    switch (op) {
      case kRedAdd: acc = (unsigned)(acc + v); break;
      case kRedMin: acc = v < (unsigned)acc ? v : acc; break;
      case kRedMax: acc = v > (unsigned)acc ? v : acc; break;
      case kRedMinS: acc = (unsigned)((int)v < (int)acc ? (int)v : (int)acc); break;
      case kRedMaxS: acc = (unsigned)((int)v > (int)acc ? (int)v : (int)acc); break;
      case kRedAnd: acc &= v; break;
      case kRedOr: acc |= v; break;
      default: acc ^= v; break;
    }
  }
  return acc;
}

unsigned long long result_for(const Fiber* lanes, unsigned need, unsigned l) {
  const Fiber& F = lanes[l];
  const int w = F.wwidth, seg = (int)(l & ~(unsigned)(w - 1));
  unsigned bits = 0;
  switch (F.wop) {
    case kSync: return 0;
    case kIdx: return lane_value(lanes, need, seg + (F.warg & (w - 1)));
    case kUp: {
      const int src = (int)l - F.warg;
      return src < seg ? F.wval : lane_value(lanes, need, src);
    }
    case kDown: {
      const int src = (int)l + F.warg;
      return src >= seg + w ? F.wval : lane_value(lanes, need, src);
    }
    case kXor: {
      const int src = (int)(l ^ (unsigned)F.warg);
      return (src < seg || src >= seg + w) ? F.wval : lane_value(lanes, need, src);
    }
    case kBallot:
    case kAll:
    case kAny:
      for (unsigned m = need; m; m &= m - 1)
        if (lanes[__builtin_ctz(m)].wval) bits |= 1u << __builtin_ctz(m);
      return F.wop == kBallot ? bits : F.wop == kAll ? (bits == need) : (bits != 0);
    case kMatchAny:
      for (unsigned m = need; m; m &= m - 1)
        if (lanes[__builtin_ctz(m)].wval == F.wval) bits |= 1u << __builtin_ctz(m);
      return bits;
    case kMatchAll:
      for (unsigned m = need; m; m &= m - 1)
        if (lanes[__builtin_ctz(m)].wval != F.wval) return 0;
      return need;
    default: return reduce(F.wop, lanes, need);
  }
}

void complete_group(Block* b, unsigned w, unsigned need) {
  Fiber* lanes = &b->threads[w * 32];
  for (unsigned m = need; m; m &= m - 1) {
    const unsigned l = __builtin_ctz(m);
    lanes[l].wres = result_for(lanes, need, l);
  }
  b->warps[w].arrived &= ~need;
  for (unsigned m = need; m; m &= m - 1) {
    Fiber& f = lanes[__builtin_ctz(m)];
    if (f.state == St::Barrier) wake_fiber(&f);  // the caller itself is still running
  }
}

unsigned group_of(const Block* b, unsigned w, unsigned l) {
  const Fiber& f = b->threads[w * 32 + l];
  return (f.wmask & b->warps[w].live) | (1u << l);
}

int sane_width(int width) { return (width >= 1 && width <= 32 && !(width & (width - 1))) ? width : 32; }
}  // namespace

void check_warp_groups(Block* b, unsigned w) {
  Warp& W = b->warps[w];
  bool again = true;
  while (again) {
    again = false;
    for (unsigned m = W.arrived; m; m &= m - 1) {
      const unsigned need = group_of(b, w, __builtin_ctz(m));
      if ((W.arrived & need) == need) {
        complete_group(b, w, need);
        again = true;
        break;
      }
    }
  }
}

unsigned long long warp_op(int op, unsigned mask, unsigned long long val, int arg, int width) {
  Fiber* f = current();
  if (!f || !f->block) not_emulatable("warp intrinsic outside a kernel");
  Block* b = f->block;
  const unsigned w = f->linear / 32, l = f->linear % 32;
  f->wop = (uint8_t)op;
  f->wmask = mask;
  f->wval = val;
  f->warg = arg;
  f->wwidth = sane_width(width);
  Warp& W = b->warps[w];
  W.arrived |= 1u << l;
  const unsigned need = group_of(b, w, l);
  if ((W.arrived & need) == need) {
    complete_group(b, w, need);
    yield_as(St::Runnable);  // lower lanes continue first
  } else {
    f->wait = kWarpBar;
    yield_as(St::Barrier);
  }
  return f->wres;
}

unsigned active_mask() {
  Fiber* f = current();
  if (!f || !f->block) return 1u;
  return f->block->warps[f->linear / 32].live;
}

void not_emulatable(const char* what) {
  char who[96];
  describe_fiber(current(), who, sizeof who);
  fprintf(stderr, "not emulatable: %s (%s)\n", what, who);
  fflush(stderr);
  fflush(stdout);
  _exit(6);
}

void trap(const char* what) {
  char who[96];
  describe_fiber(current(), who, sizeof who);
  fprintf(stderr, "trap: %s in %s\n", what, who);
  fflush(stderr);
  abort();
}

void fail(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  fflush(stdout);
  _exit(code);
}
}  // namespace cuco_emu
