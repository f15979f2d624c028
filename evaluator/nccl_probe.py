"""NCCL as this machine has it: the runtime library's version (``ncclGetVersion`` through ctypes,
which needs no GPU), the header version, whether the device API is there (>= 2.28), and on a GPU
the properties of a 1-rank communicator (``ncclCommQueryProperties``: deviceApiSupport,
multimemSupport, ginType).

``ncclCommProperties_t`` changes between NCCL versions, so its ctypes layout is read from the
headers that come with the library rather than written down here. The communicator is made in
a child process (``python -m evaluator.nccl_probe LIB INCLUDE``) with a timeout: NCCL bootstrap
can hang, and a doctor must not.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from design_space.errors import ToolchainError
from evaluator import toolchain

DEVICE_API_MIN = (2, 28)
NCCL_API_MAGIC = 0xCAFEBEEF
COMM_TIMEOUT_S = 60.0
_WHEEL_FIX = "pip install nvidia-nccl-cu13 (or set CUCO_NCCL_LIB to a libnccl.so.2)"
_CTYPES = {"size_t": ctypes.c_size_t, "unsigned int": ctypes.c_uint, "int": ctypes.c_int, "bool": ctypes.c_bool,
           "char": ctypes.c_char, "float": ctypes.c_float, "double": ctypes.c_double, "uint64_t": ctypes.c_uint64,
           "int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32, "int32_t": ctypes.c_int32,
           "unsigned long": ctypes.c_ulong, "long": ctypes.c_long}
_GIN_TYPES = {0: "none", 2: "proxy", 3: "gdaki", 4: "gpi", 5: "efa_gda"}


@dataclass(frozen=True)
class NcclProbe:
    lib_path: Optional[str]
    lib_version: Optional[str]
    header_path: Optional[str]
    header_version: Optional[str]
    device_api: bool  # headers and library both >= 2.28
    reason: str = ""  # why the device API is not usable, with the fix
    header_reason: str = ""  # why the headers cannot be built against

    @property
    def headers_ok(self) -> bool:
        return self.header_path is not None and not self.header_reason


@dataclass(frozen=True)
class NcclCommProbe:
    available: bool
    reason: str = ""
    device_api_support: Optional[bool] = None
    multimem_support: Optional[bool] = None
    gin_type: Optional[str] = None


def version_from_code(code: int) -> str:
    """ncclGetVersion's integer: X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _at_least(version: Optional[str], minimum: tuple[int, int]) -> bool:
    if not version:
        return False
    try:
        return tuple(int(x) for x in version.split(".")[:2]) >= minimum
    except ValueError:
        return False


def find_nccl_lib() -> Optional[str]:
    """$CUCO_NCCL_LIB, the nvidia-nccl wheels, then whatever the system loader finds."""
    explicit = os.environ.get("CUCO_NCCL_LIB")
    if explicit:
        return explicit
    for root in toolchain.nvidia_roots():
        lib = root / "nccl" / "lib" / "libnccl.so.2"
        if lib.is_file():
            return str(lib)
    return "libnccl.so.2"


def nccl_lib_version(path: str) -> str:
    """Loads the library and asks it; raises OSError when it cannot be loaded or answered."""
    lib = ctypes.CDLL(path)
    code = ctypes.c_int(0)
    rc = lib.ncclGetVersion(ctypes.byref(code))
    if rc != 0:
        raise OSError(f"ncclGetVersion returned ncclResult {rc}")
    return version_from_code(code.value)


def probe_nccl() -> NcclProbe:
    path = find_nccl_lib()
    try:
        lib_version: Optional[str] = nccl_lib_version(path)
    except (OSError, AttributeError) as e:
        lib_version, path = None, None
        lib_reason = f"the NCCL library cannot be loaded ({e}): {_WHEEL_FIX}"
    try:
        include = toolchain.find_nccl_include()
        header_version, header_reason = toolchain.nccl_header_version(include), ""
    except ToolchainError as e:
        include, header_version, header_reason = None, None, str(e)
    reason = ""
    if lib_version is None:
        reason = lib_reason
    elif header_reason:
        reason = header_reason
    elif not _at_least(lib_version, DEVICE_API_MIN):
        reason = f"NCCL {lib_version} has no device API (needs >= 2.28): {_WHEEL_FIX}"
    elif header_version != lib_version:
        reason = (f"NCCL headers {header_version} and library {lib_version} differ: install matching versions "
                  "(CUCO_NCCL_INCLUDE / CUCO_NCCL_LIB)")
    return NcclProbe(path, lib_version, str(include) if include else None, header_version, not reason, reason,
                     header_reason)


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def struct_fields(text: str, struct: str) -> list[tuple[str, str, int]]:
    """(C type, field name, array length or 0) of ``typedef struct STRUCT { ... }`` in header text."""
    m = re.search(rf"typedef\s+struct\s+{struct}\s*\{{(.*?)\}}\s*\w+\s*;", _strip_comments(text), re.S)
    if not m:
        raise ValueError(f"struct {struct} not found")
    fields = []
    for decl in filter(None, (" ".join(d.split()) for d in m.group(1).split(";"))):
        first, *more = decl.split(",")
        dm = re.match(r"(.*?)\s*(\**)\s*(\w+)\s*(?:\[(\d+)\])?$", first)
        if not dm or not dm.group(1):
            raise ValueError(f"cannot read the declaration '{decl}' in {struct}")
        ctype = re.sub(r"\b(?:const|struct)\s+", "", dm.group(1)).strip()
        fields.append(("void*" if dm.group(2) else ctype, dm.group(3), int(dm.group(4) or 0)))
        for name in more:
            nm = re.match(r"(\**)\s*(\w+)\s*(?:\[(\d+)\])?$", name.strip())
            if not nm:
                raise ValueError(f"cannot read the declarator '{name}' in {struct}")
            fields.append(("void*" if nm.group(1) else ctype, nm.group(2), int(nm.group(3) or 0)))
    return fields


def ctypes_struct(include: Path, struct: str = "ncclCommProperties"):
    """A ctypes Structure laid out like ``STRUCT`` in the headers under ``include``."""
    headers = [include / "nccl.h", *sorted(include.glob("nccl_device/**/*.h"))]
    for h in headers:
        text = h.read_text(errors="replace")
        if re.search(rf"typedef\s+struct\s+{struct}\s*\{{", text):
            fields = struct_fields(text, struct)
            break
    else:
        raise ValueError(f"struct {struct} is in none of the NCCL headers under {include} (needs NCCL >= 2.28)")
    out = []
    for ctype, name, n in fields:
        base = ctypes.c_void_p if ctype == "void*" else _CTYPES.get(ctype)
        if base is None and re.fullmatch(r"nccl\w*_t", ctype):
            base = ctypes.c_int  # NCCL's *_t fields in this struct are enums
        if base is None:
            raise ValueError(f"no ctypes type for '{ctype} {name}' in {struct}")
        out.append((name, base * n if n else base))
    return type(struct, (ctypes.Structure,), {"_fields_": out})


def probe_nccl_comm(nccl: NcclProbe, timeout_s: float = COMM_TIMEOUT_S) -> NcclCommProbe:
    """Ask a 1-rank communicator on GPU 0 what it supports (GPU only; runs in a child process)."""
    if not (nccl.lib_path and nccl.header_path):
        return NcclCommProbe(False, nccl.reason or nccl.header_reason)
    if not _at_least(nccl.lib_version, DEVICE_API_MIN):
        return NcclCommProbe(False, nccl.reason)
    argv = [sys.executable, "-m", "evaluator.nccl_probe", nccl.lib_path, nccl.header_path]
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return NcclCommProbe(False, f"a 1-rank NCCL communicator did not come up in {timeout_s:.0f} s")
    lines = res.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        return NcclCommProbe(False, f"the NCCL probe failed (exit {res.returncode}): {tail[:200]}")
    return NcclCommProbe(**data)


def _comm_properties(lib_path: str, include: Path) -> dict:
    lib = ctypes.CDLL(lib_path)
    props_t = ctypes_struct(include)
    uid_t = type("ncclUniqueId", (ctypes.Structure,), {"_fields_": [("internal", ctypes.c_char * 128)]})
    uid, comm = uid_t(), ctypes.c_void_p()
    if (rc := lib.ncclGetUniqueId(ctypes.byref(uid))) != 0:
        return {"available": False, "reason": f"ncclGetUniqueId returned ncclResult {rc}"}
    if (rc := lib.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0)) != 0:
        return {"available": False, "reason": f"ncclCommInitRank (1 rank, GPU 0) returned ncclResult {rc}"}
    try:
        props = props_t()
        props.size, props.magic = ctypes.sizeof(props_t), NCCL_API_MAGIC
        code = int(re.search(r"#define NCCL_VERSION_CODE\s+(\d+)", (include / "nccl.h").read_text()).group(1))
        props.version = code
        if (rc := lib.ncclCommQueryProperties(comm, ctypes.byref(props))) != 0:
            return {"available": False, "reason": f"ncclCommQueryProperties returned ncclResult {rc}"}
        return {"available": True, "device_api_support": bool(props.deviceApiSupport),
                "multimem_support": bool(props.multimemSupport),
                "gin_type": _GIN_TYPES.get(int(props.ginType), str(int(props.ginType)))}
    finally:
        lib.ncclCommDestroy(comm)


if __name__ == "__main__":
    try:
        result = _comm_properties(sys.argv[1], Path(sys.argv[2]))
    except Exception as e:  # reported by the parent as the probe's reason
        result = {"available": False, "reason": f"{type(e).__name__}: {e}"}
    print(json.dumps(result))
