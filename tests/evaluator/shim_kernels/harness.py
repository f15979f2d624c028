"""Helpers for the CPU emulator tests: build a kernel from this folder once per session and run
it on numpy inputs through a manifest, returning the outputs as bytes."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from evaluator import shim_build

KERNELS = Path(__file__).resolve().parent
# The runtime library is keyed by a hash of its sources, so sharing it across runs is safe.
RUNTIME_CACHE = Path(tempfile.gettempdir()) / "cuco-emu-test-runtime"
_BUILD_ROOT = Path(tempfile.mkdtemp(prefix="cuco-emu-tests-"))
atexit.register(shutil.rmtree, _BUILD_ROOT, ignore_errors=True)
_BUILT: dict[tuple, Path] = {}


def build(name: str, *defines: str, dtype: int = 0) -> Path:
    """Compile shim_kernels/<name>.cu with -D<define>s; fail the test with g++'s log if it breaks."""
    key = (name, defines, dtype)
    if key not in _BUILT:
        work = _BUILD_ROOT / f"{name}-{'-'.join(defines) or 'plain'}-{dtype}"
        res = shim_build.compile_emulator((KERNELS / f"{name}.cu").read_text(), work, dtype_code=dtype,
                                          cache_dir=RUNTIME_CACHE, extra_flags=tuple(f"-D{d}" for d in defines))
        if not res.ok:
            pytest.fail(f"emulator build of {name} {defines} failed:\n{res.log}")
        _BUILT[key] = res.binary
    return _BUILT[key]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    outputs: dict[tuple[int, int], bytes]


def run(binary: Path, tmp: Path, *, world: int = 1, inputs: dict[tuple[int, int], np.ndarray] | None = None,
        outputs: dict[tuple[int, int], int] | None = None, dims=(0,), iterations: int = 2, symm_bytes: int = 0,
        workspace_bytes: int = 4096, stall_seconds: float = 3, num_sms: int = 4, dtype: int = 0,
        timeout_s: float = 60, runaway_seconds: int | None = None) -> Run:
    """Run ``binary`` on ``world`` ranks for ``iterations`` calls with the same inputs.
    inputs: (rank, slot) -> array; outputs: (rank, slot) -> bytes; returns the last call's outputs."""
    tmp.mkdir(parents=True, exist_ok=True)
    ins = {key: np.ascontiguousarray(arr).tobytes() for key, arr in (inputs or {}).items()}
    res = shim_build.run_emulator(binary, world=world, dims=dims, calls=iterations, inputs=ins, outputs=outputs,
                                  num_sms=num_sms, dtype_code=dtype, symm_bytes=symm_bytes,
                                  workspace_bytes=workspace_bytes, stall_seconds=stall_seconds,
                                  runaway_seconds=runaway_seconds, timeout_s=timeout_s, cwd=tmp)
    return Run(res.returncode, res.stdout, res.stderr, res.seconds, res.timed_out, res.outputs)


def floats(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.float32)


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, round to nearest even (NaN kept quiet)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def from_bf16_bits(b: np.ndarray) -> np.ndarray:
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
