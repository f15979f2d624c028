"""A ctypes mirror of ``cuco_ctx`` (evaluator/runtime/cuco_ctx.h) for the GPU harness.

The harness fills one per rank with device pointers and passes its address to ``cuco_run``.
The layout is checked against the header by a test that compiles ``offsetof`` of every field
with g++ (tests/evaluator/gpu/test_ctx_layout.py)."""

from __future__ import annotations

import ctypes
import re
from typing import Mapping, Sequence

from evaluator.toolchain import RUNTIME_DIR


def _header_constants() -> dict[str, int]:
    text = (RUNTIME_DIR / "cuco_ctx.h").read_text()
    return {k: int(v) for k, v in re.findall(r"#define (CUCO_\w+) (\d+)\s*$", text, re.M)}


_C = _header_constants()
MAX_RANKS = _C["CUCO_MAX_RANKS"]
MAX_DIMS = _C["CUCO_MAX_DIMS"]
MAX_INPUTS = _C["CUCO_MAX_INPUTS"]
MAX_OUTPUTS = _C["CUCO_MAX_OUTPUTS"]
USER_SIGNALS = _C["CUCO_USER_SIGNALS"]
MAX_BARRIERS = _C["CUCO_MAX_BARRIERS"]
GIN_SIGNALS = _C["CUCO_GIN_SIGNALS"]
# CUCO_SIGNAL_SLOTS is an expression in the header: recompute it the same way
SIGNAL_SLOTS = USER_SIGNALS + MAX_BARRIERS * MAX_RANKS + MAX_BARRIERS + GIN_SIGNALS
SIGNAL_PAD_BYTES = SIGNAL_SLOTS * 8


class CucoCtx(ctypes.Structure):
    _fields_ = [
        ("rank", ctypes.c_int32),
        ("world", ctypes.c_int32),
        ("num_sms", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("dims", ctypes.c_int64 * MAX_DIMS),
        ("in_", ctypes.c_void_p * MAX_INPUTS),  # `in` in C
        ("out", ctypes.c_void_p * MAX_OUTPUTS),
        ("symm", ctypes.c_void_p),
        ("symm_bytes", ctypes.c_size_t),
        ("peer_symm", ctypes.c_void_p * MAX_RANKS),
        ("signals", ctypes.c_void_p),
        ("peer_signals", ctypes.c_void_p * MAX_RANKS),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
        ("epoch", ctypes.c_uint64),
        ("comm", ctypes.c_void_p),
        ("multimem", ctypes.c_void_p),
        ("host_comm", ctypes.c_void_p),
    ]


def c_field_name(name: str) -> str:
    return "in" if name == "in_" else name


def make_ctx(*, rank: int, world: int, num_sms: int, dtype_code: int, dims: Sequence[int], inputs: Sequence[int],
             outputs: Sequence[int], symm: int, symm_bytes: int, peer_symm: Sequence[int], signals: int,
             peer_signals: Sequence[int], workspace: int = 0, workspace_bytes: int = 0, epoch: int = 1,
             comm: int = 0, multimem: int = 0, host_comm: int = 0) -> CucoCtx:
    """A filled context; pointers are plain integers (device addresses)."""
    limits: Mapping[str, tuple[int, int]] = {"dims": (len(dims), MAX_DIMS), "inputs": (len(inputs), MAX_INPUTS),
                                             "outputs": (len(outputs), MAX_OUTPUTS), "world": (world, MAX_RANKS)}
    over = [f"{k} {n} > {m}" for k, (n, m) in limits.items() if n > m]
    if over or len(peer_symm) != world or len(peer_signals) != world:
        raise ValueError(f"cuco_ctx cannot hold this rank: {', '.join(over) or 'peer tables must have world entries'}")
    c = CucoCtx()
    c.rank, c.world, c.num_sms, c.dtype = rank, world, num_sms, dtype_code
    for i, d in enumerate(dims):
        c.dims[i] = d
    for i, p in enumerate(inputs):
        c.in_[i] = p
    for i, p in enumerate(outputs):
        c.out[i] = p
    for i, (s, g) in enumerate(zip(peer_symm, peer_signals)):
        c.peer_symm[i], c.peer_signals[i] = s, g
    c.symm, c.symm_bytes, c.signals = symm, symm_bytes, signals
    c.workspace, c.workspace_bytes, c.epoch = workspace, workspace_bytes, epoch
    c.comm, c.multimem, c.host_comm = comm, multimem, host_comm
    return c
