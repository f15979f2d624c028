"""What every template family's tests share: the seeded sample check and source mutations."""

import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import design_space as ds
from cuco.point_sweep import sweep_workload
from cuco.sweep_ledger import Ledger

SAMPLE = int(os.environ.get("CUCO_FAMILY_SAMPLE", "4"))
SEED = int(os.environ.get("CUCO_FAMILY_SEED", "2026"))
# Mutations the default run emulates per test; the others are marked slow (`pytest -m slow tests/kernels`).
MUTATION_SAMPLE = int(os.environ.get("CUCO_MUTATION_SAMPLE", "2"))


def sampled(params, ids=None) -> list:
    """``params`` for parametrize, all but a seeded ``MUTATION_SAMPLE`` of them marked slow: each
    mutation emulates a broken candidate (~15 s), and the default run keeps a lean sample."""
    params = list(params)
    keep = set(random.Random(SEED).sample(range(len(params)), min(MUTATION_SAMPLE, len(params))))
    ids = list(ids) if ids is not None else [str(p) for p in params]
    return [pytest.param(*(p if isinstance(p, tuple) else (p,)), id=i, marks=() if n in keep else pytest.mark.slow)
            for n, (p, i) in enumerate(zip(params, ids))]


def assert_sample_passes(spec, cache_dir) -> None:
    """A seeded sample of the spec's family passes guard, nvcc and emulation at every world size.
    Verdicts go to the session cache's sweep ledger, where tests/test_check_all_points_script.py
    finds them (the session cache starts empty, so this test always runs its checks itself)."""
    ledger = Ledger(cache_dir / "sweep-ledger.jsonl")
    row = sweep_workload(spec, cache_dir, hardware=(spec.hardware,), sample=SAMPLE, seed=SEED, workers=2,
                         ledger=ledger).rows[0]
    assert row.valid == len(ds.valid_points(ds.get_pattern(spec.pattern), ds.get_profile("H100")))
    assert len(row.verdicts) == min(SAMPLE, row.valid)
    assert row.failures == [], [f"{v.point.key()}: {v.status} {v.reason}" for v in row.failures]


def mutate(src: str, old: str, new: str = "") -> str:
    """``src`` with ``old`` replaced; a mutation that finds nothing to change is a broken test."""
    assert old in src, f"mutation found nothing to change: {old!r}"
    return src.replace(old, new)


def edit_lines(src: str, old: str, new: str = "") -> str:
    """Drop every line containing ``old`` (``new`` empty), or replace ``old`` by ``new`` everywhere."""
    lines = src.splitlines()
    out = [ln.replace(old, new) if new else ln for ln in lines if new or old not in ln]
    assert out != lines, f"mutation found nothing to change: {old!r}"
    return "\n".join(out) + "\n"


def reference_cases(spec, cache_dir):
    """Reference data (the evaluator's calls, fresh inputs each) and emulator runtime at the
    evaluator's cache paths, for the spec's own emulation shapes: a mutation is checked where the
    family's tests aim."""
    from evaluator import emulate, reference, shim_build
    shim_build.ensure_runtime(cache_dir / "emulator")
    return reference.prepare(spec, ds.get_pattern(spec.pattern), cache_dir / "reference",
                             worlds=spec.emulation_world_sizes, cases=spec.emulation_shapes,
                             seeds=tuple(range(emulate.EmulationSettings().iterations)))


def emulate_only(source: str, spec, cases, cache_dir, work_dir):
    """The emulate stage alone: nvcc adds nothing to a mutation's verdict and costs 5-20 s a build."""
    from evaluator import emulate
    return emulate.emulate(source, spec=spec, pattern=ds.get_pattern(spec.pattern), cases=cases, work_dir=work_dir,
                           cache_dir=cache_dir / "emulator", settings=emulate.EmulationSettings(timeout_s=20))


def gemm_kernels_per_backend(pattern, arch: str, names: tuple[str, ...], cache_dir, work_dir) -> list:
    """(point key, kernels whose name holds one of ``names``) for one seeded render per backend,
    built for ``arch`` with its SASS read; lsa's is the persistent kernel, whose CTAs run tiles
    beside comm CTAs. Skips when no SASS disassembler is installed."""
    from evaluator import build, sass, toolchain
    if sass.sass_tool() is None:
        pytest.skip("no SASS disassembler (nvdisasm: install the dev extra's nvidia-cuda-nvdisasm wheel)")
    tc = toolchain.toolchain()
    points = ds.valid_points(pattern, ds.get_profile("H100" if arch == "sm_90" else "A100"))
    rng = random.Random(arch)
    sample = [rng.choice([p for p in points if p.backend is b and (
        b is not ds.Backend.LSA or p.placement is ds.Placement.FUSED_PERSISTENT)])
        for b in ds.Backend if any(p.backend is b for p in points)]
    def kernels_of(p):
        built = build.build(pattern.render(p), arch=arch, comm_backend="nccl", dtype_code=2, tc=tc,
                            cache_dir=cache_dir, work_dir=work_dir / p.key().replace("/", "_"))
        assert built.ok, built.log
        return p.key(), [k for k in built.stats.kernels if any(g in k.name for g in names)]

    with ThreadPoolExecutor(2) as pool:  # nvcc runs ~10-30 s a source
        return list(pool.map(kernels_of, sample))
