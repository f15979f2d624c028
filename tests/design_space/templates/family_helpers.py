"""What every template family's tests share: the seeded sample check and source mutations."""

import os

import design_space as ds
from cuco.point_sweep import sweep_workload

SAMPLE = int(os.environ.get("CUCO_FAMILY_SAMPLE", "6"))
SEED = int(os.environ.get("CUCO_FAMILY_SEED", "2026"))


def assert_sample_passes(spec, cache_dir) -> None:
    """A seeded sample of the spec's family passes guard, nvcc and emulation at every world size."""
    row = sweep_workload(spec, cache_dir, hardware=(spec.hardware,), sample=SAMPLE, seed=SEED, workers=2).rows[0]
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
    """Reference data and emulator runtime at the evaluator's cache paths (shared with it)."""
    from evaluator import reference, shim_build
    shim_build.ensure_runtime(cache_dir / "emulator")
    return reference.prepare(spec, ds.get_pattern(spec.pattern), cache_dir / "reference",
                             worlds=spec.emulation_world_sizes, cases=spec.emulation_shapes)


def emulate_only(source: str, spec, cases, cache_dir, work_dir):
    """The emulate stage alone: nvcc adds nothing to a mutation's verdict and costs 5-20 s a build."""
    from evaluator import emulate
    return emulate.emulate(source, spec=spec, pattern=ds.get_pattern(spec.pattern), cases=cases, work_dir=work_dir,
                           cache_dir=cache_dir / "emulator", settings=emulate.EmulationSettings(timeout_s=20))
