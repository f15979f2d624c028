"""Code features and calibration: what the model credits a candidate's compute with, and why."""

import json

import pytest
from pydantic import ValidationError

import design_space as ds
from design_space.calibration import Calibration, CalibrationEntry, calibration_path, load_calibration, save_calibration
from design_space.code_features import (
    CUBLAS_EFFICIENCY, SCALAR_EFFICIENCY, SCALAR_TYPICAL, TENSOR_CORE_TYPICAL, TILE_EFFICIENCY, CodeFeatures,
    compute_rate, cublas_rate, occupancy_from,
)

H100 = ds.get_profile("H100")
AG = ds.get_pattern("allgather_gemm")
PREFILL = {"m": 4096, "n": 49152, "k": 12288}
FUSED = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/warp/256K/8")


def _estimate(features=None, calibration=None, hw=H100):
    cost = AG.cost(PREFILL, 8, ds.DType.BF16)
    return ds.estimate(cost, FUSED, 8, hw, "bf16", features=features, calibration=calibration)


def _calibration(**entry):
    fields = dict(gpu="H200", dtype="bf16", m=4096, n=4096, k=4096, cublas_tflops=790.0, tile_tflops=600.0)
    return Calibration(machine="1x NVIDIA H200", date="2026-01-01", entries=(CalibrationEntry(**{**fields, **entry}),))


def test_a_scalar_candidate_scores_worse_than_a_tensor_core_one_at_the_same_point():
    scalar, tensor = _estimate(SCALAR_TYPICAL), _estimate(TENSOR_CORE_TYPICAL)
    assert scalar.simulated > 10 * tensor.simulated
    assert scalar.compute_efficiency < 0.02 < TILE_EFFICIENCY == pytest.approx(tensor.compute_efficiency)
    assert scalar.baseline == tensor.baseline  # the baseline does not depend on the candidate's code


def test_unknown_features_get_the_scalar_default_and_say_so():
    unknown = _estimate(None)
    assert not unknown.features_known
    assert "unknown" in unknown.basis and "uncalibrated (default efficiencies)" in unknown.basis
    assert unknown.compute_efficiency == pytest.approx(SCALAR_EFFICIENCY * 67e12 / 989e12)
    assert unknown.compute_efficiency < _estimate(TENSOR_CORE_TYPICAL).compute_efficiency


def test_default_efficiencies_are_stated_relative_to_cublas():
    assert TILE_EFFICIENCY == pytest.approx(0.70 * CUBLAS_EFFICIENCY)
    assert cublas_rate(H100, "bf16").flops_per_s == pytest.approx(0.80 * 989e12)


def test_mixed_code_pays_the_scalar_share_harmonically():
    half = CodeFeatures(tensor_core=True, tensor_core_flop_share=0.5)
    tc, sc = compute_rate(H100, "bf16", TENSOR_CORE_TYPICAL), compute_rate(H100, "bf16", SCALAR_TYPICAL)
    mixed = compute_rate(H100, "bf16", half)
    assert 1 / mixed.flops_per_s == pytest.approx(0.5 / tc.flops_per_s + 0.5 / sc.flops_per_s)
    assert mixed.kind == "mixed"


def test_spills_and_low_occupancy_slow_the_code_down():
    base = compute_rate(H100, "bf16", SCALAR_TYPICAL)
    spilled = compute_rate(H100, "bf16", SCALAR_TYPICAL.model_copy(update={"spill_bytes": 512}))
    assert spilled.flops_per_s == pytest.approx(base.flops_per_s / 1.5)
    starved = compute_rate(H100, "bf16", SCALAR_TYPICAL.model_copy(update={"occupancy": 1 / 16}))
    assert starved.flops_per_s == pytest.approx(base.flops_per_s / 4)  # 4 warps of the 16 the knee needs
    assert starved.hbm_bytes_per_s < base.hbm_bytes_per_s  # few narrow loads in flight cannot feed HBM
    wide = compute_rate(H100, "bf16", SCALAR_TYPICAL.model_copy(update={"occupancy": 1 / 16, "vector_width_bytes": 16}))
    assert starved.hbm_bytes_per_s < wide.hbm_bytes_per_s


def test_registers_bound_occupancy_when_it_is_not_given():
    heavy = CodeFeatures(tensor_core=False, registers=255)
    assert heavy.resident_warps() == pytest.approx(8 / 64)
    assert CodeFeatures(tensor_core=False).resident_warps() is None
    assert occupancy_from(registers=32, threads_per_block=256) == pytest.approx(1.0)
    assert occupancy_from(registers=128, threads_per_block=256) == pytest.approx(0.25)
    assert occupancy_from(registers=32, threads_per_block=128, smem_per_block=100 * 1024) == pytest.approx(8 / 64)


@pytest.mark.parametrize("bad", [{"tensor_core": False, "tensor_core_flop_share": 0.5},
                                 {"tensor_core": True, "vector_width_bytes": 3},
                                 {"tensor_core": True, "occupancy": 0.0},
                                 {"tensor_core": True, "unknown_field": 1}])
def test_inconsistent_features_are_refused(bad):
    with pytest.raises(ValidationError):
        CodeFeatures(**bad)


def test_features_are_frozen():
    with pytest.raises(ValidationError):
        TENSOR_CORE_TYPICAL.tensor_core = False


def test_a_calibration_replaces_the_defaults_and_says_where_it_was_measured():
    cal = _calibration()
    est = _estimate(TENSOR_CORE_TYPICAL, cal, hw=ds.get_profile("H200"))
    assert est.compute_efficiency == pytest.approx(600 / 989)
    assert "calibrated on H200" in est.basis and "uncalibrated" not in est.basis
    assert est.baseline_comp == pytest.approx(est.t_comp * 989 / 790, rel=0.01)


def test_a_calibration_applies_to_the_same_architecture_and_not_to_another():
    cal = _calibration()
    h100 = _estimate(TENSOR_CORE_TYPICAL, cal)  # H100 and H200 share sm_90
    assert h100.compute_efficiency == pytest.approx(600 / 989)
    assert "same architecture sm_90" in h100.basis
    a100 = _estimate(TENSOR_CORE_TYPICAL, cal, hw=ds.get_profile("A100"))
    assert "uncalibrated" in a100.basis


def test_a_tile_measured_above_cublas_is_credited_at_cublas():
    est = _estimate(TENSOR_CORE_TYPICAL, _calibration(tile_tflops=900.0), hw=ds.get_profile("H200"))
    assert est.compute_efficiency == pytest.approx(790 / 989)


def test_the_nearest_calibrated_shape_is_used():
    small = CalibrationEntry(gpu="H200", dtype="bf16", m=128, n=128, k=128, cublas_tflops=50.0, tile_tflops=20.0)
    cal = _calibration().model_copy(update={"entries": (*_calibration().entries, small)})
    assert _estimate(TENSOR_CORE_TYPICAL, cal).compute_efficiency == pytest.approx(600 / 989)


def test_load_calibration_default_is_none_when_absent(tmp_path, monkeypatch):
    monkeypatch.delenv("CUCO_CALIBRATION", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert calibration_path() == tmp_path / "cuco" / "calibration.json"
    assert load_calibration() is None


def test_saved_calibration_loads_back_from_the_env_path(tmp_path, monkeypatch):
    target = tmp_path / "cal.json"
    monkeypatch.setenv("CUCO_CALIBRATION", str(target))
    written = save_calibration(_calibration())
    assert written == target and json.loads(target.read_text())["schema_version"] == 1
    assert load_calibration() == _calibration()


@pytest.mark.parametrize("content", ["not json", json.dumps({"machine": "x", "date": "y", "entries": []}),
                                     json.dumps({"schema_version": 2, "machine": "x", "date": "y", "entries": []})])
def test_a_broken_calibration_file_is_refused_with_a_fix(tmp_path, content):
    file = tmp_path / "cal.json"
    file.write_text(content)
    with pytest.raises(ds.ConfigError) as info:
        load_calibration(file)
    assert "gpu_check" in info.value.fix


def test_a_named_calibration_file_must_exist(tmp_path):
    with pytest.raises(ds.ConfigError, match="does not exist"):
        load_calibration(tmp_path / "missing.json")


def test_the_cuda_core_rate_comes_from_the_profile_or_a_stated_fallback():
    assert H100.cuda_core_flops() == 67e12 and ds.get_profile("A100").cuda_core_flops() == 19.5e12
    legacy = ds.HardwareProfile(name="Plugin-GPU", arch="sm_90", sms=100, l2_bytes=1 << 20, hbm_bytes_per_s=1e12,
                                peak_flops={"bf16": 160e12}, link_bytes_per_s=100e9, nvswitch=False, multimem=False)
    assert legacy.cuda_core_flops() == pytest.approx(10e12)  # 1/16 of the tensor peak
    assert legacy.link_efficiency == H100.link_efficiency == 0.82
