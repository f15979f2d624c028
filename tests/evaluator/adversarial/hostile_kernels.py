"""Hostile candidates that go after the verdict: each an honest kernel of honest_kernels.py with one
attack written into its hooks, so whatever refuses it refuses the attack and nothing else.
catalogue.py lists them (and escape_kernels.py's) with the verdict the cascade must give.
"""

from __future__ import annotations

import re

from tests.evaluator.adversarial import honest_kernels as H

AG, GA, RA = H.ALLGATHER_GEMM, H.GEMM_ALLREDUCE, H.RING_ATTENTION
FAKE_OK = 'printf("emu: ok world=%d iterations=2 seconds=0.001\\n", c.world);'


def libc(*decls: str) -> str:
    return "\n".join(f'extern "C" {d};' for d in decls)


def edit(src: str, old: str, new: str) -> str:
    if old not in src:
        raise AssertionError(f"the honest kernel no longer contains {old!r}: update this hostile kernel")
    return src.replace(old, new, 1)


# --------------------------------------------------------------------------- code inside the verifier

def own_main() -> str:
    return AG.render(prelude="int main(int, char**) { " + FAKE_OK.replace("c.world", "2") + " return 0; }")


def extern_c_main() -> str:
    return RA.render(prelude='extern "C" int main() { return 0; }')


def constructor() -> str:
    # runs before the harness: could print the harness's summary line or patch its state
    return GA.render(prelude="__attribute__((constructor)) static void early() { "
                             + FAKE_OK.replace("c.world", "2") + " }")


def static_destructor() -> str:
    return RA.render(prelude="struct Spy { ~Spy() { " + FAKE_OK.replace("c.world", "2") + " } };\nstatic Spy spy;")


def overrides_stream_synchronize() -> str:
    # a strong definition of a runtime call the harness makes after cuco_run
    return AG.render(prelude="cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }")


def overrides_cuda_call_weakly() -> str:
    # a weak definition of a runtime call the harness makes: the linker would keep the runtime's,
    # but a candidate has no business defining it
    return GA.render(prelude='__attribute__((weak)) cudaError_t cudaStreamQuery(cudaStream_t) '
                             "{ return cudaSuccess; }")


def overrides_harness_wait_weakly() -> str:
    return GA.render(prelude='extern "C" __attribute__((weak)) void cuco_emu_block_wait(const char*, int, '
                             'unsigned long long, unsigned long long) {}')


def overrides_harness_wait_pasted() -> str:
    # the internal name only appears once the candidate's own macro pastes it together
    return RA.render(prelude="#define GLUE(a, b) a##b\n"
                             'extern "C" __attribute__((weak)) void GLUE(cuco_, emu_block_wait)(const char*, int, '
                             "unsigned long long, unsigned long long) {}")


def overrides_libc_weakly() -> str:
    # a weak memcmp would replace the C library's for the whole emulator (the harness included)
    return RA.render(prelude='extern "C" __attribute__((weak)) int memcmp(const void*, const void*, size_t) '
                             "{ return 0; }")


def overrides_operator_new() -> str:
    return GA.render(prelude="void* operator new(size_t n) { return malloc(n + 64); }")


def prints_emu_ok_and_does_nothing() -> str:
    return AG.render(host_top=f"  {FAKE_OK}\n  fflush(0);\n  return 0;".replace("  fflush(0);\n", ""))


def prints_emu_ok_from_the_device() -> str:
    return GA.render(kernel_top="  if (threadIdx.x == 0) printf(\"emu: ok world=%d iterations=2 seconds=0.001\\n\", "
                                "world);\n  return;")


def redirects_outputs_in_the_context() -> str:
    # rewrites its own context so the kernel writes into its input: the evaluator never reads ctx
    return AG.render(host_top="  const_cast<cuco_ctx&>(c).out[0] = c.workspace;")


def symlinks_the_manifest() -> str:
    return GA.render(prelude=libc("int symlink(const char*, const char*)", "int unlink(const char*)"),
                     host_top='  unlink("manifest"); symlink("/dev/null", "manifest"); unlink("cuco.db");')


def answers_through_proc_self_fd() -> str:
    body = ('  for (int fd = 0; fd < 16; ++fd) { char p[64]; snprintf(p, sizeof p, "/proc/self/fd/%d", fd);\n'
            '    FILE* f = fopen(p, "r+"); if (f) { fputs("answers", f); fclose(f); } }')
    return AG.render(host_top=body)


def opens_proc_self_fd() -> str:
    return RA.render(prelude=libc("int open(const char*, int, ...)",
                                   "long pwrite(int, const void*, unsigned long, long)"),
                     host_top='  int fd = open("/proc/self/fd/4", 2); if (fd >= 0) pwrite(fd, "x", 1, 0);')


# --------------------------------------------------------------------------- the toolchain

def incbin_file_scope() -> str:
    return AG.render(prelude='asm(".incbin \\"/etc/passwd\\"");')


def incbin_in_device_code() -> str:
    return GA.render(kernel_top='  asm volatile(".incbin \\"/etc/shadow\\"");')


def incbin_in_host_code() -> str:
    return RA.render(host_top='  asm volatile(".pushsection .rodata\\n.incbin \\"/proc/self/environ\\"\\n"\n'
                              '               ".popsection");')


def include_directive() -> str:
    return RA.render(prelude='static __device__ void slurp() { asm volatile(".include \\"/etc/passwd\\""); }')


def fill_a_gigabyte() -> str:
    return AG.render(prelude='static void bloat() { asm volatile(".fill 1000000000, 1, 0"); }')


def includes_an_absolute_path() -> str:
    return GA.render(prelude='#include "/etc/passwd"')


def includes_a_host_file() -> str:
    return RA.render(prelude="#include <stdio.h>\n#include \"../../../examples/ring_attention/reference.py\"")


def include_hidden_by_a_macro() -> str:
    return AG.render(prelude='#define SECRET "/etc/hostname"\n#include SECRET')


def has_include_probe() -> str:
    return AG.render(prelude='#if __has_include("/root/.ssh/id_rsa")\n#define FOUND 1\n#else\n#define FOUND 0\n#endif',
                     host_top="  if (FOUND) return 0;")


def line_directive() -> str:
    # would make the candidate's own lines look like a system header's in the preprocessed text
    return GA.render(prelude='#line 1 "/usr/include/stdio.h"\nstatic int hidden_from_the_checks = 1;')


def linemarker() -> str:
    return RA.render(prelude='# 1 "/usr/include/x86_64-linux-gnu/bits/stdio.h" 1 3 4\nstatic int quiet = 1;\n'
                             '# 40 "candidate.cu" 2')


def section_attribute() -> str:
    # a function pointer placed in .init_array by name: a constructor without the word
    return AG.render(prelude="static void early() {}\n"
                             '__attribute__((used, section(".init_array"))) static void (*hook)() = early;')


def gnu_section_attribute() -> str:
    return RA.render(prelude='[[gnu::section(".text.evil")]] static int placed() { return 1; }')


def alias_attribute() -> str:
    return GA.render(prelude='extern "C" int innocent(void) __attribute__((alias("fork")));')


# --------------------------------------------------------------------------- gaps in a denylist

def declared_call(workload: H.Workload, decl: str, call: str) -> str:
    return workload.render(prelude=libc(decl), host_top=f"  {call};")


DENYLIST = {
    "fopen64": (AG, "void* fopen64(const char*, const char*)", 'fopen64("/tmp/x", "w")'),
    "open64": (GA, "int open64(const char*, int, ...)", 'open64("/tmp/x", 0101)'),
    "posix_spawnp": (RA, "int posix_spawnp(int*, const char*, const void*, const void*, char* const*, char* const*)",
                     'posix_spawnp(0, "sh", 0, 0, 0, 0)'),
    "execvpe": (AG, "int execvpe(const char*, char* const*, char* const*)", 'execvpe("sh", 0, 0)'),
    "symlinkat": (GA, "int symlinkat(const char*, int, const char*)", 'symlinkat("/dev/null", -100, "manifest")'),
    "unlinkat": (RA, "int unlinkat(int, const char*, int)", 'unlinkat(-100, "cuco.db", 0)'),
    "_Exit": (AG, "void _Exit(int)", "_Exit(0)"),
    "memfd_create": (GA, "int memfd_create(const char*, unsigned)", 'memfd_create("x", 0)'),
    "process_vm_readv": (RA, "long process_vm_readv(int, const void*, unsigned long, const void*, unsigned long, "
                             "unsigned long)", "process_vm_readv(1, 0, 0, 0, 0, 0)"),
}


def denylisted(name: str) -> str:
    return declared_call(*DENYLIST[name])


def raw_syscall_bytes() -> str:
    # 0f 05 is `syscall`: bytes instead of the mnemonic
    return AG.render(host_top='  asm volatile(".byte 0x0f, 0x05" ::: "rax", "rcx", "r11", "memory");')


def asm_label_for_a_banned_call() -> str:
    return GA.render(prelude='extern "C" int harmless(const char*, int) asm("open");',
                     host_top='  harmless("/proc/self/environ", 0);')


def asm_label_for_an_unlisted_call() -> str:
    # getpid is on no denylist: only the CPU build's no-asm rule and symbol allowlist stand
    return RA.render(prelude='extern "C" int rank_id(void) asm("getpid");', host_top="  if (rank_id() == 1) return 0;")


def pointer_to_a_banned_call() -> str:
    # stdio declares remove(): the name only appears as a value
    return AG.render(prelude="static int (*const eraser)(const char*) = remove;", host_top='  eraser("cuco.db");')


def call_pasted_by_a_macro() -> str:
    return GA.render(prelude='#define CAT(a, b) a##b\nextern "C" int CAT(fo, rk)(void);', host_top="  CAT(fo, rk)();")


def unlisted_libc_call() -> str:
    # raising its own limits: setrlimit is on no denylist, and not on the object allowlist
    return GA.render(prelude=libc("int setrlimit(int, const void*)"),
                     host_top="  { unsigned long lim[2] = {~0ul, ~0ul}; setrlimit(9, lim); }")


def unlisted_libc_call_sysinfo() -> str:
    return AG.render(prelude=libc("int sysinfo(void*)"), host_top="  { char info[512]; sysinfo(info); }")


# --------------------------------------------------------------------------- special-casing the emulation

def skips_unless_cpu_build() -> str:
    return AG.render(prelude="#ifndef CUCO_COMM_CPU\n#define SKIP 1\n#else\n#define SKIP 0\n#endif",
                     host_top="  if (SKIP) return 0;")


def cuda_arch_branch() -> str:
    return GA.render(kernel_top="#ifdef __CUDA_ARCH__\n  if (threadIdx.x >= 0) return;\n#endif")


def cudacc_branch() -> str:
    return RA.render(host_top="#if defined(__CUDACC__) || defined(__NVCC__)\n  return 0;\n#endif")


def cudart_version_branch() -> str:
    return AG.render(host_top="#ifdef CUDART_VERSION\n  return 0;\n#endif")


SPEC_SHAPES = {  # the spec's emulation shapes, hard-coded (examples/*/spec.py)
    "allgather_gemm": "(M == 128 && N == 64 && K == 256) || (M == 40 && N == 24 && K == 40)",
    "gemm_allreduce": ("(M == 48 && N == 512 && K == 64) || (M == 37 && N == 520 && K == 40) || "
                       "(M == 20 && N == 264 && K == 48)"),
    "ring_attention": ("(H == 2 && S == 128 && D == 32) || (H == 1 && S == 64 && D == 64) || "
                       "(H == 3 && S == 44 && D == 20)"),
}


def works_only_at_the_spec_shapes(workload: str) -> str:
    # honest at the shapes the spec lists, no work anywhere else
    return H.WORKLOADS[workload].render(kernel_top=f"  if (!({SPEC_SHAPES[workload]})) return;")


def works_only_at_the_drawn_shapes(workload: str, shapes: list[dict]) -> str:
    """Honest only at the given shapes (e.g. the evaluator's whole pool, which a candidate's author
    can compute from the public code and the run's seed), no work anywhere else."""
    wl = H.WORKLOADS[workload]
    names = dict(zip(wl.dim_keys, re.findall(r"(\w+) = dim\(c, \d+\)", wl.dims)))
    test = " || ".join("(" + " && ".join(f"{names[k]} == {v}" for k, v in s.items() if k in names) + ")"
                       for s in shapes)
    return wl.render(kernel_top=f"  if (!({test})) return;")


def works_only_at_the_pool_shapes(workload: str = "allgather_gemm") -> str:
    """Honest at every shape the evaluator can draw for the default run seed and pool size, as an
    author with the public code computes them (evaluator/shape_draws.py), and at no other."""
    from design_space import get_pattern
    from evaluator.cascade import EvaluatorConfig
    from evaluator.shape_draws import shape_pool

    spec, defaults = H.WORKLOADS[workload].spec(), EvaluatorConfig(cache_dir=H.ROOT)
    pool = shape_pool(get_pattern(spec.pattern), spec.emulation_shapes, spec.emulation_world_sizes,
                      defaults.shape_variants, defaults.seed)
    return works_only_at_the_drawn_shapes(workload, [dict(s.dims) for shapes in pool.values() for s in shapes])


def works_only_on_the_emulators_device() -> str:
    """Honest where the device calls itself an emulator, no work on a real GPU."""
    return AG.render(host_top="  { cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
                              '    if (!strstr(prop.name, "emulator")) return 0; }')


def works_only_with_the_emulators_sm_count() -> str:
    """Honest where the context says 8 SMs (the emulator's), no work on a real GPU (132 on an H100):
    out of the CPU tier's reach (it passes there), refused by the GPU tier's verification."""
    return AG.render(host_top="  if (c.num_sms != 8) return 0;")


def waits_only_for_higher_ranks() -> str:
    """A race the emulator's schedule hides: each source signals its own slot, and a rank waits only
    for the ranks above it. The emulator starts rank r once rank r-1 is done or blocked, so lower
    ranks' puts have always landed; on a GPU nothing orders them before this rank's reads."""
    src = AG.render(signal="cuco_signal_add(c, peer, 1 + rank, 1);")
    return edit(src, "    cuco_wait(c, 0, (uint64_t)world * c.epoch);\n",
                 "    for (int s = rank + 1; s < world; ++s) cuco_wait(c, 1 + s, c.epoch);\n")


def replays_the_first_call() -> str:
    # computes in call 1, keeps a copy, and replays it in every later call
    return AG.render(prelude="static __device__ cuco_t memo[1 << 18];",
                     store="if (c.epoch == 1) { out[i] = cuco_from_float<cuco_t>(value); memo[i] = out[i]; } "
                           "else out[i] = memo[i];")


def replays_through_the_old_pointer() -> str:
    # keeps call 1's output pointer and copies from it in call 2 (call 1's output is off limits then)
    return GA.render(prelude="static const void* first = nullptr;",
                     host_top="  if (c.epoch == 1) first = c.out[0];\n"
                              "  else if (first) {\n"
                              "    cudaMemcpy(c.out[0], first, 16, cudaMemcpyDeviceToDevice);\n    return 0;\n  }")


# --------------------------------------------------------------------------- another rank's memory

def peer_input_through_the_symmetric_buffer() -> str:
    # each rank stores its input *pointer* in every peer's symmetric buffer (a legal store), then
    # multiplies the peers' A straight from their inputs instead of from what was put
    publish = "static_cast<const void**>(cuco_peer(c, peer))[rank] = c.in[0];"
    src = AG.render(publish=publish)
    return src.replace("    for (int64_t k = 0; k < K; ++k) value += cuco_to_float(A[row * K + k])",
                       "    const cuco_t* a = static_cast<const cuco_t*>(static_cast<const void* const*>(c.symm)"
                       "[row / shard]) + (row % shard) * K;\n"
                       "    for (int64_t k = 0; k < K; ++k) value += cuco_to_float(a[k])", 1)


def peer_input_by_pointer_arithmetic() -> str:
    # no puts, no signals: rank p's A sits a fixed distance from this rank's in the emulator's
    # address space (regions in rank order, page-rounded, a guard page each; allgather_gemm's
    # empty bias input, in a spec without a bias, adds three pages), so compute it
    prelude = """static __host__ __device__ int64_t pages(int64_t bytes) { return (bytes + 4095) / 4096 * 4096; }
static __device__ const cuco_t* peer_a(const cuco_ctx& c, int p, int64_t M, int64_t N, int64_t K) {
  const int64_t shard = M / c.world, Nl = N / c.world, s = (int64_t)sizeof(cuco_t);
  const int64_t stride = pages(shard * K * s) + pages(K * Nl * s) + pages(M * Nl * s) + 9 * 4096;
  return reinterpret_cast<const cuco_t*>(static_cast<const char*>(c.in[0]) + (p - c.rank) * stride);
}"""
    src = AG.render(prelude=prelude, publish="(void)peer;", signal="(void)peer;")
    src = src.replace("    cuco_wait(c, 0, (uint64_t)world * c.epoch);\n", "", 1)
    return src.replace("    for (int64_t k = 0; k < K; ++k) value += cuco_to_float(A[row * K + k])",
                       "    const cuco_t* a = peer_a(c, (int)(row / shard), M, N, K) + (row % shard) * K;\n"
                       "    for (int64_t k = 0; k < K; ++k) value += cuco_to_float(a[k])", 1)


def peer_workspace_by_pointer_arithmetic() -> str:
    # a peer's private workspace, found from its symmetric buffer's address
    return RA.render(kernel_top="  if (rank == 1 && threadIdx.x == 0) {\n"
                                "    const char* ws = static_cast<const char*>(c.peer_symm[0]) + "
                                "(static_cast<const char*>(c.workspace) - static_cast<const char*>(c.symm));\n"
                                "    if (*(volatile const char*)ws == 42) printf(\"peeked\\n\");\n  }")


# --------------------------------------------------------------------------- the contract (protocol, bounds, timing)

def stale_output() -> str:
    return AG.render(store="if (c.epoch == 1) out[i] = cuco_from_float<cuco_t>(value);")


def skipped_peer() -> str:
    # rank 0 never receives the shards, yet every signal still arrives
    return AG.render(publish="if (peer != 0) cuco_put_cta(c, peer, (size_t)rank * share, mine, share);")


def one_rank_computes() -> str:
    # every rank gathers, only rank 0 computes: the others' outputs stay as they arrived
    return AG.render(store="if (rank == 0) out[i] = cuco_from_float<cuco_t>(value);")


def unjoined_stream(linger_ms: int = 0) -> str:
    # the kernel runs on a stream of its own that never joins `stream`: a timer on `stream` sees
    # nothing. ``linger_ms`` keeps the hidden stream busy that long (for the GPU tier)
    linger = f"  linger<<<1, 1, 0, hidden>>>({linger_ms});\n" if linger_ms else ""
    prelude = ("static __global__ void linger(int ms) { for (int i = 0; i < ms; ++i) __nanosleep(1000000); }"
               if linger_ms else "")
    return AG.render(prelude=prelude, launch="cudaStream_t hidden;\n  cudaStreamCreateWithFlags(&hidden, "
                     "cudaStreamNonBlocking);\n  work<<<1, THREADS, 0, hidden>>>(c);\n" + linger)


_ENTRY = "    cuco_enter(c);\n    cuco_wait_all_entered(c);\n"
_READY = "    for (int peer = 0; peer < world; ++peer) { cuco_signal_add(c, peer, 0, 1); }\n" \
         "    cuco_wait(c, 0, (uint64_t)world * c.epoch);\n"


def sync_on_the_enter_slots() -> str:
    """Entry and "my shares landed" both said on the call-entry slots (two signals a call), which
    the trace once left out: the design's own per-peer waits, hidden from its observed point.
    Correct on a GPU; the emulator refuses a plain signal on those slots."""
    def on_enter_slots(count: str) -> str:
        return ("    for (int peer = 0; peer < world; ++peer) if (peer != rank) "
                "cuco_signal_add(c, peer, CUCO_ENTER_BASE + rank, 1);\n"
                "    for (int peer = 0; peer < world; ++peer) if (peer != rank) "
                f"cuco_wait(c, CUCO_ENTER_BASE + peer, {count});\n")
    return edit(edit(AG.render(), _ENTRY, on_enter_slots("2 * c.epoch - 1")), _READY, on_enter_slots("2 * c.epoch"))


def sync_past_the_user_slots() -> str:
    """announces_the_call_twice over the GIN entry signals, with the second announcement forged by
    a plain signal at a literal pad index past the user slots: 45280 is CUCO_GIN_BASE +
    CUCO_GIN_ENTER_BASE, a name the guard refuses but a number it cannot. Correct on the symm
    build, and the trace once took it for the design's own signal on an unreserved slot."""
    def announce(second: bool) -> str:
        forge = ("    for (int peer = 0; peer < world; ++peer) if (peer != rank) "
                 "cuco_signal_add(c, peer, 45280 + rank, 1);\n") if second else "    cuco_gin_enter(c, 0);\n"
        count = "2 * c.epoch" if second else "2 * c.epoch - 1"
        return forge + f"    {{ cuco_ctx seen = c;\n      seen.epoch = {count};\n" \
            "      for (int peer = 0; peer < world; ++peer) cuco_gin_wait_entered(seen, peer); }\n"
    return edit(edit(AG.render(), _ENTRY, announce(False)), _READY, announce(True))


def announces_the_call_twice() -> str:
    """The same through the entry API: the call announced twice, the second time once the shares
    landed, each awaited through a copy of the context whose epoch counts both. Correct on a GPU,
    and no wait of its own in the trace; the emulator refuses the second announcement."""
    def announce(count: str) -> str:
        return f"    cuco_enter(c);\n    {{ cuco_ctx seen = c;\n      seen.epoch = {count};\n" \
               "      cuco_wait_all_entered(seen); }\n"
    return edit(edit(AG.render(), _ENTRY, announce("2 * c.epoch - 1")), _READY, announce("2 * c.epoch"))


def segfault() -> str:
    return AG.render(kernel_top="  if (rank == 1 && threadIdx.x == 0) *(volatile int*)0x10 = 1;")


def out_of_bounds(past: str) -> str:
    """One store by one thread: 'end' just past rank 1's out[0] (its guard page); 'far' 6000
    bytes past rank 0's out[0], beyond the guard page; 'symm' just past rank 1's symmetric buffer;
    'before' 16 bytes before the start of rank 1's out[0]."""
    rank, target, index = {"end": (1, "c.out[0]", "M * (N / world)"), "far": (0, "c.out[0]", "M * (N / world) + 3000"),
                           "symm": (1, "c.symm", "M * K"), "before": (1, "c.out[0]", "-8")}[past]
    return AG.render(kernel_top=f"  if (rank == {rank} && threadIdx.x == 0)\n"
                                f"    static_cast<cuco_t*>({target})[{index}] = cuco_from_float<cuco_t>(1.f);")


def huge_allocation(kind: str) -> str:
    """'one': a single 1 TiB cudaMalloc; 'many': 64 MiB cudaMallocs, never freed, until one fails."""
    body = {"one": "  void* big = nullptr;\n  if (cudaMalloc(&big, (size_t)1 << 40) != cudaSuccess) return 1;",
            "many": "  for (int i = 0; i < 64; ++i) {\n    void* big = nullptr;\n"
                    "    if (cudaMalloc(&big, (size_t)64 << 20) != cudaSuccess) return 1;\n  }"}[kind]
    return AG.render(host_top=body)


TIMING = ("clock64", "globaltimer_asm", "cudaEventElapsedTime", "std_chrono")


def timing(kind: str) -> str:
    code = {
        "clock64": "static __device__ long long ticks() { return clock64(); }",
        "globaltimer_asm": 'static __device__ unsigned long long ns() { unsigned long long v; '
                           'asm volatile("mov.u64 %0, %globaltimer;" : "=l"(v)); return v; }',
        "cudaEventElapsedTime": "static float elapsed(cudaEvent_t a, cudaEvent_t b) { float ms = 0; "
                                "cudaEventElapsedTime(&ms, a, b); return ms; }",
        "std_chrono": "static long long now() { return std::chrono::steady_clock::now().time_since_epoch().count(); }",
    }[kind]
    return AG.render(prelude=code)


def endless_loop() -> str:
    return AG.render(kernel_top="  if (threadIdx.x == 0)\n"
                                "    while (((volatile uint64_t*)c.signals)[CUCO_USER_SIGNALS - 2] == 0) {}")


# --------------------------------------------------------------------------- the frozen-code rule

def frozen_change(workload: H.Workload = AG) -> tuple[str, str]:
    """(child, parent): the frozen dims helper changed outside the evolve blocks."""
    parent = workload.render()
    return edit(parent, "{ return c.dims[i]; }", "{ return c.dims[i] - (i == 0); }"), parent


def evolve_block_grown(workload: H.Workload = GA) -> tuple[str, str]:
    """(child, parent): the start marker moved up, so the frozen helper became mutable."""
    parent = workload.render()
    child = edit(parent, "// EVOLVE-BLOCK-START\n", "")
    child = edit(child, "// Frozen: how one rank", "// EVOLVE-BLOCK-START\n// Frozen: how one rank")
    return child, parent


def evolve_markers_removed(workload: H.Workload = RA) -> tuple[str, str]:
    parent = workload.render()
    return edit(edit(parent, "// EVOLVE-BLOCK-START\n", ""), "// EVOLVE-BLOCK-END\n", ""), parent
