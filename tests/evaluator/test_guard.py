"""The guard rejects what must never reach a build, each with a reason."""

import pytest

import design_space as ds
from evaluator import guard

PATTERN = ds.get_pattern("allgather_gemm")
POINT = ds.DesignPoint.parse_key("lsa/stream_overlap/per_peer_signal/warp/64K/4")
SOURCE = PATTERN.render(POINT)


def _rules(src, **kw):
    return {f.rule for f in guard.check(src, **kw)}


def test_rendered_templates_pass_the_guard():
    for p in ds.valid_points(PATTERN, ds.get_profile("H100"))[::50]:  # every family: the sample test below
        assert guard.check(PATTERN.render(p), point=p) == []


@pytest.mark.parametrize("snippet, category", [
    ('system("curl x");', "process control"), ('FILE* f = fopen("/etc/passwd", "r");', "file access"),
    ("int s = socket(2, 1, 0);", "network access"), ('const char* k = getenv("OPENAI_API_KEY");', "environment"),
    ('void* h = dlopen("libx.so", 0);', "dynamic loading"), ("cudaDeviceReset();", "device reset"),
    ("long long t0 = clock64();", "timer"), ("float ms; cudaEventElapsedTime(&ms, a, b);", "timer"),
    ("pid_t p = fork();", "process control"),
])
def test_banned_calls_are_rejected_with_their_category(snippet, category):
    src = SOURCE.replace("// EVOLVE-BLOCK-END", f"static void bad() {{ {snippet} }}\n// EVOLVE-BLOCK-END", 1)
    findings = [f for f in guard.check(src) if f.rule == "banned_call"]
    assert findings and category in findings[0].reason and findings[0].line > 0


def test_banned_names_in_comments_and_strings_are_ignored():
    src = SOURCE.replace("// EVOLVE-BLOCK-END", '// never call system() or getenv()\nstatic const char* s = "fork()";\n'
                         "// EVOLVE-BLOCK-END", 1)
    assert "banned_call" not in _rules(src)


def test_clock_register_asm_is_rejected():
    src = SOURCE.replace("// EVOLVE-BLOCK-END", 'static __device__ unsigned long long t() { unsigned long long v; '
                         'asm volatile("mov.u64 %0, %globaltimer;" : "=l"(v)); return v; }\n// EVOLVE-BLOCK-END', 1)
    assert "banned_call" in _rules(src)


def test_foreign_includes_are_rejected():
    assert "include_not_allowed" in _rules("#include <unistd.h>\n" + SOURCE)


def test_missing_or_broken_markers_are_rejected():
    assert "evolve_markers" in _rules(SOURCE.replace("// EVOLVE-BLOCK-END", ""))
    assert "evolve_markers" in _rules(SOURCE.replace("EVOLVE-BLOCK-START", "").replace("EVOLVE-BLOCK-END", ""))


def test_frozen_region_must_match_the_parent():
    inside = SOURCE.replace("#define COMM_THREADS 256", "#define COMM_THREADS 128")
    assert guard.check(inside, parent_source=SOURCE) == []
    outside = SOURCE.replace("p.Nl = p.N / c.world;", "p.Nl = p.N / c.world + 1;")
    assert "frozen_region_changed" in _rules(outside, parent_source=SOURCE)


def test_entry_point_is_required():
    assert "entry_point" in _rules(SOURCE.replace('extern "C" int cuco_run', "int cuco_run_x"))


@pytest.mark.parametrize("declared, rule", [
    ("lsa/fused_persistent/per_peer_signal/warp/64K/4", "point_placement"),
    ("lsa/sequential/global_barrier/warp/64K/4", "point_placement"),
    ("lsa/stream_overlap/per_peer_signal/cta/64K/4", "point_issuer"),
    ("lsa/stream_overlap/per_peer_signal/warp/256K/4", "point_chunk_bytes"),
    ("lsa/stream_overlap/per_peer_signal/warp/64K/8", "point_comm_ctas"),
    ("lsa/stream_overlap/global_barrier/warp/64K/4", "point_sync_scope"),
])
def test_declared_point_must_match_the_code(declared, rule):
    assert rule in _rules(SOURCE, point=ds.DesignPoint.parse_key(declared))


def _inject(code):
    return SOURCE.replace("// EVOLVE-BLOCK-END", code + "\n// EVOLVE-BLOCK-END", 1)


@pytest.mark.parametrize("obfuscated", [
    # token pasting: the name only exists after macro expansion
    '#define F(a, b) a##b\nstatic const char* k() { return F(get, env)("OPENAI_API_KEY"); }',
    # an object-like macro standing for the call
    '#define ENV_OF getenv\nstatic const char* k() { return ENV_OF("OPENAI_API_KEY"); }',
    # a function-pointer alias, never called by name
    "static int (*const mk)(int, int, int) = socket;",
    "static auto const mk = &socket;",
    "static int (*const c)(int, const void*, unsigned) = ::connect;",
    # the process environment through the libc global
    "extern char** environ;",
    "extern char** __environ;",
    # an asm label renaming a declaration to a banned symbol
    'extern "C" int spawn(void) __asm__("fork");',
    # an alias attribute
    'extern "C" char* lookup(const char*) __attribute__((weakref("getenv")));',
    # a raw system call
    'static void s() { __asm__ volatile("syscall"); }',
    'static void s() { asm("mov $57, %%eax\\n\\tsyscall" ::: "rax"); }',
    # cycle counters and the timer registers' halves
    'static unsigned long long t() { unsigned lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); return lo; }',
    'static __device__ unsigned t() { unsigned v; asm volatile("mov.u32 %0, %globaltimer_lo;" : "=r"(v)); return v; }',
    "static unsigned long long t() { return __builtin_ia32_rdtsc(); }",
    # leaving the process group the sandbox kills
    "static void s() { setsid(); }",
])
def test_obfuscated_banned_calls_are_rejected(obfuscated):
    assert "banned_call" in _rules(_inject(obfuscated)), obfuscated


@pytest.mark.parametrize("include", [
    "#include <unistd.h>", "%:include <sys/socket.h>", "#inc\\\nlude <stdlib.h>", "#define H <unistd.h>\n#include H",
    "#include_next <cuda_runtime.h>", '#include "/dev/zero"',
])
def test_hidden_includes_are_rejected(include):
    assert "include_not_allowed" in _rules(include + "\n" + SOURCE)


def test_a_name_hidden_by_macros_is_reported_after_expansion():
    src = _inject('#define F(a, b) a##b\nstatic int s() { return F(sock, et)(2, 1, 0); }')
    reasons = [f.reason for f in guard.check(src) if f.rule == "banned_call"]
    assert any("socket" in r and "after macro expansion" in r for r in reasons), reasons


def test_ordinary_words_and_member_names_are_not_calls():
    src = _inject("struct Ev { int fork, join; };\nstatic int w(Ev* e, int time) { int open = e->fork + time; "
                  "return open; }")
    assert "banned_call" not in _rules(src)


def test_broken_directives_are_reported():
    assert "preprocess" in _rules(_inject("#if 1\nstatic int x;"))


def test_the_guard_costs_well_under_a_build():
    import time
    start = time.perf_counter()
    for _ in range(5):
        guard.check(SOURCE, point=POINT)
    assert (time.perf_counter() - start) / 5 < 0.5  # four g++ -E passes in one sandbox call: ~0.1 s here


def _sample_of_every_family():
    import random
    out = []
    for name in ds.pattern_names():
        pattern = ds.get_pattern(name)
        points = ds.valid_points(pattern, ds.get_profile("H100")) + ds.valid_points(pattern, ds.get_profile("A100"))
        out += [(pattern, p) for p in random.Random(name).sample(points, 3)]
    return out


@pytest.mark.parametrize("pattern, point", _sample_of_every_family(),
                         ids=lambda v: v.key() if isinstance(v, ds.DesignPoint) else v.name)
def test_honest_renders_of_every_family_have_no_findings(pattern, point):
    assert guard.check(pattern.render(point), point=point) == []


def _in_function(code):
    return _inject(f"static void bad(int fd, char* buf) {{ {code} }}")


@pytest.mark.parametrize("snippet, category", [
    ('fopen64("/etc/hostname", "r");', "file access"), ('open64("/etc/hostname", 0);', "file access"),
    ('openat64(-100, "x", 0);', "file access"), ('creat64("x", 0);', "file access"),
    ('truncate64("x", 0);', "file access"),
    ("posix_spawnp(0, \"sh\", 0, 0, 0, 0);", "process control"),
    ("posix_spawn_file_actions_init(0);", "process control"), ('execvpe("sh", 0, 0);', "process control"),
    ("fexecve(fd, 0, 0);", "process control"), ('symlinkat("/", -100, "x");', "file access"),
    ('unlinkat(-100, "x", 0);', "file access"), ('linkat(-100, "a", -100, "b", 0);', "file access"),
    ('renameat2(-100, "a", -100, "b", 0);', "file access"), ('mkdirat(-100, "x", 0);', "file access"),
    ('fchmodat(-100, "x", 0, 0);', "file access"), ('faccessat(-100, "x", 0, 0);', "file access"),
    ("_Exit(0);", "ending the process"), ("quick_exit(0);", "ending the process"),
    ("at_quick_exit(0);", "ending the process"), ("atexit(0);", "ending the process"),
    ("abort();", "ending the process"),
    ('memfd_create("x", 0);', "memory mapping"), ("process_vm_readv(1, 0, 0, 0, 0, 0);", "process control"),
    ("process_vm_writev(1, 0, 0, 0, 0, 0);", "process control"), ("mmap64(0, 1, 3, 34, -1, 0);", "memory mapping"),
    ("mremap(buf, 1, 2, 0);", "memory mapping"), ("madvise(buf, 1, 0);", "memory mapping"),
    ("dup(fd);", "file access"), ("dup2(fd, 1);", "file access"), ("dup3(fd, 1, 0);", "file access"),
    ("read(fd, buf, 1);", "file access"), ("write(fd, buf, 1);", "file access"),
    ("pread(fd, buf, 1, 0);", "file access"), ("pwrite(fd, buf, 1, 0);", "file access"),
    ("ioctl(fd, 0);", "file access"), ("fcntl(fd, 0);", "file access"), ('fprintf(stderr, "x");', "file access"),
    ("signal(11, 0);", "signals"), ("sigaction(11, 0, 0);", "signals"), ("setjmp(0);", "signals"),
    ("longjmp(0, 1);", "signals"), ("pthread_create(0, 0, 0, 0);", "threads"), ("pthread_kill(0, 9);", "threads"),
    ("std::thread t([] {});", "threads"), ('dlsym(0, "getenv");', "dynamic loading"),
    ("cudaIpcOpenMemHandle(0, {}, 0);", "device reset or global device state"),
])
def test_every_spelling_of_an_escape_is_a_banned_call(snippet, category):
    findings = [f for f in guard.check(_in_function(snippet)) if f.rule == "banned_call"]
    assert findings and category in findings[0].reason, (snippet, findings)


def test_ordinary_words_in_declarations_and_members_are_not_calls():
    src = _inject("struct Io { int read, write; };\nstatic size_t offsets(Io* io) { size_t a, send, recv, b = 0; "
                  "a = send = recv = (size_t)io->read; return a + b + send + recv; }")
    assert "banned_call" not in _rules(src)


@pytest.mark.parametrize("code, name", [
    ("static int cpu_only() {\n#ifndef CUCO_COMM_CPU\n  return 0;\n#endif\n  return 1; }", "CUCO_COMM_CPU"),
    ("#if defined(CUCO_COMM_NCCL)\nstatic int x = 1;\n#endif", "CUCO_COMM_NCCL"),
    ("#ifdef CUCO_COMM_CPU_H_\nstatic int x = 1;\n#endif", "CUCO_COMM_CPU_H_"),
    ('static void w() { cuco_emu_block_wait("x", 0, 0, 0); }', "cuco_emu_block_wait"),
    ("static void w() { cuco_emu::fence_yield(); }", "cuco_emu"),
    ("static int g() { return cuco_gpu_sm_share; }", "cuco_gpu_sm_share"),
    ("static void* s() { return cuco_dynamic_smem(); }", "cuco_dynamic_smem"),
    ("#define PASTE(a, b) a##b\nstatic void w() { PASTE(cuco_emu, _block_wait)(\"x\", 0, 0, 0); }",
     "cuco_emu_block_wait"),
])
def test_internal_names_are_rejected(code, name):
    findings = [f for f in guard.check(_inject(code)) if f.rule == "internal_name"]
    assert findings and any(f.reason.startswith(name) and "every build" in f.reason for f in findings), findings


@pytest.mark.parametrize("code", [
    "#ifdef __CUDA_ARCH__\nstatic int path() { return 1; }\n#else\nstatic int path() { return 2; }\n#endif",
    "#if __CUDA_ARCH__ >= 900\nstatic int fast = 1;\n#endif",
    "#ifndef __CUDACC__\nstatic int emulated = 1;\n#endif",
    "static int arch() { return __CUDA_ARCH__; }",
    "#ifdef CUDART_VERSION\nstatic int real_cuda = 1;\n#endif",
    "#if __CUDACC_VER_MAJOR__ == 13\nstatic int nvcc13 = 1;\n#endif",
    "#if __has_include(<cublas_v2.h>)\nstatic int has_blas = 1;\n#endif",
])
def test_code_that_differs_between_builds_is_rejected(code):
    findings = [f for f in guard.check(_inject(code)) if f.rule == "build_dependent_code"]
    assert findings and findings[0].line > 0 and "every build" in findings[0].reason, guard.check(_inject(code))


def test_the_first_differing_line_is_named():
    src = _inject("#ifdef __CUDA_ARCH__\nstatic int path = 1;\n#endif")
    line = src.splitlines().index("static int path = 1;") + 1
    assert [f.line for f in guard.check(src) if f.rule == "build_dependent_code"] == [line]


def test_macros_the_candidate_defines_itself_may_be_tested():
    src = _inject("#ifndef TILE\n#define TILE 64\n#endif\n#if TILE > 32\nstatic int big_tiles = TILE;\n#endif")
    assert guard.check(src) == []


@pytest.mark.parametrize("asm", [
    'asm(".incbin \\"/etc/hostname\\"");',  # file scope
    'static __device__ void f() { asm volatile(".incbin \\"/etc/hostname\\""); }',
    'static __device__ void f() { asm volatile(".byte 0x0f, 0x05"); }',
    'static __device__ void f() { asm volatile(".fill 1000000000, 1, 0"); }',
    'static __device__ void f() { asm volatile("mov.u32 %0, 1;\\n\\t.section .init_array" : "=r"(x)); }',
    'static __device__ void f() { asm volatile(".include \\"/etc/passwd\\""); }',
    'static __host__ __device__ void f() { asm volatile("movq $60, %%rax" ::: "rax"); }',
    'static void f() { asm volatile("lock; xaddl %0, %1" : "+r"(x), "+m"(y)); }',
    'extern "C" int f(void) __asm__("f\\n.incbin \\"/etc/hostname\\"");',
    '#define DIRECTIVE ".incbin \\"/etc/hostname\\""\nstatic __device__ void f() { asm volatile(DIRECTIVE); }',
])
def test_inline_asm_that_is_not_ptx_is_rejected(asm):
    src = _inject("static int x, y;\n" + asm)
    assert "asm_not_ptx" in _rules(src), guard.check(src)


@pytest.mark.parametrize("ptx", [
    'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, '
    '{%0,%1,%2,%3};" : "+f"(a), "+f"(b), "+f"(c), "+f"(d) : "r"(e), "r"(e), "r"(e), "r"(e), "r"(e), "r"(e));',
    'asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(e), "=r"(e), "=r"(e), "=r"(e) : "l"(p));',
    'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n" :: "r"(e), "l"(p));',
    'asm volatile("{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %1, 0;\\n\\t@p mov.u32 %0, 1;\\n}" : "=r"(e) : "r"(e));',
    'asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];" : "=f"(a) : "l"(p) : "memory");',
    'asm volatile("mov.u32 %0, %%laneid;" : "=r"(e)); asm volatile("bar.sync 0;"); asm volatile("membar.gl;");',
])
def test_ptx_inline_asm_passes(ptx):
    src = _inject("static __device__ void f(const void* p) { float a = 0, b = 0, c = 0, d = 0; unsigned e = 0; "
                  + ptx + " }")
    assert "asm_not_ptx" not in _rules(src), guard.check(src)


def test_comments_outside_the_evolve_blocks_may_change():
    edited = SOURCE.replace("// EVOLVE-BLOCK-START", "// a note from the mutation\n// EVOLVE-BLOCK-START", 1)
    assert guard.check(edited, parent_source=SOURCE) == []
