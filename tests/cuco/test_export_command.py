"""`cuco export ID`: a real rendered candidate stored in a real SQLite run, exported, built with
nvcc, its op imported in a fresh process without a GPU (registration, fake shapes, torch.export),
the op's signature checked against cuco's patterns and the example references, the refusals, and
on GPU machines the op against the spec's reference."""

from __future__ import annotations

import glob
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console

import design_space as ds
from candidates_db import Store
from cuco.export_command import FILES, HARNESS_ONLY, run_export, runtime_headers
from cuco.loop import spec_hash
from cuco.spec_loader import load_spec
from design_space import (Candidate, ConfigError, DesignPoint, Evaluation, Origin, OriginKind, RankCheck, RunInfo,
                          RunStatus, Stage, Status, Tier, Timing, TimingSource)
from evaluator import toolchain
from evaluator.toolchain import RUNTIME_DIR

ROOT = Path(__file__).resolve().parents[2]
KEY = "lsa/fused_persistent/per_tile_signal/warp/64K/8"
RUN = "tp <b>run</b> `x`"  # markup and backticks in a run name
FAILED_REASON = "rank 1 wrong ``` </pre><script>alert(1)</script> [link](http://x) \x1b[31m"
PATTERNS = ds.pattern_names()  # every built-in family (tests/conftest.py imports kernels); plugins register elsewhere
SIGNATURE = None  # the shipped signature.py, loaded once by _signatures()


def _signatures():
    global SIGNATURE
    if SIGNATURE is None:
        spec = importlib.util.spec_from_file_location("export_signature_under_test", FILES / "signature.py")
        SIGNATURE = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = SIGNATURE
        spec.loader.exec_module(SIGNATURE)
    return SIGNATURE.SIGNATURES


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=200), buf


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A run folder whose cuco.db holds the example spec's run, an ok and a failed candidate."""
    spec = load_spec(ROOT / "examples" / "allgather_gemm")
    point = DesignPoint.parse_key(KEY)
    source = ds.get_pattern(spec.pattern).render(point)
    run_dir = tmp_path_factory.mktemp("run")
    now = datetime.now(timezone.utc)
    ok = Candidate(origin=Origin(kind=OriginKind.TEMPLATE, patch_type="sample"), source=source, point=point)
    bad = Candidate(origin=Origin(kind=OriginKind.LLM, model="m", patch_type="diff"), source=source + "\n// v2\n",
                    point=point, generation=1, parent_ids=(ok.id,))
    timings = tuple(Timing(shape=s.name, world=8, source=TimingSource.SIMULATED, seconds=2e-3, bound_seconds=1e-3,
                           baseline_seconds=3e-3) for s in spec.shapes)
    checks = tuple(RankCheck(tier=Tier.EMULATED, world=w, shape="emu-even", rank=r, ok=True)
                   for w in (2, 4) for r in range(w))
    with Store.open(run_dir / "cuco.db") as store:
        store.create_run(RunInfo(name=RUN, spec_name=spec.name, pattern=spec.pattern, spec_hash=spec_hash(spec),
                                 spec_json=spec.model_dump_json(), status=RunStatus.COMPLETE, created_at=now,
                                 updated_at=now))
        for cand in (ok, bad):
            store.add_candidate(RUN, cand)
        store.add_evaluation(Evaluation(candidate_id=ok.id, status=Status.OK, stage=Stage.SCORE, timings=timings,
                                        checks=checks, observed_point=KEY))
        store.add_evaluation(Evaluation(candidate_id=bad.id, status=Status.WRONG_RESULT, stage=Stage.EMULATE,
                                        reason=FAILED_REASON))
    return {"run_dir": run_dir, "ok": ok, "bad": bad, "spec": spec}


@pytest.fixture(scope="module")
def exported(stored, tmp_path_factory) -> Path:
    console, _ = _console()
    return run_export(stored["ok"].id[:6], run=str(stored["run_dir"]), db=None,
                      out=tmp_path_factory.mktemp("exp") / "ag", console=console)


def _build_tools() -> dict:
    """NVCC and PYTHON for build.sh, or a skip naming what is missing."""
    try:
        tc = toolchain.toolchain()
    except ds.ToolchainError as e:
        pytest.skip(f"build.sh needs nvcc and the NCCL >= 2.28 headers: {e}")
    if not (tc.nccl_include.parent / "lib" / "libnccl.so.2").is_file():
        pytest.skip(f"build.sh links libnccl.so.2 from the NCCL wheel; none next to {tc.nccl_include}")
    return {"NVCC": str(tc.nvcc), "NCCL_HOME": str(tc.nccl_include.parent), "PYTHON": sys.executable}


@pytest.fixture(scope="module")
def built(exported, tmp_path_factory) -> dict:
    """A copy of the export built by its own build.sh (the original stays unbuilt)."""
    tools = _build_tools()
    folder = tmp_path_factory.mktemp("built") / "ag"
    shutil.copytree(exported, folder)
    start = time.monotonic()
    res = subprocess.run(["./build.sh"], cwd=folder, env={**os.environ, **tools}, capture_output=True, text=True,
                         timeout=900)
    seconds = time.monotonic() - start
    assert res.returncode == 0, res.stdout + res.stderr
    print(f"\nbuild.sh (nvcc, sm_90): {seconds:.1f} s")
    return {"folder": folder, "seconds": seconds, "log": res.stdout + res.stderr}


def test_the_export_holds_the_exact_source_the_runtime_it_includes_and_where_it_came_from(exported, stored):
    ok, spec = stored["ok"], stored["spec"]
    assert (exported / "kernel.cu").read_bytes() == ok.source.encode()
    shipped = sorted(p.name for p in (exported / "runtime").iterdir())
    assert shipped == runtime_headers(ok.source)
    assert {"cuco_comm.h", "cuco_ctx.h", "cuco_gemm.h", "cuco_gemm_sm80.h", "cuco_coll.h"} <= set(shipped)
    assert not HARNESS_ONLY & set(shipped)
    for name in shipped:  # unchanged, comment headers included
        assert (exported / "runtime" / name).read_bytes() == (RUNTIME_DIR / name).read_bytes()
    manifest = json.loads((exported / "manifest.json").read_text())
    assert manifest["candidate_id"] == ok.id and manifest["run"] == RUN and manifest["spec_name"] == spec.name
    assert manifest["pattern"] == "allgather_gemm" and manifest["point"] == KEY and manifest["status"] == "ok"
    assert manifest["speedup_label"] == "1.50x (simulated)" and manifest["forced"] is False
    assert manifest["cuco_version"] and manifest["date"][:4].isdigit() and manifest["arch"] == "sm_90"
    assert os.access(exported / "build.sh", os.X_OK) and "sm_90" in (exported / "build.sh").read_text()
    assert (exported / "reference.py").read_bytes() == (ROOT / "examples/allgather_gemm/reference.py").read_bytes()
    assert "#include \"kernel.cu\"" in (exported / "launcher.cu").read_text()


def test_the_readme_shows_the_layer_the_figures_as_stored_and_the_limits(exported):
    text = (exported / "README.md").read_text()
    assert "torch.ops.cuco_allgather_gemm.run(a, self.b, self.bias, self.add_bias, self.world, self.group_name)" in text
    assert "- `add_bias` (default 2): " in text  # the example spec has no bias: the op's default adds none
    assert "class AllgatherGemmLayer(torch.nn.Module)" in text and "torchrun --nproc-per-node" in text
    assert "./build.sh" in text and "C_r = allgather(A) @ B_r" in text and KEY in text
    assert "**1.50x (simulated)**" in text and "| **simulated** | 2.000 ms | 1.000 ms | 3.000 ms | 1.50x | 50% |" in text
    assert "**measured**" in text  # the legend says what the other label would mean
    assert "`sm_90`" in text and "`nccl`" in text and "Forward only" in text and "CUDA graphs" in text
    assert "FAILED" not in text
    assert "`` tp <b>run</b> `x` ``" in text  # the run name in a code span no backtick inside can close


def test_build_sh_compiles_sm90_device_code_into_a_loadable_library(built):
    lib = built["folder"] / "cuco_allgather_gemm" / "libcuco_allgather_gemm.so"
    assert lib.is_file() and b".nv_fatbin" in lib.read_bytes()
    tools = [p for root in toolchain.nvidia_roots() for p in root.glob("*/bin/cuobjdump")] + \
            [Path(p) for p in [shutil.which("cuobjdump")] if p]
    if tools:  # the fat binary holds sm_90 code, tensor-core MMAs included (the GEMM tile compiled)
        elves = subprocess.run([str(tools[0]), "-lelf", str(lib)], capture_output=True, text=True).stdout
        assert "sm_90" in elves
        sass = subprocess.run([str(tools[0]), "-sass", str(lib)], capture_output=True, text=True).stdout
        assert "HMMA" in sass
    probe = ("import ctypes, sys; sys.path.insert(0, sys.argv[1]); import cuco_allgather_gemm as m; "
             "from cuco_allgather_gemm import native; lib = native.library(); "
             "print(native.built_dtype(), lib.cuco_export_abi(), lib.cuco_export_nccl_version() > 22800, "
             "lib.cuco_export_unique_id(ctypes.create_string_buffer(128), 128))")
    res = subprocess.run([sys.executable, "-c", probe, str(built["folder"])], capture_output=True, text=True,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["bf16", "1", "True", "128"]


FAKE_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
import cuco_allgather_gemm as m
from cuco_allgather_gemm import native
from torch._subclasses.fake_tensor import FakeTensorMode

out = {"registered": hasattr(torch.ops.cuco_allgather_gemm, "run"), "lib_loaded": native._lib is not None,
       "schema": str(torch.ops.cuco_allgather_gemm.run.default._schema), "cuda": torch.cuda.is_available()}
with FakeTensorMode():
    a = torch.empty(16, 64, dtype=torch.bfloat16, device="cuda")
    b = torch.empty(64, 8, dtype=torch.bfloat16, device="cuda")
    bias = torch.empty(8, dtype=torch.bfloat16, device="cuda")
    for world in (2, 4):
        c = torch.ops.cuco_allgather_gemm.run(a, b, bias, 2, world, "g")
        out[f"w{world}"] = [list(c.shape), str(c.dtype), c.device.type]
    try:
        torch.ops.cuco_allgather_gemm.run(a, torch.empty(32, 8, dtype=torch.bfloat16, device="cuda"), bias, 2, 2, "g")
    except ValueError as e:
        out["mismatch"] = str(e)

class Layer(torch.nn.Module):
    def __init__(self, b, bias):
        super().__init__()
        self.b = torch.nn.Parameter(b, requires_grad=False)
        self.bias = torch.nn.Parameter(bias, requires_grad=False)
    def forward(self, a):
        return torch.ops.cuco_allgather_gemm.run(a, self.b, self.bias, 1, 4, "g")

ep = torch.export.export(Layer(torch.randn(64, 8, dtype=torch.bfloat16), torch.randn(8, dtype=torch.bfloat16)),
                         (torch.randn(16, 64, dtype=torch.bfloat16),), strict=True)
out["export"] = [[str(n.target), list(n.meta["val"].shape)] for n in ep.graph.nodes if n.op == "call_function"]
out["lib_loaded_after"] = native._lib is not None
print(json.dumps(out))
"""


def test_the_op_registers_and_its_fake_kernel_gives_the_shapes_without_a_gpu_or_a_build(exported):
    res = subprocess.run([sys.executable, "-c", FAKE_PROBE, str(exported)], capture_output=True, text=True,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["registered"] and not out["cuda"] and not (exported / "cuco_allgather_gemm/libcuco_allgather_gemm.so").exists()
    assert out["schema"] == ("cuco_allgather_gemm::run(Tensor a, Tensor b, Tensor bias, int add_bias, int world, "
                             "str group_name) -> Tensor")
    assert out["w2"] == [[32, 8], "torch.bfloat16", "cuda"] and out["w4"] == [[64, 8], "torch.bfloat16", "cuda"]
    assert "input b must be [K, N/n] = [64, 8] for these dims, got [32, 8]" in out["mismatch"]
    assert out["export"] == [["cuco_allgather_gemm.run.default", [64, 8]]]
    assert not out["lib_loaded"] and not out["lib_loaded_after"]  # the library loads on a real call only


def test_the_shipped_signature_computes_what_cucos_patterns_do():
    sigs = _signatures()
    assert set(sigs) == set(PATTERNS)
    for name in PATTERNS:
        pattern, sig = ds.get_pattern(name), sigs[name]
        assert sig.dims == pattern.dims and [n for n, _ in sig.inputs] == list(pattern.inputs)
        assert [n for n, _ in sig.outputs] == list(pattern.outputs)
        spec = load_spec(ROOT / "examples" / name)
        for shape in (*spec.shapes, *spec.emulation_shapes):
            for world in (1, 2, 3, 4, 6, 8):
                d = pattern.full_dims(shape.dims)  # the op always takes every flag
                assert bool(sig.problems(d, world)) == bool(pattern.dim_problems(d, world)), (name, shape.name, world)
                if pattern.dim_problems(d, world):
                    continue
                for dtype in ds.DType:
                    assert sig.symm_bytes(d, world, dtype.itemsize) == pattern.symm_bytes(d, world, dtype)
                    assert sig.workspace_bytes(d, world, dtype.itemsize) == pattern.workspace_bytes(d, world, dtype)


def _reference_module(name: str):
    spec = importlib.util.spec_from_file_location(f"export_ref_{name}", ROOT / "examples" / name / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_signature_matches_every_example_references_shapes_at_two_world_sizes():
    """Each example's own input builder and torch reference (on torch's fake process group, which
    gives collectives their shapes) against the shapes the op takes and its fake kernel returns."""
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    sigs = _signatures()
    for name in PATTERNS:
        sig, ref, spec = sigs[name], _reference_module(name), load_spec(ROOT / "examples" / name)
        for world in (2, 4):
            for shape in spec.emulation_shapes:
                dims = ds.get_pattern(name).full_dims(shape.dims)
                for rank in (0, world - 1):
                    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
                    try:
                        x = ref.make_inputs(dict(dims), rank, world, torch.bfloat16, torch.Generator().manual_seed(0))
                        want = ref.reference(dict(x), dict(dims), dist.group.WORLD)
                    finally:
                        dist.destroy_process_group()
                    shapes = [tuple(x[n].shape) for n, _ in sig.inputs]
                    assert shapes == [tuple(s) for s in sig.input_shapes(dims, world)], (name, world, shape.name)
                    flags = {f: dims[f] for f in sig.flags}
                    fixed = {k: v for k, v in dims.items() if k not in flags}
                    got = SIGNATURE.dims_of(sig, shapes, world, flags, fixed)
                    assert got == dims, (name, world, shape.name)
                    assert [tuple(want[n].shape) for n, _ in sig.outputs] == \
                           [tuple(s) for s in sig.output_shapes(dims, world)], (name, world, shape.name)


def test_a_failed_candidate_is_refused_unless_forced_and_its_readme_says_why(stored, tmp_path):
    bad = stored["bad"]
    console, _ = _console()
    with pytest.raises(ConfigError, match="wrong_result at stage emulate") as err:
        run_export(bad.id, run=str(stored["run_dir"]), db=None, out=tmp_path / "no", console=console)
    assert "--force" in str(err.value) and not (tmp_path / "no").exists()
    folder = run_export(bad.id, run=None, db=str(stored["run_dir"] / "cuco.db"), out=tmp_path / "forced",
                        console=console, force=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "wrong_result" and manifest["forced"] is True and manifest["reason"] == FAILED_REASON
    text = (folder / "README.md").read_text()
    assert "**This candidate FAILED cuco's evaluation** (status `wrong_result`" in text
    assert "This candidate failed cuco's evaluation" in text  # in the limits too
    # the reason sits in a fence longer than its own backtick run, control characters made visible
    assert "````text\nrank 1 wrong ``` </pre><script>alert(1)</script> [link](http://x) \\x1b[31m\n````" in text
    assert "\x1b" not in text


def test_a_non_empty_folder_is_refused_unless_it_holds_an_earlier_export_of_the_same_candidate(stored, tmp_path):
    console, _ = _console()
    ok, bad = stored["ok"], stored["bad"]
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="is not empty and is not an earlier export"):
        run_export(ok.id, run=str(stored["run_dir"]), db=None, out=foreign, console=console)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    first = run_export(ok.id, run=str(stored["run_dir"]), db=None, out=tmp_path / "again", console=console)
    (first / "cuco_allgather_gemm" / "libcuco_allgather_gemm.so").write_bytes(b"stale build")
    again = run_export(ok.id, run=str(stored["run_dir"]), db=None, out=first, console=console)
    assert again == first and not (first / "cuco_allgather_gemm" / "libcuco_allgather_gemm.so").exists()
    with pytest.raises(ConfigError, match=f"holds the export of candidate {ok.id}"):
        run_export(bad.id, run=str(stored["run_dir"]), db=None, out=first, console=console, force=True)


def test_the_default_folder_is_named_after_the_short_id_and_the_console_says_where(stored, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    console, buf = _console()
    ok = stored["ok"]
    folder = run_export(ok.id[:8], run=str(stored["run_dir"]), db=None, out=None, console=console)
    assert folder == Path(f"cuco-export-{ok.id[:8]}") and (tmp_path / folder / "kernel.cu").is_file()
    assert f"exported candidate {ok.id}" in buf.getvalue() and "build.sh" in buf.getvalue()


def _gpus() -> int:
    return len(glob.glob("/dev/nvidia[0-9]*"))


@pytest.mark.gpu
@pytest.mark.skipif(_gpus() == 0, reason="runs the exported op on real GPUs against the spec's reference: "
                                         "needs an NVIDIA GPU (none on this machine)")
def test_the_built_op_matches_the_reference_on_one_to_n_gpus(built, stored):
    import torch

    gpus = min(torch.cuda.device_count(), 8)
    sig = _signatures()["allgather_gemm"]
    worlds = [w for w in range(1, gpus + 1)
              if any(not sig.problems(ds.get_pattern("allgather_gemm").full_dims(s.dims), w)
                     for s in stored["spec"].emulation_shapes)]
    assert worlds and worlds[0] == 1
    for world in worlds:
        res = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                              f"--nproc-per-node={world}", "check.py", "--trials", "2"], cwd=built["folder"],
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0 and "every rank matched the reference" in res.stdout, \
            f"world {world}:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
