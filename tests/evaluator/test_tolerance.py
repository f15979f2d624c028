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


def test_a_correct_kernel_passes_a_reference_that_rounds_its_partials_in_bf16(tmp_path, shared_cache):
    from design_space.space import valid_points
    from evaluator.cascade import Evaluator, EvaluatorConfig

    spec = _bf16_summing_spec(tmp_path / "spec")
    point = None
    for strict in (False, True):
        s = spec.model_copy(update={"output_tolerances": {"y": spec.tolerances[spec.dtype]}}) if strict else spec
        ev = Evaluator(s, EvaluatorConfig(cache_dir=shared_cache))
        ev.prepare()
        stats = ev.reference_cases[0].ranks[0].errors["y"]
        assert stats["rel"] > 0.02  # the reference itself strays past the fixed bf16 tolerance
        point = point or next(p for p in valid_points(ev.pattern, ev.hardware)
                              if p.placement.value == "sequential" and p.backend.value == "lsa")
        out = ev.emulate_source(ev.pattern.render(point), probe=False)
        # the fixed tolerance fails the correct kernel; the calibrated one passes it
        assert out.status.value == ("wrong_result" if strict else "ok"), out.reason
