"""Find the compilers and headers the stages need, with errors that name the fix.

Search order for nvcc: $CUCO_NVCC, PATH, $CUDA_HOME/bin, the pip wheels (nvidia-cuda-nvcc).
NCCL device headers: $CUCO_NCCL_INCLUDE, the nvidia-nccl-cu13/cu12 wheels, /usr/include.
No cluster- or machine-specific paths are baked in.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from design_space.errors import ToolchainError

NVCC_WHEELS = (
    "pip install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 "
    "nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85"
)
RUNTIME_DIR = Path(__file__).parent / "runtime"


@dataclass(frozen=True)
class Toolchain:
    nvcc: Path
    nvcc_version: str
    nccl_include: Path
    nccl_version: str


def nvidia_roots() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def find_nvcc() -> Path:
    explicit = os.environ.get("CUCO_NVCC")
    if explicit:
        if Path(explicit).is_file():
            return Path(explicit)
        raise ToolchainError(f"CUCO_NVCC={explicit} does not exist", "point CUCO_NVCC at an nvcc binary or unset it")
    candidates = [shutil.which("nvcc")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(str(Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"))
    candidates += [str(p) for root in nvidia_roots() for p in root.glob("*/bin/nvcc")]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    raise ToolchainError(
        "nvcc (the CUDA compiler) not found on PATH, in $CUDA_HOME/bin or in the nvidia pip wheels",
        f"install the CUDA toolkit or the wheels: {NVCC_WHEELS}",
    )


def find_nccl_include() -> Path:
    explicit = os.environ.get("CUCO_NCCL_INCLUDE")
    roots = [Path(explicit)] if explicit else []
    roots += [root / "nccl" / "include" for root in nvidia_roots()] + [Path("/usr/include")]
    for r in roots:
        if (r / "nccl_device.h").is_file():
            return r
    raise ToolchainError(
        "NCCL device-API headers (nccl_device.h, NCCL >= 2.28) not found",
        "pip install nvidia-nccl-cu13 (or: pip install 'cuco-kernels[nccl]'), or set CUCO_NCCL_INCLUDE",
    )


def find_gxx() -> Path:
    exe = os.environ.get("CUCO_CXX") or shutil.which("g++")
    if exe and Path(exe).is_file():
        return Path(exe)
    raise ToolchainError("g++ not found (the CPU emulator compiles candidates with it)",
                         "install it: apt-get install g++ (Debian/Ubuntu), or set CUCO_CXX")


def tool_version(argv: list[str], pattern: str) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    m = re.search(pattern, out)
    return m.group(1) if m else out.strip().splitlines()[0] if out.strip() else "unknown"


def nccl_header_version(include: Path) -> str:
    text = (include / "nccl.h").read_text(errors="replace")
    parts = [re.search(rf"#define NCCL_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m) or "unknown"


@functools.lru_cache(maxsize=1)
def _cached_toolchain(key: tuple) -> Toolchain:
    nvcc = find_nvcc()
    inc = find_nccl_include()
    return Toolchain(nvcc=nvcc, nvcc_version=tool_version([str(nvcc), "--version"], r"release [\d.]+, V([\d.]+)"),
                     nccl_include=inc, nccl_version=nccl_header_version(inc))


def toolchain() -> Toolchain:
    """The build toolchain; raises ``ToolchainError`` naming what to install."""
    key = tuple(os.environ.get(k, "") for k in ("CUCO_NVCC", "CUCO_NCCL_INCLUDE", "PATH", "CUDA_HOME"))
    return _cached_toolchain(key)


@functools.lru_cache(maxsize=None)
def gxx_version(gxx: Optional[Path] = None) -> str:
    return tool_version([str(gxx or find_gxx()), "-dumpfullversion"], r"([\d.]+)")
