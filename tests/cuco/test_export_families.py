"""`cuco export` of the families added after the first six: an ok template candidate of each, stored
in one real SQLite database and exported; the op registers and its fake kernel returns the example
reference's output shapes at world sizes 2 and 4 (one fresh process for every family), the README's
layer fits the family, and each package's own build.sh builds with nvcc (one build per family,
the slow part: ~15-30 s each). Every op argument name is unique in every signature."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest

import design_space as ds
from candidates_db import Store
from cuco.export_command import run_export
from cuco.loop import spec_hash
from cuco.spec_loader import load_spec
from design_space import Candidate, DesignPoint, Evaluation, Origin, OriginKind, RunInfo, RunStatus, Stage, Status
from tests.cuco.test_export_command import KEY, ROOT, _build_tools, _console, _reference_module, _signatures

FAMILIES = ("gemm_allgather", "reducescatter_rmsnorm", "ulysses_seq_to_head", "ulysses_head_to_seq",
            "moe_router_swiglu", "tp_mlp")
# The op schemas, pinned: a flag whose dim shares an input tensor's name (bias, residual) takes
# another argument name, since one schema cannot hold two arguments of one name.
SCHEMAS = {
    "gemm_allgather": "(Tensor x, Tensor w, Tensor bias, int add_bias, int world, str group_name) -> Tensor",
    "reducescatter_rmsnorm": "(Tensor p, Tensor gamma, Tensor residual, int rmsnorm, int add_residual, int world, "
                             "str group_name) -> Tensor",
    "ulysses_seq_to_head": "(Tensor x, int world, str group_name) -> Tensor",
    "ulysses_head_to_seq": "(Tensor y, int world, str group_name) -> Tensor",
    "moe_router_swiglu": "(Tensor x, Tensor wg, Tensor w13, Tensor w2, int k, int world, str group_name) -> Tensor",
    "tp_mlp": "(Tensor x, Tensor w1, Tensor w3, Tensor w2, int act, int world, str group_name) -> Tensor",
}
LAYERS = {"gemm_allgather": "tensor-parallel", "tp_mlp": "tensor-parallel",
          "reducescatter_rmsnorm": "sequence-parallel", "ulysses_seq_to_head": "sequence-parallel",
          "ulysses_head_to_seq": "sequence-parallel", "moe_router_swiglu": "expert-parallel"}


def _store_run(store: Store, name: str) -> Candidate:
    """The family's example spec as a run holding one template candidate, evaluated ok."""
    spec = load_spec(ROOT / "examples" / name)
    point = DesignPoint.parse_key(KEY)
    cand = Candidate(origin=Origin(kind=OriginKind.TEMPLATE, patch_type="sample"),
                     source=ds.get_pattern(spec.pattern).render(point), point=point)
    now = datetime.now(timezone.utc)
    store.create_run(RunInfo(name=name, spec_name=spec.name, pattern=spec.pattern, spec_hash=spec_hash(spec),
                             spec_json=spec.model_dump_json(), status=RunStatus.COMPLETE, created_at=now,
                             updated_at=now))
    store.add_candidate(name, cand)
    store.add_evaluation(Evaluation(candidate_id=cand.id, status=Status.OK, stage=Stage.SCORE, observed_point=KEY))
    return cand


@pytest.fixture(scope="module")
def family_exports(tmp_path_factory) -> dict:
    """Family name -> its export folder, every family's run in one database."""
    run_dir = tmp_path_factory.mktemp("families")
    with Store.open(run_dir / "cuco.db") as store:
        cands = {name: _store_run(store, name) for name in FAMILIES}
    out = tmp_path_factory.mktemp("exports")
    console, _ = _console()
    return {name: run_export(c.id, run=str(run_dir), db=None, out=out / name, console=console)
            for name, c in cands.items()}


def _reference_cases(name: str) -> list[dict]:
    """Rank 0's input and output shapes from the example's own builder and reference (on torch's
    fake process group, which gives collectives their shapes) for every emulation shape at worlds 2, 4."""
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    sig, ref, spec = _signatures()[name], _reference_module(name), load_spec(ROOT / "examples" / name)
    cases = []
    for world in (2, 4):
        for shape in spec.emulation_shapes:
            dims = shape.at(world)
            dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
            try:
                x = ref.make_inputs(dict(dims), 0, world, torch.bfloat16, torch.Generator().manual_seed(0))
                want = ref.reference(dict(x), dict(dims), dist.group.WORLD)
            finally:
                dist.destroy_process_group()
            cases.append({"world": world, "inputs": [list(x[n].shape) for n, _ in sig.inputs],
                          "flags": [dims[f] for f in sig.flags], "want": [list(want[n].shape) for n, _ in sig.outputs]})
    return cases


FAKE_PROBE = r"""
import json, sys
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

cases = json.loads(sys.argv[1])
out = {}
for name, (folder, todo) in cases.items():
    sys.path.insert(0, folder)
    pkg = __import__("cuco_" + name)
    op = getattr(torch.ops, "cuco_" + name).run
    got = []
    with FakeTensorMode():
        for case in todo:
            ins = [torch.empty(s, dtype=torch.bfloat16, device="cuda") for s in case["inputs"]]
            res = op(*ins, *case["flags"], case["world"], "g")
            res = res if isinstance(res, tuple) else (res,)
            got.append([[list(t.shape), str(t.dtype), t.device.type] for t in res])
    out[name] = {"schema": str(op.default._schema), "flags": list(pkg.FLAGS), "got": got,
                 "lib_loaded": pkg.op.native._lib is not None}
out["cuda"] = torch.cuda.is_available()
print(json.dumps(out))
"""


def test_each_new_familys_op_registers_and_its_fake_kernel_gives_the_references_shapes(family_exports):
    cases = {name: [str(folder), _reference_cases(name)] for name, folder in family_exports.items()}
    res = subprocess.run([sys.executable, "-c", FAKE_PROBE, json.dumps(cases)], capture_output=True, text=True,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert res.returncode == 0, res.stderr[-4000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert not out["cuda"]
    for name in FAMILIES:
        probe, sig = out[name], _signatures()[name]
        assert probe["schema"] == f"cuco_{name}::run{SCHEMAS[name]}"
        assert probe["flags"] == [sig.flag_arg(f) for f in sig.flags] and not probe["lib_loaded"]
        for case, got in zip(cases[name][1], probe["got"]):
            assert got == [[s, "torch.bfloat16", "cuda"] for s in case["want"]], (name, case)


def test_each_new_familys_export_names_its_layer_flags_and_config_for_the_family(family_exports):
    for name, folder in family_exports.items():
        sig, spec = _signatures()[name], load_spec(ROOT / "examples" / name)
        config = json.loads((folder / f"cuco_{name}" / "config.json").read_text())
        head = spec.headline.at(spec.emulation_world_sizes[0])
        assert config["fixed"] == {} and config["flags"] == {f: head[f] for f in sig.flags}, name
        text = (folder / "README.md").read_text()
        assert f"## Use it in a {LAYERS[name]} layer" in text and "tp_layer" not in text, name
        assert f"class {name.title().replace('_', '')}Layer(torch.nn.Module)" in text, name
        call = ", ".join([f"self.{n}" if n in sig.weights else n for n, _ in sig.inputs]
                         + [f"self.{sig.flag_arg(f)}" for f in sig.flags])
        assert f"torch.ops.cuco_{name}.run({call}, self.world, self.group_name)" in text, name
        for f in sig.flags:  # the README lists each flag under its argument name with its default
            assert f"- `{sig.flag_arg(f)}` (default {head[f]}): " in text, (name, f)
        # the README's example runs torchrun with 8 ranks on the first emulation shape
        assert not sig.problems(spec.emulation_shapes[0].at(8), 8), name


def test_every_signatures_op_arguments_have_distinct_names():
    for name, sig in _signatures().items():
        args = [n for n, _ in sig.inputs] + [sig.flag_arg(f) for f in sig.flags] + ["world", "group_name"]
        assert len(set(args)) == len(args) and all(a.isidentifier() for a in args), (name, args)
        assert set(sig.flag_args) <= set(sig.flags), name


def test_the_new_signatures_mirror_their_patterns_off_the_example_shapes_too():
    """Each dim of each example shape nudged (small values, +1, x3, +world) at worlds 1-8: the
    same verdict as the pattern's dim_problems and, where it fits, the same buffer sizes (and for
    gemm_allreduce, whose pattern now checks its epilogue flag as its signature does)."""
    for name in (*FAMILIES, "gemm_allreduce"):
        pattern, sig, spec = ds.get_pattern(name), _signatures()[name], load_spec(ROOT / "examples" / name)
        for shape in (*spec.shapes, *spec.emulation_shapes):
            for world in range(1, 9):
                base = shape.at(world)
                for dim in pattern.dims:
                    for value in {1, 2, 3, 4, base[dim] + 1, 3 * base[dim], base[dim] + world}:
                        d = {**base, dim: value}
                        problems = pattern.dim_problems(d, world)
                        assert bool(sig.problems(d, world)) == bool(problems), (name, shape.name, world, dim, value)
                        for dtype in () if problems else ds.DType:
                            assert sig.symm_bytes(d, world, dtype.itemsize) == pattern.symm_bytes(d, world, dtype)
                            assert sig.workspace_bytes(d, world, dtype.itemsize) == \
                                   pattern.workspace_bytes(d, world, dtype)


LIB_PROBE = r"""
import ctypes, json, sys
out = {}
for name, folder in json.loads(sys.argv[1]).items():
    sys.path.insert(0, folder)
    native = __import__("cuco_" + name + ".native", fromlist=["native"])
    lib = native.library()
    out[name] = [native.built_dtype(), lib.cuco_export_abi()]
print(json.dumps(out))
"""


def test_each_new_familys_build_sh_builds_a_loadable_library(family_exports, tmp_path):
    tools = _build_tools()
    folders, seconds = {}, {}
    for name, exported in family_exports.items():
        folder = tmp_path / name
        shutil.copytree(exported, folder)  # the export itself stays unbuilt for the other tests
        start = time.monotonic()
        res = subprocess.run(["./build.sh"], cwd=folder, env={**os.environ, **tools}, capture_output=True, text=True,
                             timeout=900)
        seconds[name] = round(time.monotonic() - start, 1)
        assert res.returncode == 0, f"{name}:\n{(res.stdout + res.stderr)[-4000:]}"
        assert b".nv_fatbin" in (folder / f"cuco_{name}" / f"libcuco_{name}.so").read_bytes(), name
        folders[name] = str(folder)
    print(f"\nbuild.sh per family (s): {seconds}")
    res = subprocess.run([sys.executable, "-c", LIB_PROBE, json.dumps(folders)], capture_output=True, text=True,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert res.returncode == 0, res.stderr[-4000:]
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {name: ["bf16", 1] for name in FAMILIES}
