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
    """Run ``binary`` on ``world`` ranks. inputs: (rank, slot) -> array; outputs: (rank, slot) -> bytes."""
    tmp.mkdir(parents=True, exist_ok=True)
    ins = []
    for (rank, slot), arr in (inputs or {}).items():
        path = tmp / f"in_r{rank}_s{slot}.bin"
        path.write_bytes(np.ascontiguousarray(arr).tobytes())
        ins.append((rank, slot, path, path.stat().st_size))
    outs = [(rank, slot, tmp / f"out_r{rank}_s{slot}.bin", n) for (rank, slot), n in (outputs or {}).items()]
    for _, _, path, _ in outs:
        path.unlink(missing_ok=True)
    manifest = shim_build.write_manifest(
        tmp / "manifest.txt", world=world, num_sms=num_sms, iterations=iterations, stall_seconds=stall_seconds,
        dims=dims, dtype_code=dtype, symm_bytes=symm_bytes, workspace_bytes=workspace_bytes, inputs=ins,
        outputs=outs, runaway_seconds=runaway_seconds)
    res = shim_build.run_emulator(binary, manifest, timeout_s=timeout_s, cwd=tmp)
    got = {(r, s): p.read_bytes() for r, s, p, _ in outs if p.exists()}
    return Run(res.returncode, res.stdout, res.stderr, res.seconds, res.timed_out, got)


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
