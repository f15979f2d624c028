"""`cuco init`: scaffold a spec folder from a torch reference or a host-driven .cu; the written
spec loads and `cuco space` works on it; bad input gets one line, never a traceback."""

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import design_space as ds
from cuco.cli import app
from kernels.seed_analysis import analyse_seed, choose_pattern, reference_calls
from cuco.spec_loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE_REF = ROOT / "examples" / "allgather_gemm" / "reference.py"
SEED = ROOT / "examples" / "seeds" / "allgather_gemm_host.cu"


def _init(*args):
    return CliRunner().invoke(app, ["init", *map(str, args)])


def _ok(res):
    assert res.exit_code == 0, res.stderr or res.stdout
    return res.stdout


def _one_line_error(res, *needles) -> str:
    assert res.exit_code == 2, res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "-- fix: " in lines[0], res.stderr
    for n in needles:
        assert n in lines[0]
    return lines[0]


def _space_valid(folder: Path) -> int:
    res = CliRunner().invoke(app, ["space", str(folder), "--json", "--top", "3"])
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["valid"]


def test_init_from_reference_writes_a_spec_that_loads_and_space_works(tmp_path):
    ref = tmp_path / "my_ref.py"
    shutil.copyfile(EXAMPLE_REF, ref)
    out = tmp_path / "myspec"
    text = _ok(_init("--from-reference", ref, "--out", out))
    assert "allgather_gemm" in text and "all_gather" in text and "spec loads" in text
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "reference.py", "spec.py"]
    assert (out / "reference.py").read_text() == EXAMPLE_REF.read_text()
    spec = load_spec(out)
    assert (spec.name, spec.pattern, spec.reference, spec.inputs) == \
        ("my_ref", "allgather_gemm", "reference:reference", "reference:make_inputs")
    example = load_spec(ROOT / "examples" / "allgather_gemm")
    assert spec.shapes == example.shapes and spec.emulation_shapes == example.emulation_shapes
    assert _space_valid(out) == len(ds.valid_points(ds.get_pattern("allgather_gemm"), ds.get_profile("H100")))
    assert "cuco space" in (out / "README.md").read_text()


def test_init_from_reference_uses_the_named_functions(tmp_path):
    ref = tmp_path / "layer.py"
    ref.write_text(EXAMPLE_REF.read_text().replace("def make_inputs(", "def build(")
                   .replace("def reference(", "def golden("))
    (tmp_path / "helpers.py").write_text("SCALE = 1\n")
    ref.write_text(ref.read_text() + "\nimport helpers  # noqa: E402\n")  # importable: init runs it
    out = tmp_path / "s"
    text = _ok(_init("--from-reference", ref, "--reference", "golden", "--inputs", "build", "--name", "tp-ag",
                     "--out", out))
    spec = load_spec(out)
    assert (spec.name, spec.reference, spec.inputs) == ("tp-ag", "reference:golden", "reference:build")
    # a sibling module the reference imports is not copied: the user is told to
    assert "imports helpers" in " ".join(text.split()) and "imports helpers" in (out / "README.md").read_text()


def test_init_from_seed_analyses_the_host_program(tmp_path):
    out = tmp_path / "fromseed"
    text = _ok(_init("--from-seed", SEED, "--name", "ag_seed", "--out", out))
    assert "ncclAllGather" in text and "naive_gemm" in text and "streams[r]" in text
    spec = load_spec(out)
    assert spec.pattern == "allgather_gemm" and spec.seed_kernel == SEED.name
    assert (out / SEED.name).read_text() == SEED.read_text()
    assert (out / "reference.py").read_text() == EXAMPLE_REF.read_text()
    assert "ncclAllGather" in (out / "README.md").read_text()
    assert _space_valid(out) > 0


def test_seed_analysis_keeps_order_streams_groups_and_ignores_comments():
    src = """
    // ncclAllReduce(x, y, n, ncclFloat, ncclSum, comm, s0);  (commented out)
    __global__ void scale(float* x) {}
    template <typename T> __global__ void pack(T* x) {}
    void run(ncclComm_t comm, cublasHandle_t h, cudaStream_t s0, cudaStream_t s1) {
      cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
      cublasSetStream(h, s0);
      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16BF, m, b, CUDA_R_16BF, k, &zero,
                   c, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      ncclGroupStart();
      ncclSend(c, n, ncclBfloat16, next, comm, s1);
      ncclRecv(d, n, ncclBfloat16, prev, comm, s1);
      ncclGroupEnd();
      pack<float><<<grid, 256, 0, s1>>>(d);
      ncclReduceScatter(c, e, n, ncclBfloat16, ncclSum, comm, s0);
      cudaLaunchKernel((void*)scale, grid, block, args, 0, s0);
    }
    """
    a = analyse_seed(src, "x.cu")
    assert [(s.kind, s.name) for s in a.steps] == [("cublas", "cublasGemmEx"), ("collective", "ncclSend"),
                                                   ("collective", "ncclRecv"), ("kernel", "pack"),
                                                   ("collective", "ncclReduceScatter"), ("kernel", "scale")]
    send, recv, rs = a.collectives
    assert send.grouped and recv.grouped and not rs.grouped
    assert (send.stream, rs.stream, a.steps[3].stream) == ("s1", "s0", "s1")
    assert a.cublas_calls == ("cublasSetStream", "cublasGemmEx")
    assert a.steps[-1].stream == "s0"
    assert a.kernels_defined == ("scale", "pack") and a.kernels_launched == ("pack", "scale")
    assert set(a.streams) == {"s0", "s1"}
    assert dataclasses.is_dataclass(a) and type(a).__dataclass_params__.frozen


@pytest.mark.parametrize("body, kind, expected", [
    ("import torch.distributed as dist\ndef reference(i, d, g):\n    dist.all_gather_into_tensor(o, i['a'])\n",
     "allgather", "allgather_gemm"),
    ("from torch.distributed import reduce_scatter_tensor as rs\ndef reference(i, d, g):\n    rs(o, i['a'])\n",
     "reducescatter", "gemm_reducescatter"),
    ("import torch\ndef reference(i, d, g):\n    torch.distributed.all_reduce(i['c'])\n", "allreduce", "gemm_allreduce"),
    ("import torch.distributed as dist\ndef _x(t):\n    dist.all_to_all_single(t, t)\n"
     "def reference(i, d, g):\n    dist.all_gather(s, c)\n    return _x(i)\n", "alltoall", "moe_dispatch_combine"),
    ("import torch.distributed as dist\ndef reference(i, d, g):\n    attn = softmax(q @ k)\n"
     "    dist.batch_isend_irecv([dist.P2POp(dist.isend, k, 1)])\n", "p2p", "ring_attention"),
    ("import torch.distributed as dist\ndef reference(i, d, g):\n    kv_cache = i['kv']\n    dist.send(kv_cache, 1)\n",
     "p2p", "kv_cache_transfer"),
])
def test_pattern_is_detected_from_the_torch_distributed_calls(body, kind, expected):
    calls = reference_calls(body, "reference")
    assert kind in {c.kind for c in calls}
    if expected in ds.pattern_names():
        assert choose_pattern(calls, body, "ref.py")[0] == expected
    else:
        with pytest.raises(ds.SpecError, match=f"{expected}, which is not registered.*--pattern"):
            choose_pattern(calls, body, "ref.py")


def test_the_family_comes_from_outputs_not_from_the_mix_of_collectives(tmp_path):
    ref = tmp_path / "mixed.py"  # a reduce-scatter after the gather changes nothing the reference returns
    ref.write_text(EXAMPLE_REF.read_text().replace("dist.all_gather(shards, a.contiguous(), group=group)",
                                                   "dist.all_gather(shards, a)\n    dist.reduce_scatter(a, shards)"))
    text = " ".join(_ok(_init("--from-reference", ref, "--out", tmp_path / "m")).split())
    assert "pattern allgather_gemm (from all_gather, reduce_scatter; its outputs equal" in text


@pytest.mark.parametrize("family", ["gemm_allgather", "ulysses_head_to_seq", "tp_mlp", "reducescatter_rmsnorm",
                                    "moe_router_swiglu"])
def test_a_native_reference_is_matched_among_the_families_that_communicate_alike(family, tmp_path):
    # gemm_allgather gathers like allgather_gemm, the Ulysses directions and MoE with its router
    # exchange like the MoE dispatch: each builder is tried at each alike family's dims
    text = " ".join(_ok(_init("--from-reference", ROOT / "examples" / family / "reference.py", "--out",
                              tmp_path / "o")).split())
    assert f"pattern {family} (from " in text and load_spec(tmp_path / "o").pattern == family


def test_missing_or_unmatched_communication_names_pattern_option(tmp_path):
    ref = tmp_path / "none.py"
    ref.write_text("import torch\ndef reference(i, d, g):\n    return i\ndef make_inputs(d, r, w, t, g):\n    return {}\n")
    _one_line_error(_init("--from-reference", ref, "--out", tmp_path / "o"), "no collective", "--pattern")
    p2p = tmp_path / "p2p.py"
    p2p.write_text("import torch.distributed as dist\ndef reference(i, d, g):\n    dist.send(i['x'], 1) if i else None\n"
                   "def make_inputs(d, r, w, t, g):\n    return {}\n")
    _one_line_error(_init("--from-reference", p2p, "--out", tmp_path / "o"), "does not compute", "--pattern NAME")
    assert not (tmp_path / "o").exists()


def test_pattern_option_overrides_detection_but_not_the_semantic_check(tmp_path):
    out = tmp_path / "o"
    text = _ok(_init("--from-reference", EXAMPLE_REF, "--pattern", "allgather_gemm", "--out", out))
    assert "chosen with --pattern" in text and load_spec(out).pattern == "allgather_gemm"
    _one_line_error(_init("--from-reference", EXAMPLE_REF, "--pattern", "teleport", "--out", tmp_path / "p"),
                    "unknown pattern", "allgather_gemm")
    # a family the reference does not compute is refused, whatever --pattern says, and nothing is written
    _one_line_error(_init("--from-reference", EXAMPLE_REF, "--pattern", "gemm_reducescatter", "--out",
                          tmp_path / "q"), "does not compute gemm_reducescatter")
    assert not (tmp_path / "q").exists()


def test_missing_or_misshapen_functions_are_named(tmp_path):
    _one_line_error(_init("--from-reference", EXAMPLE_REF, "--reference", "golden", "--out", tmp_path / "o"),
                    "no function 'golden'", "make_inputs, reference", "--reference")
    bad = tmp_path / "bad.py"
    bad.write_text(EXAMPLE_REF.read_text().replace("def reference(inputs: dict, dims: dict, group)",
                                                   "def reference(inputs)"))
    _one_line_error(_init("--from-reference", bad, "--out", tmp_path / "o"), "reference(inputs, dims, group)")
    broken = tmp_path / "broken.py"
    broken.write_text("def reference(:\n")
    _one_line_error(_init("--from-reference", broken, "--out", tmp_path / "o"), "not valid Python")


def test_non_empty_out_is_refused_without_force(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    _one_line_error(_init("--from-seed", SEED, "--out", out), "not empty", "--force")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    _ok(_init("--from-seed", SEED, "--out", out, "--force"))
    assert (out / "notes.txt").read_text() == "mine" and load_spec(out).seed_kernel == SEED.name


def test_pattern_without_example_gets_todo_shapes_and_a_skeleton_reference(tmp_path, monkeypatch):
    from design_space import patterns
    toy = dataclasses.replace(ds.get_pattern("allgather_gemm"), name="toy_gather")
    monkeypatch.setitem(patterns._PATTERNS, "toy_gather", toy)
    out = tmp_path / "toy"
    text = _ok(_init("--from-seed", SEED, "--pattern", "toy_gather", "--out", out))
    assert "TODO" in text
    assert "TODO" in (out / "spec.py").read_text()
    skeleton = (out / "reference.py").read_text()
    assert "raise NotImplementedError" in skeleton and "def make_inputs(" in skeleton and "def reference(" in skeleton
    compile(skeleton, "reference.py", "exec")
    spec = load_spec(out)
    assert spec.pattern == "toy_gather" and spec.seed_kernel == SEED.name
    assert "NotImplementedError" in (out / "README.md").read_text()


@pytest.mark.parametrize("args, needles", [
    (["init", "--out", "o"], ("exactly one source", "--from-reference")),
    (["init", "--from-seed", "nothing.cu", "--out", "o"], ("no file at nothing.cu",)),
    (["init", "--from-seed", str(SEED), "--name", "9 bad", "--out", "o"], ("invalid spec name",)),
])
def test_bad_input_gets_one_line_from_the_real_command(tmp_path, args, needles):
    res = subprocess.run([CUCO, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "-- fix: " in lines[0]
    for n in needles:
        assert n in lines[0]
    assert not (tmp_path / "o").exists()


def test_only_families_holding_the_dims_the_builder_reads_are_tried():
    from cuco.native_family import candidates, dims_read

    source = (ROOT / "examples" / "gemm_allgather" / "reference.py").read_text()
    needs = dims_read(source, ("reference", "make_inputs"))
    assert needs == {"m", "n", "k", "bias"}
    calls = reference_calls(source, "reference")
    # the same kinds first (by name), then families that also gather (the MLP block, ring attention)
    assert candidates(calls)[:2] == ["allgather_gemm", "gemm_allgather"] and "tp_mlp" in candidates(calls)
    # families lacking a dim it reads (ring attention, the MLP block: no bias) are not tried
    assert candidates(calls, needs)[:2] == ["allgather_gemm", "gemm_allgather"]
    assert all(needs <= set(ds.get_pattern(f).dims) for f in candidates(calls, needs))
    assert "tp_mlp" not in candidates(calls, needs) and "ring_attention" not in candidates(calls, needs)
    assert dims_read("def build(d, r, w, t, g):\n    return {'x': d.get('s')}\n", ("reference", "build")) == {"s"}
