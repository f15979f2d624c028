"""ctypes faces of the two native libraries the GPU worker loads: a candidate (``cuco_run`` and,
in checked builds, the co-residency controls) and the NCCL host helper (nccl_helper.cu)."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Optional

from evaluator.gpu.ctx_layout import CucoCtx


class CandidateLib:
    """One loaded candidate .so. ``checked`` is True when it carries cuco_launch_check.h."""

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        self.run_fn = self.lib.cuco_run
        self.run_fn.argtypes = [ctypes.POINTER(CucoCtx), ctypes.c_void_p]
        self.run_fn.restype = ctypes.c_int
        self.checked = hasattr(self.lib, "cuco_gpu_refusal")
        if self.checked:
            self.lib.cuco_gpu_refusal.restype = ctypes.c_char_p
            self.lib.cuco_gpu_set_sm_share.argtypes = [ctypes.c_int]
            self.lib.cuco_gpu_set_dry_run.argtypes = [ctypes.c_int]
            self.lib.cuco_gpu_launch_count.restype = ctypes.c_int
            self.lib.cuco_gpu_run_tracked.restype = ctypes.c_int
            self.lib.cuco_gpu_run_tracked.argtypes = [ctypes.POINTER(CucoCtx), ctypes.c_void_p,
                                                      ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                                      ctypes.POINTER(ctypes.c_int)]
            self.lib.cuco_gpu_stream_busy.restype = ctypes.c_int
            self.lib.cuco_gpu_stream_busy.argtypes = [ctypes.c_void_p]

    MAX_SIDE = 64

    def run(self, ctx: CucoCtx, stream_handle: int) -> int:
        """cuco_run(&ctx, stream); ctypes drops the GIL, so ranks may call it from threads."""
        return self.run_tracked(ctx, stream_handle)[0]

    def run_tracked(self, ctx: CucoCtx, stream_handle: int) -> tuple[int, list[int]]:
        """(cuco_run's code, the other streams its launches used; empty in unchecked builds)."""
        if not self.checked:
            return int(self.run_fn(ctypes.byref(ctx), ctypes.c_void_p(stream_handle))), []
        side = (ctypes.c_void_p * self.MAX_SIDE)()
        n = ctypes.c_int(0)
        rc = self.lib.cuco_gpu_run_tracked(ctypes.byref(ctx), ctypes.c_void_p(stream_handle), side, self.MAX_SIDE,
                                           ctypes.byref(n))
        return int(rc), [side[i] or 0 for i in range(n.value)]

    def stream_busy(self, stream_handle: int) -> bool:
        return bool(self.checked and self.lib.cuco_gpu_stream_busy(ctypes.c_void_p(stream_handle)))

    def set_sm_share(self, sms: int) -> None:
        if self.checked:
            self.lib.cuco_gpu_set_sm_share(int(sms))

    def set_dry_run(self, on: bool) -> None:
        if self.checked:
            self.lib.cuco_gpu_set_dry_run(1 if on else 0)

    def refusal(self) -> str:
        return self.lib.cuco_gpu_refusal().decode(errors="replace") if self.checked else ""

    def reset(self) -> None:
        if self.checked:
            self.lib.cuco_gpu_reset()


class NcclHelper:
    """The candidate's own NCCL communicator, windows and device communicator for one rank."""

    ID_BYTES = 128

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        self.lib.cuco_nccl_open.restype = ctypes.c_void_p
        self.lib.cuco_nccl_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_size_t,
                                            ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int]
        self.lib.cuco_nccl_close.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        self.lib.cuco_nccl_pointers.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        self.lib.cuco_nccl_peer_pointers.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
        self.lib.cuco_nccl_properties.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        self.handle: Optional[int] = None

    def version(self) -> int:
        return int(self.lib.cuco_nccl_version())

    def unique_id(self) -> bytes:
        buf = ctypes.create_string_buffer(self.ID_BYTES)
        n = self.lib.cuco_nccl_unique_id(buf, self.ID_BYTES)
        if n <= 0:
            raise RuntimeError("ncclGetUniqueId failed")
        return buf.raw[:n]

    def open(self, uid: bytes, rank: int, world: int, symm_bytes: int, signal_bytes: int) -> None:
        err = ctypes.create_string_buffer(512)
        h = self.lib.cuco_nccl_open(uid, rank, world, symm_bytes, signal_bytes, err, 512)
        if not h:
            raise RuntimeError(f"NCCL device communicator setup failed: {err.value.decode(errors='replace')}")
        self.handle = h

    def pointers(self) -> dict[str, int]:
        out = (ctypes.c_void_p * 4)()
        self.lib.cuco_nccl_pointers(self.handle, out)
        return {"symm": out[0] or 0, "signals": out[1] or 0, "comm": out[2] or 0, "host_comm": out[3] or 0}

    def peer_pointers(self, peer: int) -> tuple[int, int]:
        out = (ctypes.c_void_p * 2)()
        if self.lib.cuco_nccl_peer_pointers(self.handle, peer, out) != 0:
            return 0, 0  # not addressable from here (another node): copy-engine transfers cannot reach it
        return out[0] or 0, out[1] or 0

    def zero(self, symm_bytes: int, signal_bytes: int) -> None:
        self.lib.cuco_nccl_zero.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        if self.lib.cuco_nccl_zero(self.handle, symm_bytes, signal_bytes) != 0:
            raise RuntimeError("cudaMemset of the NCCL windows failed")

    def properties(self) -> dict[str, int]:
        out = (ctypes.c_int * 3)()
        self.lib.cuco_nccl_properties(self.handle, out)
        return {"device_api": out[0], "multimem": out[1], "gin_type": out[2]}

    def close(self) -> str:
        """Tear everything down; returns the first error ('' when clean)."""
        if not self.handle:
            return ""
        err = ctypes.create_string_buffer(512)
        rc = self.lib.cuco_nccl_close(self.handle, err, 512)
        self.handle = None
        return err.value.decode(errors="replace") if rc != 0 else ""
