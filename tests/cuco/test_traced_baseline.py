"""`cuco init --traced`: a workload no family computes gets a generated host-driven baseline from
its aten-level trace (cuco/op_trace.py, traced_ops.py, baseline_codegen.py, traced_pattern.py),
registered as pattern `traced_<name>` with one design point and fixed shapes; an op outside the
replayed set stops init with one line naming it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuco.baseline_codegen import POINT, _merge_one
from cuco.cli import app

HERE = Path(__file__).resolve().parent
CUCO = str(Path(sys.executable).parent / "cuco")

SORTED = '''import torch
import torch.distributed as dist


def solution(x):
    dist.all_reduce(x)
    return torch.sort(x, dim=-1).values


def get_inputs():
    return [torch.randn(8, 16)]
'''
P2P = '''import torch
import torch.distributed as dist


def solution(x):
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank % 2 == 0:
        dist.send(x, rank + 1)
    else:
        dist.recv(x, rank - 1)
    return x * 2


def get_inputs():
    return [torch.randn(4, 4)]
'''


@pytest.fixture(scope="module")
def zoo_spec(tmp_path_factory):
    folder = tmp_path_factory.mktemp("traced") / "zoo"
    res = CliRunner().invoke(app, ["init", "--from-reference", str(HERE / "traced_zoo.py"), "--out", str(folder),
                                   "--traced", "--name", "zoo"])
    assert res.exit_code == 0, res.stderr or res.stdout
    return folder


def test_every_replayed_op_kind_runs_through_evolve_to_an_ok_candidate(zoo_spec, tmp_path):
    run = subprocess.run([CUCO, "evolve", str(zoo_spec), "--run-dir", str(tmp_path / "run"), "--generations", "1",
                          "--population", "1", "--json"], capture_output=True, text=True, timeout=900,
                         env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["status_counts"]["ok"] == 1, summary["leaderboard"]
    # the matrix products went through the tile (mixed: some outputs do not depend on it, e.g. masked ones)
    assert summary["leaderboard"][0]["compute"] in ("tensor-core", "mixed")


def test_the_generated_baseline_passes_the_guard_at_its_point(zoo_spec):
    from cuco.spec_loader import load_spec
    from design_space import DesignPoint, get_pattern
    from evaluator import guard

    source = get_pattern(load_spec(zoo_spec).pattern).render(DesignPoint.parse_key(POINT))
    assert guard.check(source, point=DesignPoint.parse_key(POINT)) == []
    for call in ("cuco_coll_allgather", "cuco_coll_alltoall", "tr_mm_tile", "tr_softmax", "tr_reduce"):
        assert call in source
    assert 'extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream)' in source
    assert "tr_rank_f(c.rank, 0.0f, 1.0f, 2.0f, 3.0f)" in source  # `* rank`: a number per rank


def test_the_traced_pattern_has_one_point_fixed_shapes_and_its_traces_cost(zoo_spec):
    from cuco.spec_loader import load_spec
    from design_space import get_pattern, get_profile, valid_points
    from evaluator.shape_draws import variants

    spec = load_spec(zoo_spec)
    pattern = get_pattern(spec.pattern)
    assert [p.key() for p in valid_points(pattern, get_profile(spec.hardware))] == [POINT]
    assert pattern.varied_dims == () and pattern.dims == ("world",)
    assert variants(pattern, spec.emulation_shapes[0], spec.emulation_world_sizes, 4, seed=1) == ()
    trace = json.loads((zoo_spec / "trace.json").read_text())
    assert sorted(trace["worlds"], key=int) == ["2", "4", "8"]
    cost = pattern.cost({"world": 8}, 8, spec.dtype)
    assert cost.collective in ("allgather", "alltoall", "allreduce") and cost.flops > 0
    assert "traced at world sizes 2, 4, 8" in pattern.dim_problems({"world": 16}, 16)[0]


@pytest.mark.parametrize("text,named", [(SORTED, "aten::sort"), (P2P, "send/recv")])
def test_an_op_outside_the_set_stops_init_with_one_line_naming_it(text, named, tmp_path):
    ref = tmp_path / "workload.py"
    ref.write_text(text)
    res = CliRunner().invoke(app, ["init", "--from-reference", str(ref), "--out", str(tmp_path / "spec"), "--traced"])
    assert res.exit_code == 2, res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0], res.stderr
    assert "docs/custom_pattern.md" in lines[0] and not (tmp_path / "spec").exists()


def test_traced_needs_a_reference_and_no_pattern(tmp_path):
    res = CliRunner().invoke(app, ["init", "--from-reference", str(HERE / "traced_zoo.py"), "--out",
                                   str(tmp_path / "s"), "--traced", "--pattern", "allgather_gemm"])
    assert res.exit_code == 2 and "--traced" in res.stderr and not (tmp_path / "s").exists()


def test_numbers_that_differ_between_ranks_become_per_rank_values():
    texts = [[f"TR_TRY(tr_map(c, s, TR_MUL, (float*)(ws + {256 * r}), 0.5f, {r}.0f));"] for r in range(4)]
    (line,) = _merge_one(texts)
    assert line == ("TR_TRY(tr_map(c, s, TR_MUL, (float*)(ws + tr_rank_i(c.rank, 0, 256, 512, 768)), 0.5f, "
                    "tr_rank_f(c.rank, 0.0f, 1.0f, 2.0f, 3.0f)));")


def test_a_statement_that_differs_otherwise_between_ranks_sits_in_a_switch():
    texts = [["a(x);"], ["b(x);"], ["a(x);"]]
    merged = _merge_one(texts)
    assert merged[0] == "switch (c.rank) {" and merged[-1] == "}"
    assert merged[1:3] == ["  case 0:", "  case 2:"] and "    a(x);" in merged and "    b(x);" in merged
