"""What this machine can do for the evaluator: compilers, GPUs, CUDA, NCCL, torch, the sandbox's
isolation, the tiers and comm backends that follow, and which LLM keys are set (names only).

Every probe is a small function returning a frozen dataclass, measured by actually trying (no
caching: a doctor run must see the machine as it is now). Probes never raise: what is missing
becomes ``available=False`` with a one-line reason. GPU probes say ``no GPU: ...`` on machines
without one. NCCL's device-API properties need a communicator, so that probe runs in a child
process with a timeout (NCCL bootstrap can hang); see ``evaluator.nccl_probe``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from design_space.errors import ToolchainError
from evaluator import jail, toolchain
from evaluator.nccl_probe import NcclCommProbe, NcclProbe, probe_nccl, probe_nccl_comm

NO_GPU = "no GPU"
SHIM_DIR = Path(__file__).resolve().parent / "shim"
# Names only: never a value, a prefix or a suffix of one leaves this module.
LLM_ENV_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY",
                 "GOOGLE_API_KEY", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY", "AZURE_OPENAI_API_KEY",
                 "AZURE_OPENAI_ENDPOINT", "MISTRAL_API_KEY", "TOGETHER_API_KEY", "GROQ_API_KEY")
_CU_ATTR = {"sm_count": 16, "cc_major": 75, "cc_minor": 76, "multicast": 132}  # CUdevice_attribute values


@dataclass(frozen=True)
class Tool:
    name: str
    available: bool
    version: Optional[str] = None
    path: Optional[str] = None
    reason: str = ""  # why not available, with the fix


@dataclass(frozen=True)
class GpuDevice:
    index: int
    name: str
    memory_bytes: int
    sm_count: int
    compute_capability: str
    multicast: bool  # CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: NVLink SHARP (multimem) usable


@dataclass(frozen=True)
class GpuProbe:
    available: bool
    reason: str = ""
    driver_version: Optional[str] = None  # the kernel driver, e.g. 580.95.05
    cuda_driver_version: Optional[str] = None  # the newest CUDA the driver runs, e.g. 13.0
    devices: tuple[GpuDevice, ...] = ()


@dataclass(frozen=True)
class TorchProbe:
    available: bool
    version: Optional[str] = None
    cuda_build: Optional[str] = None  # torch.version.cuda, None for a CPU build
    symmetric_memory: bool = False  # torch.distributed._symmetric_memory ships with it
    cuda_usable: Optional[bool] = None  # only asked (importing torch) when a GPU is present
    import_s: Optional[float] = None
    reason: str = ""


@dataclass(frozen=True)
class Capability:
    name: str
    available: bool
    detail: str  # how it works here, or why it does not


@dataclass(frozen=True)
class TierStatus:
    name: str
    available: bool
    reason: str
    backends: tuple[Capability, ...]


@dataclass(frozen=True)
class MachineReport:
    python: Tool
    nvcc: Tool
    gxx: Tool
    cuda_runtime: Tool
    gpu: GpuProbe
    nccl: NcclProbe
    nccl_comm: NcclCommProbe
    torch: TorchProbe
    isolation: tuple[Capability, ...]
    llm_keys: tuple[str, ...]
    tiers: tuple[TierStatus, ...]
    probe_s: float

    def tier(self, name: str) -> TierStatus:
        return next(t for t in self.tiers if t.name == name)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def probe_python() -> Tool:
    return Tool("python", True, platform.python_version(), sys.executable)


def probe_nvcc() -> Tool:
    try:
        nvcc = toolchain.find_nvcc()
    except ToolchainError as e:
        return Tool("nvcc", False, reason=str(e))
    version = toolchain.tool_version([str(nvcc), "--version"], r"release [\d.]+, V([\d.]+)")
    return Tool("nvcc", version != "unknown", version, str(nvcc), "" if version != "unknown" else f"{nvcc} --version failed")


def probe_gxx() -> Tool:
    """g++ found and able to compile C++17 with threads (what the emulator's runtime needs)."""
    try:
        gxx = toolchain.find_gxx()
    except ToolchainError as e:
        return Tool("g++", False, reason=str(e))
    src = "#include <thread>\n#include <atomic>\nint main() { std::atomic<int> a{0}; return a; }\n"
    try:
        res = subprocess.run([str(gxx), "-std=c++17", "-pthread", "-fsyntax-only", "-x", "c++", "-"], input=src,
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return Tool("g++", False, path=str(gxx), reason=f"{gxx} did not run: {e}")
    version = toolchain.tool_version([str(gxx), "-dumpfullversion"], r"([\d.]+)")
    if res.returncode != 0:
        return Tool("g++", False, version, str(gxx), f"{gxx} cannot compile C++17: {res.stderr.strip()[:200]}")
    return Tool("g++", True, version, str(gxx))


def probe_cuda_runtime() -> Tool:
    """The CUDA runtime library's version (cudaRuntimeGetVersion needs no GPU)."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        v = ctypes.c_int(0)
        if lib.cudaRuntimeGetVersion(ctypes.byref(v)) == 0:
            return Tool("cuda runtime", True, _cuda_version(v.value), name)
    return Tool("cuda runtime", False, reason="libcudart not found: install the CUDA toolkit or nvidia-cuda-runtime")


def _cuda_version(code: int) -> str:
    return f"{code // 1000}.{code % 1000 // 10}"


def probe_gpus() -> GpuProbe:
    """GPUs through the driver library (libcuda), the way every CUDA program sees them."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return GpuProbe(False, f"{NO_GPU}: the NVIDIA driver library libcuda.so.1 is not installed")
    rc = cuda.cuInit(0)
    version = ctypes.c_int(0)
    cuda.cuDriverGetVersion(ctypes.byref(version))
    cuda_v = _cuda_version(version.value) if version.value else None
    if rc != 0:
        return GpuProbe(False, f"{NO_GPU}: cuInit failed with CUresult {rc}", _driver_version(), cuda_v)
    count = ctypes.c_int(0)
    cuda.cuDeviceGetCount(ctypes.byref(count))
    devices = tuple(_device(cuda, i) for i in range(count.value))
    if not devices:
        return GpuProbe(False, f"{NO_GPU}: the driver sees no device", _driver_version(), cuda_v)
    return GpuProbe(True, "", _driver_version(), cuda_v, devices)


def _device(cuda, index: int) -> GpuDevice:
    dev = ctypes.c_int(0)
    cuda.cuDeviceGet(ctypes.byref(dev), index)
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, dev)
    mem = ctypes.c_size_t(0)
    cuda.cuDeviceTotalMem_v2(ctypes.byref(mem), dev)
    attrs = {}
    for key, attr in _CU_ATTR.items():
        v = ctypes.c_int(0)
        attrs[key] = v.value if cuda.cuDeviceGetAttribute(ctypes.byref(v), attr, dev) == 0 else 0
    return GpuDevice(index, name.value.decode(errors="replace"), mem.value, attrs["sm_count"],
                     f"{attrs['cc_major']}.{attrs['cc_minor']}", bool(attrs["multicast"]))


def _driver_version() -> Optional[str]:
    proc = Path("/proc/driver/nvidia/version")
    if proc.is_file():
        m = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", proc.read_text(errors="replace"))
        if m:
            return m.group(1)
    exe = shutil.which("nvidia-smi")
    if exe:
        try:
            out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=15).stdout.split()
            return out[0] if out else None
        except (OSError, subprocess.SubprocessError):
            return None
    return None


def probe_torch(gpu: GpuProbe) -> TorchProbe:
    """torch's version and CUDA build read from its files; torch itself is imported (and the
    import timed) only when a GPU is present, to ask whether this torch can use it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return TorchProbe(False, reason="torch not installed: pip install torch (the CPU build on machines without a GPU)")
    root = Path(next(iter(spec.submodule_search_locations)))
    text = (root / "version.py").read_text(errors="replace") if (root / "version.py").is_file() else ""
    version = _assigned(text, "__version__")
    cuda = _assigned(text, "cuda")
    symm = (root / "distributed" / "_symmetric_memory" / "__init__.py").is_file()
    if not gpu.available:
        return TorchProbe(True, version, cuda, symm, reason=f"{NO_GPU}: torch not imported")
    start = time.monotonic()
    try:
        import torch
        usable = bool(torch.cuda.is_available())
        reason = "" if usable else "torch.cuda.is_available() is False: install a torch built for this driver's CUDA"
    except Exception as e:  # a broken torch install is a finding, not a crash
        usable, reason = False, f"import torch failed: {e}"
    return TorchProbe(True, version, cuda, symm, usable, round(time.monotonic() - start, 3), reason)


def _assigned(text: str, name: str) -> Optional[str]:
    m = re.search(rf"^{name}\s*(?::[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return m.group(1) if m else None


def probe_llm_keys(environ: Optional[dict[str, str]] = None) -> tuple[str, ...]:
    """Names of the LLM keys and endpoints set here (any *_API_KEY too). Values are never read
    beyond "non-empty"."""
    env = os.environ if environ is None else environ
    names = {n for n in LLM_ENV_NAMES if env.get(n)}
    names |= {n for n, v in env.items() if n.endswith("_API_KEY") and v}
    return tuple(sorted(names))


def probe_isolation() -> tuple[Capability, ...]:
    """What the sandbox will use on this machine: the jail's own probes (evaluator/jail.py), asked
    afresh, so the doctor reports exactly what a stage gets."""
    m = jail.modes.__wrapped__()  # bypass the cache: a doctor sees the machine as it is now
    how = " ".join(a for a in (m.prefix or m.net_only)[1:] if a != "--")
    full, net = bool(m.prefix), bool(m.prefix or m.net_only)
    refused = "unshare refused it here (needs root or user namespaces)"
    return (Capability("network namespace", net, f"no network: a private namespace, loopback only (unshare {how})"
                       if net else refused),
            Capability("pid namespace", full, "a stage sees only its own processes and dies whole" if full else refused),
            Capability("mount namespace", full, "read-only filesystem but the stage's folder, private /dev/shm"
                       if full else refused),
            _process_limit(),
            _rlimits())


def _process_limit() -> Capability:
    """A cgroup pids limit holds for root too; RLIMIT_NPROC does not (root bypasses it)."""
    parent = jail.pids_cgroup_parent()
    if parent is not None:
        return Capability("process limit", True, f"cgroup pids.max under {parent}")
    if os.geteuid() != 0:
        return Capability("process limit", True, "RLIMIT_NPROC (counts all processes of this user)")
    return Capability("process limit", False, "no writable cgroup pids controller, and RLIMIT_NPROC does not bind "
                                              "root: a fork bomb is stopped only by the wall-clock kill of its group")


def _rlimits() -> Capability:
    exe = shutil.which("prlimit")
    how = f"prlimit ({exe})" if exe else "resource.setrlimit in the child"
    return Capability("rlimits", True, f"CPU time, address space, file size, open files via {how}")


def probe_machine() -> MachineReport:
    start = time.monotonic()
    nvcc, gxx, gpu = probe_nvcc(), probe_gxx(), probe_gpus()
    nccl = probe_nccl()
    comm = probe_nccl_comm(nccl) if gpu.available else NcclCommProbe(False, f"{NO_GPU}: no communicator to ask")
    torch = probe_torch(gpu)
    tiers = decide_tiers(nvcc, gxx, gpu, nccl, comm, torch)
    return MachineReport(probe_python(), nvcc, gxx, probe_cuda_runtime(), gpu, nccl, comm, torch, probe_isolation(),
                         probe_llm_keys(), tiers, round(time.monotonic() - start, 3))


def decide_tiers(nvcc: Tool, gxx: Tool, gpu: GpuProbe, nccl: NcclProbe, comm: NcclCommProbe,
                 torch: TorchProbe) -> tuple[TierStatus, ...]:
    build_why = nvcc.reason or ("" if nccl.headers_ok else nccl.header_reason)
    build = TierStatus("build", not build_why, build_why, (
        Capability("nccl", nccl.headers_ok and nvcc.available, nccl.header_reason or "compiles against the NCCL device API"),
        Capability("symm", nvcc.available, nvcc.reason or "compiles against the symmetric-memory pointer tables")))
    shim_ok = all((SHIM_DIR / f).is_file() for f in ("emu_main.cpp", "sched.cpp"))
    emu_why = gxx.reason or ("" if shim_ok else "the emulator sources (evaluator/shim) are missing: reinstall cuco")
    emulate = TierStatus("emulate", not emu_why, emu_why, (
        Capability("cpu", not emu_why, emu_why or "g++ + CUDA shim: logic, indexing and signalling; not GPU memory ordering"),))
    gpu_why = _gpu_tier_reason(gpu, torch)
    backends = _gpu_backends(gpu_why, gpu, nccl, comm, torch)
    return (build, emulate, TierStatus("verify", not gpu_why, gpu_why, backends),
            TierStatus("bench", not gpu_why, gpu_why, backends))


def _gpu_tier_reason(gpu: GpuProbe, torch: TorchProbe) -> str:
    if not gpu.available:
        return gpu.reason
    if not torch.available or not torch.cuda_usable:
        return torch.reason or "torch cannot use the GPU"
    return ""


def _gpu_backends(gpu_why: str, gpu: GpuProbe, nccl: NcclProbe, comm: NcclCommProbe,
                  torch: TorchProbe) -> tuple[Capability, ...]:
    if gpu_why:
        return tuple(Capability(b, False, gpu_why) for b in ("symm", "nccl", "gin", "multimem"))
    n = len(gpu.devices)
    ranks = f"{n} GPUs" if n > 1 else "virtual ranks on 1 GPU"
    symm = Capability("symm", torch.symmetric_memory, f"torch symmetric memory, {ranks}" if torch.symmetric_memory
                      else "this torch lacks torch.distributed._symmetric_memory: install torch >= 2.5")
    nccl_ok = comm.available and bool(comm.device_api_support)
    nccl_cap = Capability("nccl", nccl_ok, f"NCCL {nccl.lib_version} device API" if nccl_ok
                          else comm.reason or nccl.reason or "NCCL reports no device-API support")
    gin_ok = nccl_ok and comm.gin_type not in (None, "none")
    gin = Capability("gin", gin_ok, f"GIN type {comm.gin_type}" if gin_ok else "NCCL reports no GIN transport here")
    mc = all(d.multicast for d in gpu.devices)
    mm_ok = mc and nccl_ok and bool(comm.multimem_support)
    mm = Capability("multimem", mm_ok, "NVLink SHARP multicast" if mm_ok else
                    "the GPU reports no multicast support (needs Hopper+ with NVSwitch)" if not mc
                    else "NCCL reports no multimem support on this communicator")
    return (symm, nccl_cap, gin, mm)
