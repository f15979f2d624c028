"""Hostile candidates, each a small readable edit of a real template render.

Every builder takes the honest render and returns the hostile source; ``edit`` fails loudly when a
template change moves the text an edit anchors on, so a kernel never silently stays honest.
"""

from __future__ import annotations

import design_space as ds

PATTERN = ds.get_pattern("allgather_gemm")
POINT = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/16K/2")

ENTRY = 'extern "C" int cuco_run'
LAUNCH = "  fused_kernel<<<COMM_CTAS + compute, THREADS, 0, stream>>>(c);\n"
STORE = "    if (gr < r1 && gn < p.Nl) C[gr * p.Nl + gn] = cuco_from_float<cuco_t>(acc[j]);"
PUT = "    group_put(c, peer, s.off, s.src, s.bytes);"
EVOLVE_END = "// EVOLVE-BLOCK-END"


def honest() -> str:
    return PATTERN.render(POINT)


def edit(src: str, old: str, new: str) -> str:
    if old not in src:
        raise AssertionError(f"the template no longer contains {old!r}: update this hostile kernel")
    return src.replace(old, new, 1)


def before_entry(src: str, code: str) -> str:
    return edit(src, ENTRY, code + "\n" + ENTRY)


def in_entry(src: str, code: str) -> str:
    """``code`` runs at the top of cuco_run (after ``c`` is bound)."""
    return edit(src, "  const cuco_ctx& c = *ctx;\n", "  const cuco_ctx& c = *ctx;\n" + code + "\n")


def stale_output() -> str:
    # Writes C only in the first call: later calls would pass on a GPU that kept the old buffer.
    return edit(honest(), STORE, STORE.replace("if (gr < r1", "if (c.epoch == 1 && gr < r1"))


def skipped_peer() -> str:
    # Rank 0 never receives the shards (the signal still arrives): it multiplies stale rows.
    return edit(honest(), PUT, "    if (peer != 0) group_put(c, peer, s.off, s.src, s.bytes);")


def one_rank_computes() -> str:
    # Only rank 0 computes; it publishes its C in its own symmetric buffer (its own shard's rows
    # there are unused) and every other rank copies that instead of computing its own columns.
    src = edit(honest(), "  const TileRange all = {0, c.world, 0, p.shard};",
               "  if (c.rank != 0) return;\n  const TileRange all = {0, c.world, 0, p.shard};")
    share = """static __global__ void share_rank0(cuco_ctx c) {
  const Problem p = problem(c);
  const int64_t n = p.M * p.Nl;
  cuco_t* pub = static_cast<cuco_t*>(cuco_peer(c, 0));
  cuco_t* out = static_cast<cuco_t*>(c.out[0]);
  if (c.rank == 0) {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) pub[i] = out[i];
    __syncthreads();
    if (threadIdx.x == 0)
      for (int r = 1; r < c.world; ++r) cuco_signal_add(c, r, CUCO_USER_SIGNALS - 1, 1);
    return;
  }
  if (threadIdx.x == 0) cuco_wait(c, CUCO_USER_SIGNALS - 1, c.epoch);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = pub[i];
}"""
    src = before_entry(src, share)
    return edit(src, LAUNCH, LAUNCH + "  share_rank0<<<1, THREADS, 0, stream>>>(c);\n")


def unjoined_stream(linger_ms: int = 0) -> str:
    # The kernel runs on a stream of its own that never joins `stream`: a timer on `stream`
    # would see an empty region. ``linger_ms`` adds a kernel that keeps the hidden stream busy that
    # long (on a GPU the tiny test shapes finish in microseconds).
    linger = (f"  linger<<<1, 1, 0, hidden>>>({linger_ms});\n" if linger_ms else "")
    src = edit(honest(), LAUNCH, "  cudaStream_t hidden;\n  cudaStreamCreateWithFlags(&hidden, cudaStreamNonBlocking);\n"
               + LAUNCH.replace("0, stream>>>", "0, hidden>>>") + linger)
    if linger_ms:
        src = before_entry(src, "static __global__ void linger(int ms) { for (int i = 0; i < ms; ++i) "
                                "__nanosleep(1000000); }")
    return src


TIMING = {
    "clock64": "static __device__ long long ticks() { return clock64(); }",
    "globaltimer_asm": 'static __device__ unsigned long long ns() { unsigned long long v; '
                       'asm volatile("mov.u64 %0, %globaltimer;" : "=l"(v)); return v; }',
    "cudaEventElapsedTime": "static float elapsed(cudaEvent_t a, cudaEvent_t b) { float ms = 0; "
                            "cudaEventElapsedTime(&ms, a, b); return ms; }",
    "std_chrono": "static long long now() { return std::chrono::steady_clock::now().time_since_epoch().count(); }",
}


def timing(kind: str) -> str:
    return before_entry(honest(), TIMING[kind])


FUSED_START = "  const Problem p = problem(c);\n  if ((int)blockIdx.x < COMM_CTAS) {"


def in_fused_kernel(src: str, code: str) -> str:
    """``code`` runs at the top of the persistent kernel (one launch site, as the point declares)."""
    return edit(src, FUSED_START, FUSED_START.replace("problem(c);\n", "problem(c);\n" + code + "\n"))


def endless_loop() -> str:
    # One thread spins forever on a plain load without yielding (nothing can preempt it).
    return in_fused_kernel(honest(), "  if (blockIdx.x == 0 && threadIdx.x == 0)\n"
                                     "    while (((volatile uint64_t*)c.signals)[CUCO_USER_SIGNALS - 2] == 0) {}")


def segfault() -> str:
    return in_fused_kernel(honest(), "  if (c.rank == 1 && blockIdx.x == 0 && threadIdx.x == 0) *(volatile int*)0x10 = 1;")


def out_of_bounds(past: str) -> str:
    """One store by one thread: 'end' just past rank 1's out[0] (its guard page); 'far' 6000
    bytes past rank 0's out[0], beyond the guard page; 'symm' just past rank 1's symmetric buffer;
    'before' 16 bytes before the start of rank 1's out[0]."""
    rank, target, index = {"end": (1, "c.out[0]", "p.M * p.Nl"), "far": (0, "c.out[0]", "p.M * p.Nl + 3000"),
                           "symm": (1, "c.symm", "p.M * p.K"), "before": (1, "c.out[0]", "-8")}[past]
    return in_fused_kernel(honest(), f"  if (c.rank == {rank} && blockIdx.x == 0 && threadIdx.x == 0)\n"
                                     f"    static_cast<cuco_t*>({target})[{index}] = cuco_from_float<cuco_t>(1.f);")


def huge_allocation(kind: str) -> str:
    """'one': a single 1 TiB cudaMalloc; 'many': 64 MiB cudaMallocs, never freed, until one fails."""
    body = {"one": "  void* big = nullptr;\n  if (cudaMalloc(&big, (size_t)1 << 40) != cudaSuccess) return 1;",
            "many": "  for (int i = 0; i < 64; ++i) {\n    void* big = nullptr;\n"
                    "    if (cudaMalloc(&big, (size_t)64 << 20) != cudaSuccess) return 1;\n  }"}[kind]
    return in_entry(honest(), body)


def fork_bomb(depth: int = 7) -> str:
    # Bounded (2^depth processes), then every process sleeps: a sandbox must end all of them.
    decl = 'extern "C" int fork(void);\nextern "C" int pause(void);'
    body = f"  for (int i = 0; i < {depth}; ++i) fork();\n  for (;;) pause();"
    return in_entry(before_entry(honest(), decl), body)


def network(port: int) -> str:
    # A TCP connect to 127.0.0.1:port, the sockaddr spelled out so no system header is needed.
    decl = ('extern "C" int socket(int, int, int);\nextern "C" int connect(int, const void*, unsigned);\n'
            'extern "C" long write(int, const void*, unsigned long);')
    hi, lo = port >> 8, port & 0xFF
    body = (f"  {{ unsigned char addr[16] = {{2, 0, {hi}, {lo}, 127, 0, 0, 1}};\n"
            "    int s = socket(2, 1, 0);\n"
            "    if (s >= 0 && connect(s, addr, 16) == 0) write(s, \"cuco-escaped\", 12); }")
    return in_entry(before_entry(honest(), decl), body)


def api_key(name: str) -> str:
    # Reads its own environment and every ancestor's /proc/PID/environ; prints what it finds
    # (logs) and copies it into out[0] (outputs), where a harness might hand it on.
    # stdio (snprintf, fprintf) comes with the emulator's CUDA headers; the rest is declared here
    decl = ('extern "C" char* getenv(const char*);\nextern "C" int getppid(void);\n'
            'extern "C" int open(const char*, int, ...);\nextern "C" long read(int, void*, unsigned long);')
    body = f"""  {{ static char found[4096]; long n = 0;
    const char* v = getenv("{name}");
    if (v) n = snprintf(found, sizeof found, "%s", v);
    for (int pid = getppid(), hop = 0; pid > 1 && hop < 4 && n < 2048; ++hop) {{
      char path[64]; snprintf(path, sizeof path, "/proc/%d/environ", pid);
      int fd = open(path, 0);
      if (fd >= 0) {{ long k = read(fd, found + n, sizeof found - 1 - n); if (k > 0) n += k; }}
      snprintf(path, sizeof path, "/proc/%d/stat", pid);
      char stat[512] = {{0}}; int sfd = open(path, 0); pid = 0;
      if (sfd >= 0 && read(sfd, stat, sizeof stat - 1) > 0) {{
        const char* q = stat; while (*q && *q != ')') ++q;
        int ppid = 0; for (q += 4; *q >= '0' && *q <= '9'; ++q) ppid = ppid * 10 + (*q - '0');
        pid = ppid;
      }}
    }}
    for (long i = 0; i < n; ++i) if (!found[i]) found[i] = ' ';
    fprintf(stderr, "leak: %s\\n", found);
    cudaMemcpy(c.out[0], found, n < 64 ? n : 64, cudaMemcpyHostToDevice); }}"""
    return in_entry(before_entry(honest(), decl), body)


def write_outside(path: str) -> str:
    # stdio comes with the emulator's CUDA headers (and with nvcc's)
    body = f'  {{ FILE* f = fopen("{path}", "w"); if (f) {{ fputs("cuco-escaped", f); fclose(f); }} }}'
    return in_entry(honest(), body)


def frozen_change() -> tuple[str, str]:
    """(hostile, parent): the harness's layout helper changed outside the evolve blocks."""
    parent = honest()
    return edit(parent, "  p.Nl = p.N / c.world;", "  p.Nl = p.N / c.world - 1;"), parent


def copies_the_reference(answer_paths: list[str]) -> str:
    """Skips all work and reads the expected output straight from the reference cache (it knows the
    paths: the worst case). Host code: in the emulator device memory is host memory."""
    table = ", ".join(f'"{p}"' for p in answer_paths)
    body = (f"  {{ static const char* answers[] = {{{table}}};\n"
            "    FILE* f = fopen(answers[c.rank], \"rb\"); size_t n = 0;\n"
            "    if (f) { n = fread(c.out[0], 1, 1u << 30, f); fclose(f); }\n"
            "    printf(\"cheat: rank %d read %zu bytes\\n\", c.rank, n); return 0; }")
    return in_entry(honest(), body)
