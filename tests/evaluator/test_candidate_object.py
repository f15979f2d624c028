"""The CPU build's candidate object: honest renders of every family compile and pass the checks;
hostile ones are refused naming the symbol, section or construct, the dangerous ones before the
assembler ever reads them."""

import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import design_space as ds
from evaluator import candidate_object as co
from evaluator import object_symbols, shim_build

pytestmark = pytest.mark.skipif(not (shutil.which("g++") and shutil.which("nm") and shutil.which("readelf")),
                                reason="the CPU build needs g++ and binutils")

ENTRY = 'extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {\n'
BASE = """#include "cuco_comm.h"
// EVOLVE-BLOCK-START
__global__ void k(cuco_ctx c) { static_cast<float*>(c.out[0])[threadIdx.x] = 1.f; }
// EVOLVE-BLOCK-END
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  k<<<1, 32, 0, stream>>>(*ctx);
  return (int)cudaGetLastError();
}
"""


def hostile(before: str = "", inside: str = "") -> str:
    return BASE.replace(ENTRY, before + "\n" + ENTRY + inside + "\n")


def build(tmp_path: Path, src: str, dtype: int = 0, name: str = "w") -> co.ObjectOutcome:
    return co.compile_candidate_object(src, tmp_path / name, dtype_code=dtype, cache_dir=CACHE[0])


CACHE: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _cache(shared_cache):
    CACHE[:] = [shared_cache]
    shim_build.ensure_runtime(shared_cache)


def _rules(out: co.ObjectOutcome) -> set[str]:
    return {f.rule for f in out.findings}


def _reasons(out: co.ObjectOutcome) -> str:
    return "\n".join(f.reason for f in out.findings)


def _sample() -> list[tuple[str, ds.DesignPoint]]:
    """Per family up to three points, on H100 and A100, of different backends and placements."""
    out = []
    for name in ds.pattern_names():
        pattern, rng = ds.get_pattern(name), random.Random(name)
        points = ds.valid_points(pattern, ds.get_profile("H100")) + ds.valid_points(pattern, ds.get_profile("A100"))
        rng.shuffle(points)
        backends, placements = set(), set()
        for p in points:
            if p.backend not in backends and p.placement not in placements:
                out.append((name, p))
                backends.add(p.backend)
                placements.add(p.placement)
            if len(backends) == 3:
                break
    return out


SAMPLE = _sample()


def test_the_sample_covers_every_backend_and_placement():
    assert {p.backend for _, p in SAMPLE} == set(ds.Backend)
    assert {p.placement for _, p in SAMPLE} == set(ds.Placement)
    assert {n for n, _ in SAMPLE} == set(ds.pattern_names())


@pytest.mark.parametrize("family, point", SAMPLE, ids=[f"{n}:{p.key()}" for n, p in SAMPLE])
def test_honest_renders_compile_to_an_object_that_passes(family, point, tmp_path):
    src = ds.get_pattern(family).render(point)
    out = build(tmp_path, src, dtype=hash(point.key()) % 3)
    assert out.ok and out.findings == () and out.object.is_file(), (out.findings, out.log[-2000:])


def test_ordinary_cpp_passes(tmp_path):
    # classes with virtual functions, templates, function-local statics, printf, 128-bit division
    src = hostile(before="""
struct Op { virtual ~Op() {} virtual float f(float x) const { return x; } };
struct Twice : Op { float f(float x) const override { return 2.f * x; } };
template <class T> static T sq(T v) { return v * v; }
static int calls() { static int n = sq(3); return ++n; }
static long long div128(__int128 a, __int128 b) { return (long long)(a / b); }""",
                  inside='  Twice t; const Op& op = t;\n  if (ctx->rank < 0) printf("%f %d %lld\\n", '
                         'op.f(sqrtf(2.f)), calls(), div128(ctx->rank + 7, 3));')
    out = build(tmp_path, src)
    assert out.ok, (out.findings, out.log[-2000:])


def test_the_object_of_a_render_passes_check_object_too(tmp_path):
    out = build(tmp_path, BASE)
    assert out.ok
    assert co.check_object(out.object, shim_build.ensure_runtime(CACHE[0]), tmp_path / "check") == []


ESCAPES = {  # symbol -> (declaration the attacker writes, call)
    "fopen64": ("", 'fopen64("/etc/hostname", "r");'),
    "open64": ('extern "C" int open64(const char*, int, ...);', 'open64("/etc/hostname", 0);'),
    "posix_spawnp": ('extern "C" int posix_spawnp(int*, const char*, const void*, const void*, char* const*, '
                     'char* const*);', "posix_spawnp(nullptr, \"sh\", nullptr, nullptr, nullptr, nullptr);"),
    "execvpe": ('extern "C" int execvpe(const char*, char* const*, char* const*);', 'execvpe("sh", 0, 0);'),
    "symlinkat": ('extern "C" int symlinkat(const char*, int, const char*);', 'symlinkat("/", -100, "x");'),
    "unlinkat": ('extern "C" int unlinkat(int, const char*, int);', 'unlinkat(-100, "x", 0);'),
    "_Exit": ("", "_Exit(0);"),
    "memfd_create": ('extern "C" int memfd_create(const char*, unsigned);', 'memfd_create("x", 0);'),
    "process_vm_readv": ('extern "C" long process_vm_readv(int, const void*, unsigned long, const void*, '
                         'unsigned long, unsigned long);', "process_vm_readv(1, 0, 0, 0, 0, 0);"),
    "mmap": ('extern "C" void* mmap(void*, unsigned long, int, int, int, long);', "mmap(0, 4096, 3, 34, -1, 0);"),
    "dlsym": ('extern "C" void* dlsym(void*, const char*);', 'dlsym(0, "getenv");'),
    "getpid": ('extern "C" int getpid(void);', "getpid();"),
    "__cxa_atexit": ("struct Flush { ~Flush() { printf(\"bye\\n\"); } };\nstatic Flush flush_at_exit;", ""),
}


@pytest.fixture(scope="module")
def escapes(tmp_path_factory):
    before = "\n".join(d for d, _ in ESCAPES.values())
    # one branch each: some never return (_Exit), which would make the calls after them dead code
    inside = "\n".join(f"  if (ctx->rank == {100 + i}) {{ {c} }}" for i, (_, c) in enumerate(ESCAPES.values()))
    return build(tmp_path_factory.mktemp("escapes"), hostile(before, inside))


@pytest.mark.parametrize("symbol", sorted(ESCAPES))
def test_calls_outside_the_allowlist_are_rejected_naming_the_symbol(symbol, escapes):
    assert not escapes.ok and escapes.object is None
    assert any(f.rule == "undefined_symbol" and f.reason.startswith(f"uses {symbol}") for f in escapes.findings), \
        _reasons(escapes)


@pytest.mark.parametrize("code, rule, named", [
    ("int main() { return 0; }", "defined_symbol", "defines main"),
    ("__attribute__((constructor)) static void early() { printf(\"x\"); }", "section", ".init_array"),
    ("int* early = (int*)malloc(4);", "section", ".init_array"),  # a dynamic initializer
    ("cudaError_t cudaMalloc(void** p, size_t n) { *p = malloc(n); return cudaSuccess; }", "defined_symbol",
     "defines cudaMalloc(void**, unsigned long): a name the emulator runtime defines"),
    ('extern "C" void cuco_emu_block_wait(const char*, long, unsigned long long, unsigned long long) {}',
     "defined_symbol", "defines cuco_emu_block_wait"),
    ("void* operator new(size_t n) { return malloc(n); }", "defined_symbol", "defines operator new(unsigned long)"),
    ('extern "C" __attribute__((weak)) long write(int, const void*, unsigned long) { return 0; }', "defined_symbol",
     "weak override"),
    ("__attribute__((used, section(\".init_array\"))) static void (*early)() = nullptr;", "section", ".init_array"),
    ("static thread_local int per_thread = 1;\nint* tls() { return &per_thread; }", "section", "thread-local"),
    ("static unsigned long long t() { return __builtin_ia32_rdtsc(); }\nunsigned long long (*keep)() = t;",
     "instruction", "rdtsc"),
])
def test_hostile_definitions_and_sections_are_rejected(code, rule, named, tmp_path):
    out = build(tmp_path, hostile(code))
    assert not out.ok and any(f.rule == rule and named in f.reason for f in out.findings), _reasons(out)


@pytest.mark.parametrize("code", [
    'asm(".incbin \\"/etc/hostname\\"");',
    'static void raw() { asm volatile(".byte 0x0f, 0x05"); }\nvoid (*keep)() = raw;',
    'asm(".fill 1000000000, 1, 0");',
])
def test_inline_asm_is_refused_before_the_assembler_runs(code, tmp_path):
    out = build(tmp_path, hostile(code))
    assert not out.ok and "inline_asm" in _rules(out) and "CPU build" in _reasons(out)
    assert not (tmp_path / "w" / "candidate.o").exists()


@pytest.mark.parametrize("code, rule", [
    # g++ copies asm labels, section names and #ident text into the assembly verbatim
    ('extern "C" int f(void) __asm__("f\\n.incbin \\"/etc/hostname\\"\\n");\nint (*keep)() = f;', "inline_asm"),
    ('__attribute__((section(".data\\n.incbin \\"/etc/hostname\\"\\n#"))) int x = 3;', "symbol_attribute"),
    ('#ident "x\\n.incbin \\"/etc/hostname\\"\\n"', "line_directive"),
])
def test_assembler_text_smuggled_through_names_never_reaches_the_assembler(code, rule, tmp_path):
    out = build(tmp_path, hostile(code))
    assert not out.ok and rule in _rules(out), _reasons(out)
    assert not (tmp_path / "w" / "candidate.o").exists()
    assert "hostname" not in out.log


def test_line_directives_that_rename_the_candidate_lines_are_rejected(tmp_path):
    out = build(tmp_path, hostile('#line 1 "/usr/include/stdio.h"'))
    assert "line_directive" in _rules(out) and not out.ok


def test_a_foreign_include_is_rejected_and_the_log_withheld(tmp_path):
    out = build(tmp_path, hostile('#include "/etc/passwd"'))
    assert "include_outside_toolchain" in _rules(out) and "root:" not in out.log


def test_an_object_over_the_file_size_limit_is_rejected(tmp_path):
    out = build(tmp_path, hostile("static char big[96 << 20] = {1};\nchar* keep() { return big; }"))
    assert not out.ok and any("exceeds 64 MiB" in f.reason for f in out.findings), (_reasons(out), out.log)


def test_compile_errors_are_reported_with_the_log(tmp_path):
    out = build(tmp_path, hostile("static int broken( {"))
    assert not out.ok and out.findings == () and "error" in out.log and not out.not_emulatable
    ne = build(tmp_path, hostile("#include <cublas_v2.h>"), name="ne")
    assert not ne.ok and ne.not_emulatable, ne.log


def test_check_object_flags_an_object_built_elsewhere(tmp_path):
    (tmp_path / "m.cpp").write_text('#include <stdlib.h>\nint main() { return system("true"); }\n')
    subprocess.run(["g++", "-c", "m.cpp", "-o", "m.o"], cwd=tmp_path, check=True)
    findings = co.check_object(tmp_path / "m.o", shim_build.ensure_runtime(CACHE[0]), tmp_path / "w")
    assert {"defines main", "uses system"} <= {f.reason.split(":")[0] for f in findings}


def test_the_allowlist_names_only_what_the_runtime_or_the_system_defines():
    allow = object_symbols.load_allowlist()
    runtime = shim_build.ensure_runtime(CACHE[0])
    nm = subprocess.run(["nm", "-C", "--defined-only", str(runtime)], capture_output=True, text=True).stdout
    shown = {ln.split(" ", 2)[2] for ln in nm.splitlines() if ln.count(" ") >= 2}
    for entry in (e for e in allow.exact if e.startswith(("cuco_emu", "cuda"))):
        assert any(s == entry or s.startswith(entry + "(") for s in shown), f"{entry} is not in the runtime library"
    assert not allow.allows("cuco_emu::fail(int, char const*, ...)") and allow.allows("cuco_emu::launch(dim3)")
    assert allow.allows("std::__throw_length_error(char const*)") and not allow.allows("fopen")


def test_the_added_time_stays_small(tmp_path):
    build(tmp_path, BASE, name="warm")
    start = time.perf_counter()
    for i in range(3):
        assert build(tmp_path, BASE, name=f"t{i}").ok
    assert (time.perf_counter() - start) / 3 < 3.0  # ~0.35 s here: one sandbox call, one g++ -S
