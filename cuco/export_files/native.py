"""The built library (loaded on the first real call, never at import, so importing works on a
machine without a GPU) and one NCCL communicator per (process group, GPU), set up from the
caller's torch.distributed group: group rank 0 makes the ncclUniqueId, the group broadcasts it."""

from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "config.json").read_text())
ABI = 1
ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES
ALIGN = 1 << 16  # symmetric buffers come in 64 KiB steps, as cuco's harness allocates them
DTYPE_CODES = {"fp32": 0, "fp16": 1, "bf16": 2}
_ERR = 512


def aligned(n: int) -> int:
    return max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)


def library_path() -> Path:
    """``$<NAMESPACE>_LIB`` when set (upper case), else the library build.sh writes next to this file."""
    env = os.environ.get(CONFIG["namespace"].upper() + "_LIB")
    return Path(env) if env else HERE / CONFIG["library"]


_lib: Optional[ctypes.CDLL] = None
_lock = threading.Lock()


def library() -> ctypes.CDLL:
    global _lib
    with _lock:
        if _lib is None:
            _lib = _load(library_path())
    return _lib


def _load(path: Path) -> ctypes.CDLL:
    if not path.is_file():
        raise RuntimeError(f"{path} does not exist: build it with {HERE.parent / 'build.sh'} "
                           "(needs nvcc and NCCL >= 2.28)")
    import torch  # noqa: F401  (torch's libnccl.so.2 is loaded first; the library reuses it by soname)

    try:
        lib = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    except OSError as e:
        raise RuntimeError(f"cannot load {path}: {e}. 'undefined symbol: nccl...' means this process's "
                           "libnccl.so.2 predates NCCL 2.28 (the device API): use a torch whose NCCL is 2.28 or "
                           "newer, or LD_PRELOAD a newer libnccl.so.2") from None
    if lib.cuco_export_abi() != ABI:
        raise RuntimeError(f"{path} speaks launcher ABI {lib.cuco_export_abi()}, this package {ABI}: rebuild it")
    lib.cuco_export_unique_id.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.cuco_export_open.restype = ctypes.c_void_p
    lib.cuco_export_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p,
                                     ctypes.c_int]
    lib.cuco_export_run.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
        ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.cuco_export_close.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    return lib


def built_dtype() -> str:
    """The element type the library was built for (build.sh's DTYPE)."""
    code = library().cuco_export_dtype()
    return next(k for k, v in DTYPE_CODES.items() if v == code)


class Communicator:
    """This rank's NCCL communicator, windows and device communicator for one group on one GPU."""

    def __init__(self, group, device) -> None:
        import torch
        import torch.distributed as dist

        self.group, self.device = group, device
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.num_sms = torch.cuda.get_device_properties(device).multi_processor_count
        self.handle: Optional[int] = None
        self.capacity = 0

    def _unique_id(self, lib: ctypes.CDLL) -> bytes:
        """Rank 0's id for every rank; a failure on rank 0 travels too, so no rank waits forever."""
        import torch
        import torch.distributed as dist

        box: List[object] = [None]
        if self.rank == 0:
            buf = ctypes.create_string_buffer(ID_BYTES)
            n = lib.cuco_export_unique_id(buf, ID_BYTES)
            box[0] = buf.raw[:n] if n > 0 else "ncclGetUniqueId failed on group rank 0"
        with torch.cuda.device(self.device):
            dist.broadcast_object_list(box, src=dist.get_global_rank(self.group, 0), group=self.group)
        if not isinstance(box[0], bytes):
            raise RuntimeError(str(box[0]))
        return box[0]

    def ensure(self, symm_bytes: int) -> None:
        """Open (collective) with room for ``symm_bytes``; every rank grows at the same call, so a
        larger shape closes and reopens everywhere."""
        import torch

        need = aligned(symm_bytes)
        if self.handle and need <= self.capacity:
            return
        if self.handle:
            torch.cuda.synchronize(self.device)  # the old buffers may still be in use
            err = self.close()
            if err:
                raise RuntimeError(f"rank {self.rank}: closing the communicator to grow it: {err}")
        lib = library()
        uid = self._unique_id(lib)
        err = ctypes.create_string_buffer(_ERR)
        with torch.cuda.device(self.device):
            h = lib.cuco_export_open(uid, self.rank, self.world, need, err, _ERR)
        if not h:
            raise RuntimeError(f"rank {self.rank}: NCCL setup failed: {err.value.decode(errors='replace')}")
        self.handle, self.capacity = h, need

    def run(self, dims: Sequence[int], inputs: Sequence, outputs: Sequence, workspace, symm_bytes: int,
            stream_handle: int) -> None:
        def ptrs(ts):
            return (ctypes.c_void_p * max(1, len(ts)))(*[t.data_ptr() for t in ts])

        dim_arr = (ctypes.c_int64 * max(1, len(dims)))(*dims)
        err = ctypes.create_string_buffer(_ERR)
        rc = library().cuco_export_run(self.handle, dim_arr, len(dims), ptrs(inputs), len(inputs), ptrs(outputs),
                                       len(outputs), workspace.data_ptr(), workspace.numel(), symm_bytes,
                                       self.num_sms, stream_handle, err, _ERR)
        if rc != 0:
            raise RuntimeError(f"rank {self.rank}: {err.value.decode(errors='replace')}")

    def close(self) -> str:
        """Tear down (collective); the first error's text, or ''."""
        if not self.handle:
            return ""
        err = ctypes.create_string_buffer(_ERR)
        rc = library().cuco_export_close(self.handle, err, _ERR)
        self.handle, self.capacity = None, 0
        return err.value.decode(errors="replace") if rc != 0 else ""


_comms: Dict[Tuple[str, int], Communicator] = {}


def communicator(group_name: str, device) -> Communicator:
    from torch.distributed.distributed_c10d import _resolve_process_group

    key = (group_name, device.index)
    if key not in _comms:
        _comms[key] = Communicator(_resolve_process_group(group_name), device)
    return _comms[key]


def close(group=None) -> List[str]:
    """Tear down this process's communicators (of ``group``, or all); collective over each group.
    Returns the errors (empty when clean). Call it before ``dist.destroy_process_group()``."""
    names = None if group is None else {group.group_name}
    errors = []
    for key in [k for k in _comms if names is None or k[0] in names]:
        err = _comms.pop(key).close()
        if err:
            errors.append(err)
    return errors
