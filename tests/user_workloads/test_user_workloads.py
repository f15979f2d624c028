"""Workloads as users write them (Megatron-LM / vLLM style tensor-parallel layers, in the
KernelBench, solution and plain-function forms), brought in with `cuco init --from-reference`:
each either becomes a spec whose `cuco evolve` stores `ok` candidates, or stops before anything
is written with a diagnosis that names the mismatch. None spends a candidate on a semantic
mismatch."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CUCO = str(Path(sys.executable).parent / "cuco")

# file -> (extra init arguments, family, the flags it must have matched)
MATCHING = {
    "megatron_column_parallel_sp": ((), "allgather_gemm", {}),
    "vllm_row_parallel_allreduce": ((), "gemm_allreduce", {"rmsnorm": 2}),
    "row_parallel_allreduce_rmsnorm": (("--reference", "layer"), "gemm_allreduce", {"rmsnorm": 1}),
    "sequence_parallel_reduce_scatter": (("--reference", "row_parallel"), "gemm_reducescatter", {}),
    "megatron_column_parallel_gather": ((), "gemm_allgather", {"bias": 1}),
    "sequence_parallel_rmsnorm": ((), "reducescatter_rmsnorm", {"rmsnorm": 1, "residual": 1}),
    "ulysses_all_to_all": ((), "ulysses_seq_to_head", {}),
    "ulysses_attention_bshd": ((), "ulysses_seq_to_head", {}),
    "mixtral_moe_block": ((), "moe_router_swiglu", {"k": 2}),
    "megatron_parallel_mlp": ((), "tp_mlp", {"act": 3}),
    "linear_weight_layout": ((), "allgather_gemm", {}),
    "megatron_mlp_linear_layout": ((), "tp_mlp", {"act": 3}),
    "hf_mixtral_experts": ((), "moe_router_swiglu", {"k": 2}),
    "megatron_column_parallel_module": ((), "allgather_gemm", {}),
    "row_parallel_norm_module": ((), "gemm_allreduce", {"rmsnorm": 1}),
    "megatron_row_parallel_bias_module": ((), "gemm_allreduce", {"rmsnorm": 3}),
    "vllm_row_parallel_bias_rank0": ((), "gemm_allreduce", {"rmsnorm": 3}),
    "megatron_column_parallel_sized": ((), "allgather_gemm", {}),
    "megatron_column_parallel_sp_bias": ((), "allgather_gemm", {"bias": 1}),
}
# file -> what the one-line error must name
MISMATCHED = {
    "k_sharded_allgather": "is split across the ranks",
    "ring_attention_bshd": "a different layout",
    "allgather_gemm_relu": "applies a ReLU",
    # right at their own sizes only: found by running them at the emulator's (cuco/workload_sizes.py)
    "ulysses_fixed_constants": "reference.py line 13, in solution",
    "row_parallel_constant_slice": "where the family's is",
}


def _cuco(*args, cwd, env=None):
    return subprocess.run([CUCO, *args], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=env or dict(os.environ))


@pytest.mark.parametrize("name", sorted(MATCHING))
def test_a_users_workload_becomes_a_spec_whose_search_finds_ok_candidates(name, tmp_path, shared_cache):
    extra, family, flags = MATCHING[name]
    res = _cuco("init", "--from-reference", str(HERE / f"{name}.py"), "--out", "spec", *extra, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"pattern {family}" in " ".join(res.stdout.split())
    spec_text = (tmp_path / "spec" / "spec.py").read_text()
    for flag, value in flags.items():  # the flags the user's code has, not the example's
        assert f'"{flag}": {value}' in spec_text and f'"{flag}": {3 - value}' not in spec_text
    env = {**os.environ, "CUCO_CACHE_DIR": str(shared_cache)}
    run = _cuco("evolve", "spec", "--run-dir", "run", "--generations", "1", "--population", "2", "--workers", "2",
                "--json", cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    counts = json.loads(run.stdout)["status_counts"]
    assert counts["ok"] >= 1 and counts["wrong_result"] == 0, counts


@pytest.mark.parametrize("name", sorted(MISMATCHED))
def test_a_mismatched_workload_stops_before_anything_with_the_reason(name, tmp_path):
    res = _cuco("init", "--from-reference", str(HERE / f"{name}.py"), "--out", "spec", cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert MISMATCHED[name] in line and "Traceback" not in res.stderr
    assert not (tmp_path / "spec").exists()
