"""A workload whose per-rank sizes are fixed while the global size grows with the world (each rank
holds a 64-wide K slice: K = 64 * world), brought in with `cuco init --from-reference`: the spec
writes k as "64*n", `cuco space` reports its bound at the target world, and `cuco evolve` stores
`ok` candidates. A slice that neither stays fixed nor follows the world stops with the dim named."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CUCO = str(Path(sys.executable).parent / "cuco")

GROWING = '''
import torch
import torch.distributed as dist


def row_parallel(x_part, w_rows, group=None):
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    partial = x_part @ w_rows
    dist.all_reduce(partial, group=group)
    rows = partial.shape[0] // world
    return partial[rank * rows:(rank + 1) * rows].contiguous()


def make_inputs(rank, world):
    k = 48 + 8 * world  # a slice that widens with the world, but not in proportion to it
    return [torch.randn(64, k), torch.randn(k, 48)]
'''


def _cuco(*args, cwd, env=None):
    return subprocess.run([CUCO, *args], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=env or dict(os.environ))


@pytest.fixture(scope="module")
def fixed_slice_spec(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fixed-k-slice")
    res = _cuco("init", "--from-reference", str(HERE / "row_parallel_fixed_k_slice.py"), "--out", "spec", cwd=folder)
    assert res.returncode == 0, res.stderr
    return folder, res


def test_a_fixed_k_slice_per_rank_becomes_k_64n_and_its_search_finds_ok_candidates(fixed_slice_spec, shared_cache):
    folder, res = fixed_slice_spec
    assert "pattern gemm_reducescatter" in " ".join(res.stdout.split())
    text = (folder / "spec" / "spec.py").read_text()
    assert 'ShapeCase(name="user", dims={"m": 64, "n": 48, "k": "64*n"})' in text
    assert '"k": "16*n"' in text  # the emulator's tiny shapes grow with the world too
    env = {**os.environ, "CUCO_CACHE_DIR": str(shared_cache)}
    run = _cuco("evolve", "spec", "--run-dir", "run", "--generations", "1", "--population", "2", "--workers", "2",
                "--json", cwd=folder, env=env)
    assert run.returncode == 0, run.stderr
    counts = json.loads(run.stdout)["status_counts"]
    assert counts["ok"] >= 1 and counts["wrong_result"] == 0, counts


def test_space_reports_the_fixed_slice_spec_at_its_target_world(fixed_slice_spec):
    folder, _ = fixed_slice_spec
    res = _cuco("space", "spec", "--json", cwd=folder)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    (shape,) = report["shapes"]
    assert report["world"] == 8 and shape["dims"] == {"m": 64, "n": 48, "k": 512}
    assert shape["dims_written"]["k"] == "64*n" and shape["bound_us"] > 0
    text = " ".join(_cuco("space", "spec", cwd=folder, env={**os.environ, "COLUMNS": "200"}).stdout.split())
    assert "bound per shape at world 8" in text and "k=512 (64*n)" in text


def test_a_slice_neither_fixed_nor_in_proportion_names_the_dim_at_each_world(tmp_path):
    (tmp_path / "growing.py").write_text(GROWING)
    res = _cuco("init", "--from-reference", "growing.py", "--reference", "row_parallel", "--inputs", "make_inputs",
                "--out", "spec", cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert "computes gemm_reducescatter at each world size" in line
    assert "k is 128 at world size 2 and 320 at world size 4" in line and "Traceback" not in res.stderr
    assert not (tmp_path / "spec").exists()
