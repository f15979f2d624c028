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
    for p in ds.valid_points(PATTERN, ds.get_profile("H100"))[::13]:
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
    inside = SOURCE.replace("#define THREADS 256", "#define THREADS 128")
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
    assert (time.perf_counter() - start) / 5 < 0.5  # g++ -E of one candidate: ~25 ms here
