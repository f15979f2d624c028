"""Build a candidate (or the NCCL host helper) as a shared library the GPU harness loads with ctypes.

nvcc ``-shared -Xcompiler -fPIC`` for the target arch with the comm backend and dtype defines;
cudart linked statically (the .so carries its own runtime); for the ``nccl`` backend
``-l:libnccl.so.2`` from the NCCL wheel with an rpath to it (at run time the worker imports torch
first, so the process already holds torch's libnccl.so.2 and the loader reuses it by soname).
In checked mode every ``<<<>>>`` launch of the candidate goes through the co-residency check
(launch_rewrite + runtime/cuco_launch_check.h). Cached by content hash like evaluator/build.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from design_space.errors import ToolchainError
from design_space.evaluation import trim_log
from evaluator import sandbox
from evaluator.build import nvcc_limits, nvcc_view, runtime_digest
from evaluator.gpu.launch_rewrite import rewrite_launches_checked
from evaluator.toolchain import RUNTIME_DIR, Toolchain

BACKENDS = ("nccl", "symm")
HELPER_SOURCE = Path(__file__).with_name("nccl_helper.cu")


@dataclass(frozen=True)
class SharedBuild:
    ok: bool
    path: Optional[Path]  # the .so in the cache, when ok
    log: str
    cached: bool = False
    seconds: float = 0.0


def nccl_lib_dir(tc: Toolchain) -> Path:
    """The folder with libnccl.so.2 next to the headers the build uses (the wheel's lib/)."""
    for d in (tc.nccl_include.parent / "lib", Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64")):
        if (d / "libnccl.so.2").is_file():
            return d
    raise ToolchainError(f"libnccl.so.2 not found next to the NCCL headers in {tc.nccl_include}",
                         "pip install nvidia-nccl-cu13 (the same version as the headers) or set CUCO_NCCL_INCLUDE")


def _nccl_link(tc: Toolchain) -> list[str]:
    lib = nccl_lib_dir(tc)
    return [f"-L{lib}", "-l:libnccl.so.2", "-Xlinker", f"-rpath,{lib}"]


def so_flags(arch: str, backend: str, dtype_code: int, tc: Toolchain, *, checked: bool = True) -> list[str]:
    """nvcc flags of a candidate's shared library (the link flags of ``nccl`` come last)."""
    if backend not in BACKENDS:
        raise ValueError(f"GPU backend must be one of {BACKENDS}, got {backend!r}")
    flags = ["-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "-std=c++17", "-O3", "-lineinfo", "-cudart", "static",
             f"-DCUCO_COMM_{backend.upper()}", f"-DCUCO_DTYPE={dtype_code}", f"-I{RUNTIME_DIR}",
             f"-I{tc.nccl_include}"]
    if checked:
        flags += ["-DCUCO_CHECKED_LAUNCH", "-DCUCO_LAUNCH_CHECK_DEFINE", "-include", "cuco_launch_check.h"]
    return flags + (_nccl_link(tc) if backend == "nccl" else [])


def _compile(source: str, flags: list[str], tag: str, tc: Toolchain, cache_dir: Path, work_dir: Path,
             timeout_s: float) -> SharedBuild:
    key = hashlib.sha256(json.dumps([source, flags, tc.nvcc_version, tc.nccl_version, runtime_digest()])
                         .encode()).hexdigest()[:32]
    folder = cache_dir / "gpu_so"
    so, meta = folder / f"{tag}-{key}.so", folder / f"{tag}-{key}.json"
    if meta.is_file():
        data = json.loads(meta.read_text())
        if not data["ok"] or so.is_file():
            return SharedBuild(ok=data["ok"], path=so if data["ok"] else None, log=data["log"], cached=True)
    start = time.monotonic()
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "candidate.cu").write_text(source)
    libs = (nccl_lib_dir(tc),) if "-l:libnccl.so.2" in flags else ()
    res = sandbox.run([str(tc.nvcc), *flags, "-o", "candidate.so", "candidate.cu"], workdir=work_dir,
                      limits=nvcc_limits(timeout_s), view=nvcc_view(tc, libs), collect=("candidate.so",))
    ok = res.returncode == 0 and not res.timed_out and (work_dir / "candidate.so").is_file()
    log = trim_log(res.output + ("\n(nvcc timed out)" if res.timed_out else ""))
    if not res.timed_out:  # a timeout may be the machine's fault: do not cache it
        folder.mkdir(parents=True, exist_ok=True)
        if ok:
            tmp_so = so.with_suffix(f".{os.getpid()}.tmp")
            tmp_so.write_bytes((work_dir / "candidate.so").read_bytes())
            tmp_so.replace(so)
        tmp = meta.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"ok": ok, "log": log}))
        tmp.replace(meta)
    return SharedBuild(ok=ok, path=so if ok else None, log=log, seconds=time.monotonic() - start)


def build_shared(source: str, *, arch: str, backend: str, dtype_code: int, tc: Toolchain, cache_dir: Path,
                 work_dir: Path, checked: bool = True, timeout_s: float = 300.0) -> SharedBuild:
    """The candidate as ``candidate.so`` exporting ``cuco_run`` (and, checked, ``cuco_gpu_*``)."""
    if checked:
        try:
            source = rewrite_launches_checked(source)
        except ValueError as exc:
            return SharedBuild(ok=False, path=None, log=f"cannot route the kernel launches through the "
                                                       f"co-residency check: {exc}")
    return _compile(source, so_flags(arch, backend, dtype_code, tc, checked=checked), f"{backend}", tc, cache_dir,
                    work_dir, timeout_s)


def build_nccl_helper(*, arch: str, tc: Toolchain, cache_dir: Path, work_dir: Path,
                      timeout_s: float = 300.0) -> SharedBuild:
    """The host helper that creates an NCCL device communicator and windows (once per NCCL version)."""
    flags = ["-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "-std=c++17", "-O2", "-cudart", "static",
             "-DCUCO_COMM_NCCL", f"-I{RUNTIME_DIR}", f"-I{tc.nccl_include}", *_nccl_link(tc)]
    return _compile(HELPER_SOURCE.read_text(), flags, "nccl_helper", tc, cache_dir, work_dir, timeout_s)
