// cuco CPU emulator: __shared__ memory. Every block has its own arena: a static region where
// each __shared__ declaration site gets the same offset in every block (laid out on first
// execution), then the dynamic region, which ends at a PROT_NONE guard page so overruns fault.
// Arenas are poisoned with 0xFF bytes when a block starts (lazily for the static region), so
// reading shared memory nobody wrote in this block shows up as NaN or garbage.
#include <string.h>
#include <sys/mman.h>
#include <algorithm>
#include "emu_internal.h"

namespace cuco_emu {
namespace {
constexpr size_t kStaticShared = 1 << 20;  // virtual room for every static __shared__ site
std::vector<std::pair<size_t, char*>> g_free_arenas;  // (dynamic pages, mapping)
size_t g_static_top = 0;  // static shared bytes laid out so far

char* arena_get(size_t dyn_pages) {
  for (size_t i = 0; i < g_free_arenas.size(); ++i) {
    if (g_free_arenas[i].first == dyn_pages) {
      char* a = g_free_arenas[i].second;
      g_free_arenas[i] = g_free_arenas.back();
      g_free_arenas.pop_back();
      return a;
    }
  }
  const size_t len = kStaticShared + (dyn_pages + 1) * 4096;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) fail(5, "cannot map %zu bytes of shared memory", len);
  mprotect(static_cast<char*>(p) + len - 4096, 4096, PROT_NONE);
  return static_cast<char*>(p);
}
}  // namespace

void block_arena_get(Block* b, size_t smem) {
  const size_t pages = (smem + 4095) / 4096;
  b->arena = arena_get(pages);
  b->arena_key = pages;
  b->dyn = b->arena + kStaticShared + pages * 4096 - ((smem + 15) & ~size_t(15));
  memset(b->dyn, 0xFF, smem);
  b->static_wm = 0;
}

void block_arena_put(Block* b) { g_free_arenas.emplace_back(b->arena_key, b->arena); }

void* shared_alloc(cuco_shared_site* site, size_t bytes, size_t align, size_t natural) {
  Fiber* f = current();
  if (!f || !f->block) not_emulatable("__shared__ variable used outside a kernel");
  if (!site->off_plus1) {
    const size_t a = std::max<size_t>({16, align, natural});
    const size_t off = (g_static_top + a - 1) / a * a;
    if (off + bytes > kStaticShared) not_emulatable("more than 1 MiB of static __shared__ memory");
    site->off_plus1 = off + 1;
    g_static_top = off + bytes;
  }
  Block* b = f->block;
  const size_t off = site->off_plus1 - 1, end = off + bytes;
  if (end > b->static_wm) {  // poison lazily: only the part of the region this block uses
    memset(b->arena + b->static_wm, 0xFF, end - b->static_wm);
    b->static_wm = end;
  }
  return b->arena + off;
}

void* dynamic_smem() {
  Fiber* f = current();
  if (!f || !f->block) not_emulatable("extern __shared__ memory used outside a kernel");
  return f->block->dyn;
}

bool addr_in_current_dyn_guard(const void* addr) {
  const Fiber* f = current();
  if (!f || !f->block) return false;
  const char* guard = f->block->arena + kStaticShared + f->block->arena_key * 4096;
  return (const char*)addr >= guard && (const char*)addr < guard + 4096;
}
}  // namespace cuco_emu
