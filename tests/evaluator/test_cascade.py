"""The cascade runs the GPU build and the CPU emulation side by side; verdicts stay the sequential ones."""

import time
from dataclasses import replace

import design_space as ds
from evaluator import emulate

PATTERN = ds.get_pattern("allgather_gemm")
GOOD = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/16K/2")
# A kernel that spins forever, with 49.6 KB of static shared memory: ptxas refuses it (48 KB is the
# static limit), the CPU emulator builds and runs it (and would spin until its time limit).
_SPIN = ("static __global__ void spin(unsigned long long* f) { __shared__ unsigned long long big[6200]; "
         "big[threadIdx.x] = 1; for (;;) { atomicAdd(f, big[threadIdx.x]); __nanosleep(100); } }\n")


def _hanging_unbuildable() -> str:
    return PATTERN.render(GOOD).replace('extern "C" int cuco_run', _SPIN + 'extern "C" int cuco_run', 1).replace(
        "  fused_kernel<<<", "  spin<<<1, 1, 0, stream>>>((unsigned long long*)c.workspace);\n  fused_kernel<<<", 1)


def test_a_failed_build_decides_and_stops_the_emulation_running_beside_it(example_evaluator, tmp_path):
    source = _hanging_unbuildable()
    ev = example_evaluator
    # on its own, the emulation of this source runs until its limit
    alone = emulate.emulate(source, spec=ev.spec, pattern=ev.pattern, cases=ev.cases_for("alone"),
                            work_dir=tmp_path / "alone", cache_dir=ev.config.cache_dir / "emulator",
                            settings=replace(ev.config.emulation, timeout_s=4))
    assert alone.status is ds.Status.TIMEOUT, (alone.status, alone.reason)
    # in the cascade its emulation may take 10 minutes, but the build's failure ends it
    ev.config = replace(ev.config, emulation=replace(ev.config.emulation, timeout_s=600))
    try:
        start = time.monotonic()
        got = ev.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=source))
        took = time.monotonic() - start
    finally:
        ev.config = replace(ev.config, emulation=replace(ev.config.emulation, timeout_s=20))
    assert got.status is ds.Status.BUILD_FAILED and "shared data" in got.reason, (got.status, got.reason)
    assert took < 60, f"the evaluation took {took:.0f} s: the emulation beside the failed build was not stopped"
    assert not any(k.startswith("emulate") for k in got.stage_seconds)  # a stopped emulation leaves no figures


def test_an_honest_render_passes_with_build_and_emulation_figures(example_evaluator):
    got = example_evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="template"), source=PATTERN.render(GOOD),
                                                  point=GOOD))
    assert got.status is ds.Status.OK, got.reason
    assert {"guard", "emulate_compile", "emulate_w2", "emulate_w4"} <= set(got.stage_seconds)
    assert {"build", "build_cached"} & set(got.stage_seconds)
