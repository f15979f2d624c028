"""`cuco doctor`: what this machine can do. Here (no GPU) the CPU tiers work and the GPU tiers say
"no GPU"; --json has a stable schema; LLM keys appear by name only; no nvcc is exit 1 with the fix."""

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuco.cli import app
from evaluator import machine_probe, toolchain

HAS_GPU = machine_probe.probe_gpus().available
CUCO = str(Path(sys.executable).parent / "cuco")
TOP_KEYS = {"python", "nvcc", "gxx", "cuda_runtime", "gpu", "nccl", "nccl_comm", "torch", "isolation", "llm_keys",
            "tiers", "probe_s", "cpu_tiers_ok"}


def _doctor(*args, env=None):
    return CliRunner().invoke(app, ["doctor", *args], env=env)


def _json() -> dict:
    res = _doctor("--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_json_has_the_documented_schema():
    data = _json()
    assert set(data) == TOP_KEYS and data["cpu_tiers_ok"] is True
    assert [t["name"] for t in data["tiers"]] == ["build", "emulate", "verify", "bench"]
    for tier in data["tiers"]:
        assert set(tier) == {"name", "available", "reason", "backends"}
        assert all(set(b) == {"name", "available", "detail"} for b in tier["backends"])
    assert {c["name"] for c in data["isolation"]} >= {"network namespace", "pid namespace", "mount namespace",
                                                      "process limit", "rlimits"}
    assert set(data["gpu"]) == {"available", "reason", "driver_version", "cuda_driver_version", "devices"}
    assert data["nccl"]["lib_version"] and data["nccl"]["header_version"]
    assert data["nvcc"]["version"] == toolchain.toolchain().nvcc_version


def test_cpu_tiers_work_here_and_gpu_tiers_say_no_gpu():
    if HAS_GPU:
        pytest.skip("this machine has a GPU")
    tiers = {t["name"]: t for t in _json()["tiers"]}
    assert tiers["build"]["available"] and tiers["emulate"]["available"]
    assert [b["name"] for b in tiers["emulate"]["backends"]] == ["cpu"]
    for name in ("verify", "bench"):
        assert not tiers[name]["available"] and tiers[name]["reason"].startswith("no GPU")
        assert {b["name"] for b in tiers[name]["backends"]} == {"symm", "nccl", "gin", "multimem"}


def test_human_output_lists_tiers_and_key_names_but_never_values():
    secret = f"planted-{uuid.uuid4().hex}"
    res = _doctor(env={"ANTHROPIC_API_KEY": secret, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    for word in ("build", "emulate", "verify", "bench", "nvcc", "NCCL", "torch", "network namespace"):
        assert word in out
    assert "ANTHROPIC_API_KEY" in out and "OPENAI_BASE_URL" in out
    for piece in (secret, secret[:7], secret[-6:], "127.0.0.1:9"):
        assert piece not in out
    if not HAS_GPU:
        assert "no GPU" in out


def test_no_nvcc_is_exit_1_with_one_line_naming_the_fix(tmp_path, monkeypatch):
    gxx = toolchain.find_gxx()
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no nvcc (and no g++: CUCO_CXX names it)
    monkeypatch.setenv("CUCO_CXX", str(gxx))
    for name in ("CUDA_HOME", "CUCO_NVCC"):
        monkeypatch.delenv(name, raising=False)
    try:
        toolchain.find_nvcc()
        pytest.skip("an nvcc from the pip wheels is installed: cannot make build impossible here")
    except toolchain.ToolchainError:
        pass
    res = _doctor()
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: the build tier cannot run here: nvcc") and "-- fix: install" in lines[0]
    assert "build" in res.stdout  # the report is still printed above the error


def test_doctor_command_is_fast_and_does_not_import_torch_without_a_gpu():
    if HAS_GPU:
        pytest.skip("with a GPU, doctor imports torch on purpose")
    code = ("import sys, time; t = time.monotonic(); from cuco.cli import main; sys.argv = ['cuco', 'doctor', '--json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('TORCH', 'torch' in sys.modules, time.monotonic() - t)")
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    wall = time.monotonic() - start
    last = res.stdout.strip().splitlines()[-1].split()
    assert last[:2] == ["TORCH", "False"], res.stdout[-500:] + res.stderr
    assert wall < 3.0, f"cuco doctor took {wall:.2f} s"


def test_the_installed_command_runs():
    res = subprocess.run([CUCO, "doctor"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "cuco doctor" in res.stdout and "tiers" in res.stdout
