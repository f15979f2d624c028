"""Tolerances that fit the arithmetic: the spec's per dtype at least, more where a reduction's
rounded partials or the reference's own error against a float64 run call for it, capped; an
output's own tolerance, when the spec gives one, exactly."""

import math

import pytest

from design_space import DType, KernelSpec, ShapeCase
from design_space.spec import DEFAULT_TOLERANCES, Tolerance
from evaluator.tolerance import ATOL_CAP_RMS, MARGIN, RTOL_CAP, UNIT_ROUNDOFF, output_tolerance


def _spec(**kw) -> KernelSpec:
    return KernelSpec(name="t", pattern="gemm_allreduce", shapes=(ShapeCase(name="s", dims={"m": 8}),),
                      emulation_shapes=(ShapeCase(name="e", dims={"m": 8}),), reference="r:r", inputs="r:i", **kw)


def test_without_calibration_the_dtypes_tolerance_stands():
    assert output_tolerance(_spec(), "y", world=2, collective="allgather") == DEFAULT_TOLERANCES[DType.BF16]


def test_a_reduction_over_many_ranks_earns_the_rounding_of_its_partials():
    tol = output_tolerance(_spec(), "y", world=32, collective="allreduce")
    assert tol.rtol == pytest.approx(2 * UNIT_ROUNDOFF[DType.BF16] * math.sqrt(32)) and tol.rtol > 0.02
    assert output_tolerance(_spec(), "y", world=32, collective="allgather").rtol == 0.02  # nothing is summed


def test_the_references_own_error_widens_the_tolerance_by_the_margin():
    tol = output_tolerance(_spec(), "y", world=2, collective="allgather", stats={"rel": 0.01, "abs": 0.02, "rms": 5})
    assert tol.rtol == pytest.approx(MARGIN * 0.01) and tol.atol == pytest.approx(MARGIN * 0.02)
    small = output_tolerance(_spec(), "y", world=2, collective="allgather", stats={"rel": 1e-4, "abs": 1e-4, "rms": 1})
    assert small == DEFAULT_TOLERANCES[DType.BF16]  # a precise reference never tightens the dtype's


def test_no_calibration_waves_a_wrong_result_through():
    tol = output_tolerance(_spec(), "y", world=2, collective="allgather", stats={"rel": 5.0, "abs": 50.0, "rms": 2})
    assert tol.rtol == RTOL_CAP and tol.atol == pytest.approx(ATOL_CAP_RMS * 2)


def test_an_outputs_own_tolerance_is_used_exactly():
    given = Tolerance(atol=1e-3, rtol=0.0)
    spec = _spec(output_tolerances={"y": given})
    assert output_tolerance(spec, "y", world=32, collective="allreduce", stats={"rel": 1.0, "abs": 1.0, "rms": 1}) \
        == given


def _bf16_summing_spec(folder):
    """gemm_allreduce whose reference multiplies and all-reduces in bf16 on unscaled inputs."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples" / "gemm_allreduce"
    folder.mkdir()
    (folder / "spec.py").write_text((root / "spec.py").read_text())
    ref = (root / "reference.py").read_text()
    ref = ref.replace("b = torch.randn(kl, n, generator=gen) / k**0.5", "b = torch.randn(kl, n, generator=gen)")
    ref = ref.replace("    y = a.float() @ b.float()\n", "    y = a @ b\n")
    assert "y = a @ b" in ref and "/ k**0.5" not in ref
    (folder / "reference.py").write_text(ref)
    from cuco.spec_loader import load_spec
    return load_spec(folder)


def _without_float64_run(cases):
    """The reference cases as they were before the float64 run's outputs were kept."""
    from dataclasses import replace

    return [replace(c, ranks=tuple(replace(r, exact=()) for r in c.ranks)) for c in cases]


def _emulate(ev, point, cases, tmp_path):
    from evaluator import emulate

    return emulate.emulate(ev.pattern.render(point), spec=ev.spec, pattern=ev.pattern, cases=cases,
                           work_dir=tmp_path / "emu", cache_dir=ev.config.cache_dir / "emulator",
                           settings=ev.config.emulation, probe=False)


def _sequential_lsa(ev):
    from design_space.space import valid_points

    return next(p for p in valid_points(ev.pattern, ev.hardware)
                if p.placement.value == "sequential" and p.backend.value == "lsa")


def test_a_correct_kernel_passes_a_reference_that_rounds_its_partials_in_bf16(tmp_path, shared_cache):
    from evaluator.cascade import Evaluator, EvaluatorConfig

    spec = _bf16_summing_spec(tmp_path / "spec")
    for strict in (False, True):
        s = spec.model_copy(update={"output_tolerances": {"y": spec.tolerances[spec.dtype]}}) if strict else spec
        ev = Evaluator(s, EvaluatorConfig(cache_dir=shared_cache))
        cases = ev.cases_for("one pick")
        stats = cases[0].ranks[0].errors["y"]
        assert stats["rel"] > 0.02  # the reference itself strays past the fixed bf16 tolerance
        # against the bf16 reference alone: the fixed tolerance fails the correct kernel, the
        # calibrated one passes it
        # (the kernel rounds its partials to bf16 too, so the float64 run cannot stand in for that)
        out = _emulate(ev, _sequential_lsa(ev), _without_float64_run(cases), tmp_path / str(strict))
        assert out.status.value == ("wrong_result" if strict else "ok"), out.reason


def _straying_spec(folder):
    """gemm_allreduce whose reference loses the low bits of three outputs per rank (it adds and
    takes away an offset in its own dtype): too few elements to move its calibration."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples" / "gemm_allreduce"
    folder.mkdir()
    (folder / "spec.py").write_text((root / "spec.py").read_text())
    ref = (root / "reference.py").read_text()
    ref = ref.replace('    return {"y": y.to(a.dtype)}\n',
                      '    y = y.to(a.dtype)\n    y[0, :3] = (y[0, :3] + 64) - 64\n    return {"y": y}\n')
    assert "+ 64) - 64" in ref
    (folder / "reference.py").write_text(ref)
    from cuco.spec_loader import load_spec
    return load_spec(folder)


def test_a_correct_kernel_passes_where_the_references_own_rounding_strays_past_its_calibration(tmp_path,
                                                                                             shared_cache):
    import numpy as np

    from evaluator.cascade import Evaluator, EvaluatorConfig
    from evaluator.emulate import as_float32, exact_of

    ev = Evaluator(_straying_spec(tmp_path / "spec"), EvaluatorConfig(cache_dir=shared_cache))
    cases = ev.cases_for("one pick")
    rank = cases[0].ranks[0]
    ref, exact = as_float32(rank.outputs[0].path, "bfloat16", rank.outputs[0].shape), exact_of(rank, 0)
    assert exact is not None and exact.shape == ref.shape
    assert np.abs(ref - exact)[0, :3].max() > 0.05 and np.abs(ref - exact)[1:].max() < 0.05  # only 3 stray
    assert _emulate(ev, _sequential_lsa(ev), _without_float64_run(cases), tmp_path / "a").status.value \
        == "wrong_result"  # what the bf16 reference alone would say
    out = _emulate(ev, _sequential_lsa(ev), cases, tmp_path / "b")
    assert out.status.value == "ok", out.reason


def test_an_element_is_right_within_tolerance_of_the_reference_or_of_its_float64_run():
    import numpy as np

    from evaluator.emulate import compare

    ref = np.array([1.0, 2.0, 3.0, 0.0], dtype=np.float32)
    exact = np.array([1.0, 2.5, 3.0, 0.0], dtype=np.float32)  # the reference strays in element 1
    assert compare(np.array([1.0, 2.5, 3.0, 0.0]), ref, 0.01, 0.01, exact) == (True, 0.0, 0, 0)
    assert compare(np.array([1.0, 2.0, 3.0, 0.0]), ref, 0.01, 0.01, exact)[0]
    ok, err, mism, unw = compare(np.array([1.0, 2.25, 3.0, np.nan]), ref, 0.01, 0.01, exact)
    assert (ok, mism, unw) == (False, 2, 1) and err == 0.25  # far from both; never written
    assert compare(np.array([1.0, 2.5, 3.0, 0.0]), ref, 0.01, 0.01) == (False, 0.5, 1, 0)  # without the run
