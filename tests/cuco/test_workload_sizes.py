"""Running a user's workload at other sizes than its own (cuco/workload_sizes.py): which of a
Model's constructor arguments read as the workload's dims, and what `cuco init` keeps when the
reference cannot run at the emulator's sizes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuco.semantic_check import FamilyMatch, SemanticVerdict
from cuco.semantic_gate import require_semantics
from cuco.spec_loader import load_spec
from cuco.workload_sizes import mappings
from design_space.errors import SpecError

USER_WORKLOADS = Path(__file__).resolve().parents[1] / "user_workloads"
CUCO = str(Path(sys.executable).parent / "cuco")


def _verdict(dims, init_args, variant=None, form="kernelbench"):
    match = FamilyMatch("allgather_gemm", dims, (0, 1), dict(variant or {}))
    return SemanticVerdict(form, (), (), match, {}, (), tuple(init_args), (2, 4))


def test_constructor_sizes_read_as_a_whole_dim_or_one_ranks_share_of_it_at_every_world():
    # hidden 96 is k; 64 at world 2 and 32 at world 4 is n = 128 split over the ranks; 7 is no dim
    readings = mappings(_verdict({"m": 64, "n": 128, "k": 96}, [(96, 64, 7), (96, 32, 7)]))
    assert readings[0] == ((0, "k", "global"), (1, "n", "per_rank"))
    assert all(i != 2 for reading in readings for i, _, _ in reading)


def test_a_size_that_matches_a_dim_at_one_world_only_is_not_read_as_it():
    # 64 is m at world 2 but the argument stays 64 at world 4, where n / 4 is 32: neither reading holds
    assert mappings(_verdict({"m": 64, "n": 128, "k": 96}, [(64,), (64,)])) == [((0, "m", "global"),)]
    assert mappings(_verdict({"m": 48, "n": 128, "k": 96}, [(64,), (64,)])) == []


def test_flags_and_forms_without_a_constructor_are_never_resized():
    assert mappings(_verdict({"m": 64, "n": 128, "k": 96, "rmsnorm": 2}, [(2,), (2,)], {"rmsnorm": 2})) == []
    assert mappings(_verdict({"m": 64, "n": 128, "k": 96}, [(96,), (96,)], form="solution")) == []


def test_a_refused_workload_leaves_the_out_folder_it_was_forced_over_as_it_was(tmp_path):
    out = tmp_path / "spec"
    out.mkdir()
    (out / "spec.py").write_text("# the user's earlier spec\n")
    res = subprocess.run([CUCO, "init", "--from-reference", str(USER_WORKLOADS / "ulysses_fixed_constants.py"),
                          "--out", str(out), "--force"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "not at the others cuco runs it at" in res.stderr and "Traceback" not in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["spec.py"]
    assert (out / "spec.py").read_text() == "# the user's earlier spec\n"


def test_evolve_stops_before_any_candidate_when_a_hand_edited_spec_is_right_at_some_shapes_only(tmp_path):
    init = subprocess.run([CUCO, "init", "--from-reference", str(USER_WORKLOADS / "megatron_column_parallel_module.py"),
                           "--out", "spec"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert init.returncode == 0, init.stderr
    # the user caps the output at 64 columns (every column at their sizes and at the family's
    # emulation shapes, where the semantic check runs first) and adds a wider emulation shape
    ref = tmp_path / "spec" / "reference.py"
    ref.write_text(ref.read_text().replace("self.weight)\n", "self.weight)[:, :64]\n"))
    spec = tmp_path / "spec" / "spec.py"
    last = "    ),\n    emulation_world_sizes"
    spec.write_text(spec.read_text().replace(
        last, '        ShapeCase(name="emu-wide", dims={"m": 32, "n": 512, "k": 32}),\n' + last, 1))
    assert "emu-wide" in spec.read_text()
    run = subprocess.run([CUCO, "evolve", "spec", "--run-dir", "run", "--generations", "1", "--population", "1"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 2, run.stdout + run.stderr
    (line,) = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert "not at the others cuco runs it at" in line and "n=512" in line and "is shaped" in line
    assert "Traceback" not in run.stderr and not (tmp_path / "run" / "cuco.db").exists()


def _init(tmp_path, source: Path, cache: Path):
    env = {**os.environ, "CUCO_CACHE_DIR": str(cache)}
    return subprocess.run([CUCO, "init", "--from-reference", str(source), "--out", "spec"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env=env)


def _memos(cache: Path) -> dict:
    return {p.name: json.loads(p.read_text()) for p in (cache / "semantics").glob("*.json")}


def test_evolves_gate_takes_inits_verdict_until_a_file_of_the_spec_changes(tmp_path):
    cache = tmp_path / "cache"
    init = _init(tmp_path, USER_WORKLOADS / "megatron_column_parallel_module.py", cache)
    assert init.returncode == 0, init.stderr
    (recorded,) = _memos(cache).values()
    assert recorded == {"match": True, "why": "", "by": "cuco init"}
    spec = load_spec(tmp_path / "spec")
    require_semantics(spec, cache)  # init's verdict: nothing new is computed
    assert len(_memos(cache)) == 1
    # a hand edit is the user's new code: checked again, and refused when it is wrong
    ref = tmp_path / "spec" / "reference.py"
    ref.write_text(ref.read_text().replace("self.weight)\n", "self.weight) * 2\n"))
    with pytest.raises(SpecError, match="allgather_gemm"):
        require_semantics(load_spec(tmp_path / "spec"), cache)
    assert sorted(m.get("by", "gate") for m in _memos(cache).values()) == ["cuco init", "gate"]


def test_a_reference_importing_a_module_beside_it_is_checked_with_it_and_left_for_evolve_to_check(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "tp_helpers.py").write_text("def gathered_matmul(parts, w):\n    import torch\n"
                                        "    return torch.cat(parts, dim=0) @ w\n")
    source = (USER_WORKLOADS / "megatron_column_parallel_sp.py").read_text()
    source = source.replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom tp_helpers import gathered_matmul\n")
    source = source.replace("return torch.cat(parts, dim=0) @ w_cols", "return gathered_matmul(parts, w_cols)")
    (user / "layer.py").write_text(source)
    cache = tmp_path / "cache"
    init = _init(tmp_path, user / "layer.py", cache)
    assert init.returncode == 0, init.stderr
    assert "tp_helpers" in (tmp_path / "spec" / "README.md").read_text()
    # checked with the user's folder importable, but the spec folder lacks the module: no verdict kept
    assert not _memos(cache)
