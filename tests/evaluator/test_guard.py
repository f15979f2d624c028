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
