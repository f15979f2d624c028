"""The machine probes behind `cuco doctor`, run for real on this machine (no mocks): NCCL's library
and header versions, the ncclCommProperties layout read from the headers, the GPU probes saying
"no GPU" without one, the isolation probes, and LLM key names that never carry their values."""

import ctypes
import importlib.metadata
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from evaluator import machine_probe as mp
from evaluator import nccl_probe as npb
from evaluator import toolchain

HAS_GPU = mp.probe_gpus().available


def _wheel_nccl_version():
    for dist in ("nvidia-nccl-cu13", "nvidia-nccl-cu12"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    pytest.skip("no nvidia-nccl wheel installed (pip install nvidia-nccl-cu13)")


def test_nccl_library_version_equals_the_wheel_version(monkeypatch):
    monkeypatch.delenv("CUCO_NCCL_LIB", raising=False)
    wheel = _wheel_nccl_version()
    probe = npb.probe_nccl()
    assert probe.lib_version == wheel
    assert probe.lib_path and probe.lib_path.endswith("libnccl.so.2")


def test_nccl_headers_match_the_library_and_offer_the_device_api(monkeypatch):
    monkeypatch.delenv("CUCO_NCCL_LIB", raising=False)
    monkeypatch.delenv("CUCO_NCCL_INCLUDE", raising=False)
    wheel = _wheel_nccl_version()
    probe = npb.probe_nccl()
    assert probe.header_version == wheel and probe.headers_ok
    assert probe.device_api is (tuple(int(x) for x in wheel.split(".")[:2]) >= (2, 28))
    assert probe.reason == ""


def test_an_unloadable_nccl_library_is_a_reason_not_a_crash(monkeypatch, tmp_path):
    bogus = tmp_path / "libnccl.so.2"
    bogus.write_text("not a library")
    monkeypatch.setenv("CUCO_NCCL_LIB", str(bogus))
    probe = npb.probe_nccl()
    assert probe.lib_version is None and not probe.device_api
    assert "cannot be loaded" in probe.reason and "CUCO_NCCL_LIB" in probe.reason


@pytest.mark.parametrize("code, version", [(23203, "2.32.3"), (22805, "2.28.5"), (21903, "2.19.3"), (2708, "2.7.8")])
def test_nccl_version_codes_read_in_both_encodings(code, version):
    assert npb.version_from_code(code) == version


def test_struct_fields_reads_arrays_pointers_enums_and_comma_lists():
    header = """
    typedef struct demo {
      size_t size;        /* internal */
      unsigned int magic; // trailing comment
      int a, b;
      bool flags[64];
      struct demo* next;
      ncclGinType_t gin;
    } demo_t;"""
    assert npb.struct_fields(header, "demo") == [
        ("size_t", "size", 0), ("unsigned int", "magic", 0), ("int", "a", 0), ("int", "b", 0),
        ("bool", "flags", 64), ("void*", "next", 0), ("ncclGinType_t", "gin", 0)]
    with pytest.raises(ValueError, match="not found"):
        npb.struct_fields(header, "absent")


def _cuda_include() -> Path:
    roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    try:
        nvcc = toolchain.find_nvcc()
        roots += [str(nvcc.resolve().parent.parent)]
    except Exception:
        pass
    roots += [str(r / sub) for r in toolchain.nvidia_roots() for sub in ("cu13", "cuda_runtime")]
    for r in filter(None, roots):
        if (Path(r) / "include" / "cuda_runtime.h").is_file():
            return Path(r) / "include"
    pytest.skip("cuda_runtime.h not found (nccl.h includes it)")


def test_comm_properties_layout_matches_the_compiler(tmp_path):
    """The ctypes struct read from nccl.h has g++'s size and every field at g++'s offset."""
    if not shutil.which("g++"):
        pytest.skip("needs g++")
    include = toolchain.find_nccl_include()
    props = npb.ctypes_struct(include)
    names = [f[0] for f in props._fields_]
    assert {"deviceApiSupport", "multimemSupport", "ginType"} <= set(names)
    prints = "".join(f'printf("{n} %zu\\n", offsetof(ncclCommProperties_t, {n}));' for n in names)
    src = tmp_path / "layout.cpp"
    src.write_text("#include <cstdio>\n#include <cstddef>\n#include <nccl.h>\n#include <nccl_device.h>\n"
                   f'int main() {{ printf("sizeof %zu\\n", sizeof(ncclCommProperties_t)); {prints} }}\n')
    exe = tmp_path / "layout"
    subprocess.run(["g++", "-std=c++17", f"-I{include}", f"-I{_cuda_include()}", str(src), "-o", str(exe)],
                   check=True, capture_output=True, timeout=120)
    got = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True).stdout.splitlines())
    assert int(got["sizeof"]) == ctypes.sizeof(props)
    assert {n: int(got[n]) for n in names} == {n: getattr(props, n).offset for n in names}


def test_struct_with_an_unknown_field_type_is_refused(tmp_path):
    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "nccl.h").write_text("typedef struct ncclCommProperties { size_t size; mystery_thing x; } ncclCommProperties_t;")
    with pytest.raises(ValueError, match="mystery_thing"):
        npb.ctypes_struct(inc)


@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU: the no-GPU answers do not apply")
def test_gpu_probes_say_no_gpu_without_one():
    gpu = mp.probe_gpus()
    assert not gpu.available and gpu.reason.startswith("no GPU") and gpu.devices == ()
    torch = mp.probe_torch(gpu)
    assert torch.cuda_usable is None and torch.import_s is None  # torch was not imported for nothing
    report = mp.probe_machine()
    assert not report.nccl_comm.available and report.nccl_comm.reason.startswith("no GPU")
    for name in ("verify", "bench"):
        tier = report.tier(name)
        assert not tier.available and tier.reason.startswith("no GPU")
        assert {b.name for b in tier.backends} == {"symm", "nccl", "gin", "multimem"}
        assert all(not b.available and b.detail.startswith("no GPU") for b in tier.backends)



@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU: the communicator would come up")
def test_comm_probe_child_reports_nccls_refusal_without_a_gpu(monkeypatch):
    """The child process really runs NCCL here: it gets as far as ncclCommInitRank, which has no
    GPU to use, and the parent turns that into a reason instead of crashing."""
    monkeypatch.delenv("CUCO_NCCL_LIB", raising=False)
    nccl = npb.probe_nccl()
    if not nccl.device_api:
        pytest.skip(nccl.reason)
    comm = npb.probe_nccl_comm(nccl, timeout_s=60)
    assert not comm.available and comm.device_api_support is None
    assert "ncclCommInitRank" in comm.reason or "ncclGetUniqueId" in comm.reason, comm.reason

def test_cpu_tiers_are_available_here():
    report = mp.probe_machine()
    build, emulate = report.tier("build"), report.tier("emulate")
    assert build.available and build.reason == "" and report.nvcc.available
    assert {b.name: b.available for b in build.backends} == {"nccl": True, "symm": True}
    assert emulate.available and [b.name for b in emulate.backends] == ["cpu"] and emulate.backends[0].available
    assert report.probe_s < 3.0


def test_torch_version_is_read_without_importing_it():
    import importlib.util
    import sys
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    probe = mp.probe_torch(mp.GpuProbe(False, "no GPU: test"))
    version = importlib.metadata.version("torch")
    assert probe.available and probe.version == version
    if "torch" in sys.modules:
        import torch
        assert probe.cuda_build == torch.version.cuda


def test_llm_key_names_are_reported_but_values_never(monkeypatch):
    secret = f"planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("SOMEVENDOR_API_KEY", secret[::-1])
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    names = mp.probe_llm_keys()
    assert "OPENAI_API_KEY" in names and "SOMEVENDOR_API_KEY" in names and "ANTHROPIC_API_KEY" not in names
    text = repr(mp.probe_machine().to_dict())
    assert "OPENAI_API_KEY" in text
    for piece in (secret, secret[:6], secret[-6:], secret[::-1][:6]):
        assert piece not in text


def test_an_empty_key_counts_as_unset():
    assert mp.probe_llm_keys({"OPENAI_API_KEY": "", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}) == ("ANTHROPIC_BASE_URL",)


def test_network_namespace_probe_agrees_with_unshare():
    cap = next(c for c in mp.probe_isolation() if c.name == "network namespace")
    exe = shutil.which("unshare")
    works = bool(exe) and subprocess.run([exe, "-n", "true"], capture_output=True).returncode == 0
    assert cap.available is works
    assert cap.detail  # how it works, or why not


def test_process_limit_probe_reports_what_the_sandbox_will_use():
    from evaluator import jail
    cap = next(c for c in mp.probe_isolation() if c.name == "process limit")
    parent = jail.pids_cgroup_parent()
    if parent is not None:
        assert cap.available and str(parent) in cap.detail
    elif os.geteuid() != 0:
        assert cap.available and "RLIMIT_NPROC" in cap.detail  # binds everyone but root
    else:
        assert not cap.available and "fork bomb" in cap.detail


def test_missing_gxx_makes_emulate_unavailable_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("CUCO_CXX", str(tmp_path / "no-such-g++"))
    monkeypatch.setenv("PATH", str(tmp_path))
    gxx = mp.probe_gxx()
    assert not gxx.available and "apt-get install g++" in gxx.reason
    tiers = mp.decide_tiers(mp.Tool("nvcc", True, "13.0"), gxx, mp.GpuProbe(False, "no GPU: test"),
                            npb.probe_nccl(), npb.NcclCommProbe(False, "no GPU: test"), mp.TorchProbe(False))
    emulate = next(t for t in tiers if t.name == "emulate")
    assert not emulate.available and "g++" in emulate.reason and not emulate.backends[0].available


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU with a working driver")
def test_gpu_probe_lists_devices_and_asks_a_one_rank_nccl_communicator():
    gpu = mp.probe_gpus()
    assert gpu.devices and all(d.sm_count > 0 and d.memory_bytes > 0 for d in gpu.devices)
    assert gpu.cuda_driver_version
    nccl = npb.probe_nccl()
    comm = npb.probe_nccl_comm(nccl)
    if nccl.device_api:
        assert comm.available, comm.reason
        assert comm.device_api_support is not None and comm.gin_type is not None
    report = mp.probe_machine()
    verify = report.tier("verify")
    assert verify.available == bool(report.torch.cuda_usable)
