"""Build and run the cuco CPU emulator (the ``cpu`` backend of ARCHITECTURE section 4).

A candidate's CUDA source is rewritten (``source_rewrite``), compiled by g++ against the shim
headers in ``evaluator/shim/include`` and linked with the shim runtime (fibers, scheduler,
streams, the multi-rank harness ``emu``). The runtime is compiled once into a static library,
cached under a hash of its sources and the g++ version, so a candidate compile is one g++ call.

The emulator executable takes one manifest (``write_manifest``) and exits 0 ok, 2 a rank
crashed, 3 deadlock, 4 cuco_run/CUDA error, 5 bad manifest or harness error, 6 not emulatable.
It has no wall-clock limit of its own: whoever runs it (the sandbox) owns timeouts, because an
emulated thread that loops without ever yielding cannot be interrupted from inside.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from design_space.errors import ToolchainError
from evaluator.source_rewrite import rewrite_for_cpu
from evaluator.toolchain import find_gxx, gxx_version

SHIM_DIR = Path(__file__).resolve().parent / "shim"
SHIM_INCLUDE = SHIM_DIR / "include"
RUNTIME_INCLUDE = Path(__file__).resolve().parent / "runtime"
RUNTIME_SOURCES = ("fiber.cpp", "sched.cpp", "shared_mem.cpp", "diagnostics.cpp", "intrinsics.cpp", "streams.cpp",
                   "hostapi.cpp", "coord.cpp", "manifest.cpp", "emu_main.cpp")
_LIB_FLAGS = ("-std=c++17", "-O2", "-pthread", "-DCUCO_COMM_CPU", "-Wall")
_CANDIDATE_FLAGS = ("-std=c++17", "-O1", "-pthread", "-DCUCO_COMM_CPU")
_COMPILE_TIMEOUT_S = 300

EXIT_OK, EXIT_CRASH, EXIT_DEADLOCK, EXIT_RUN_ERROR, EXIT_HARNESS, EXIT_NOT_EMULATABLE = 0, 2, 3, 4, 5, 6

# g++ errors that mean "the shim cannot run this", not "the candidate is broken": inline PTX,
# tensor-core MMA, grid-wide cooperative groups, libraries and identifiers the shim leaves out
# on purpose (their stub headers say "not emulatable" themselves).
NOT_EMULATABLE_PATTERNS = (
    r"not emulatable",
    r"cuco_shared_declaration_not_rewritten",
    r"Assembler messages",
    r"\basm\b",
    r"__asm__",
    r"impossible constraint",
    r"\bw?mma\b",
    r"nvcuda",
    r"\bptx\b",
    r"cooperative_groups",
    r"\bcg::",
    r"grid_group|this_grid",
    r"cudaLaunchKernelEx|cudaLaunchCooperativeKernel|cudaLaunchAttribute",
    r"cudaGraph|cudaStreamBeginCapture|cudaStreamEndCapture",
    r"\bcuda::|cuda/",
    r"__pipeline_|cp\.async|__cvta_generic_to_shared|__cvta",
    r"\btex[123]D|\bsurf[123]D|cudaTextureObject|cudaSurfaceObject",
    r"__nv_fp8|cuda_fp8",
    r"cublas|cutlass|cute::|thrust::|\bcub::|nccl|nvshmem",
    r"__activemask_sync|__isShared|__isGlobal|__syncwarp_sync",
)
_NOT_EMULATABLE_RE = re.compile("|".join(NOT_EMULATABLE_PATTERNS), re.IGNORECASE)


@dataclass(frozen=True)
class EmulatorBuild:
    ok: bool
    binary: Path | None
    log: str
    seconds: float
    not_emulatable: bool


@dataclass(frozen=True)
class EmulatorRun:
    returncode: int  # negative: killed by that signal
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def _find_ar() -> str:
    exe = shutil.which("ar") or shutil.which("gcc-ar")
    if not exe:
        raise ToolchainError("ar not found (the CPU emulator runtime is packed into a static library)",
                             "install binutils: apt-get install binutils (Debian/Ubuntu)")
    return exe


@functools.lru_cache(maxsize=None)
def _runtime_key(gxx: Path) -> str:
    """Hash of the compiler and the shim sources; computed once per process (a hot path)."""
    h = hashlib.sha256()
    h.update(gxx_version(gxx).encode())
    h.update(" ".join(_LIB_FLAGS).encode())
    files = sorted(p for d in (SHIM_DIR, RUNTIME_INCLUDE) for p in d.rglob("*") if p.is_file())
    for path in files:
        h.update(str(path.relative_to(SHIM_DIR.parent)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


def emulator_digest() -> str:
    """Identifies the emulator a candidate is compiled against (g++ version, flags, shim sources)."""
    return _runtime_key(find_gxx())


def ensure_runtime(cache_dir: Path) -> Path:
    """The shim runtime + harness as a static library in ``cache_dir`` (built on first use).

    Safe against concurrent builders: each builds in its own temp folder and renames the
    finished archive into place atomically; the last rename wins with identical content.
    """
    gxx = find_gxx()
    cache_dir = Path(cache_dir)
    lib = cache_dir / f"libcuco_emu-{_runtime_key(gxx)}.a"
    if lib.is_file():
        return lib
    cache_dir.mkdir(parents=True, exist_ok=True)
    ar = _find_ar()
    with tempfile.TemporaryDirectory(prefix="emu-build-", dir=cache_dir) as tmp:
        objs = _compile_runtime_objects(gxx, Path(tmp))
        partial = Path(tmp) / "lib.a"
        res = subprocess.run([ar, "rcs", str(partial), *map(str, objs)], capture_output=True, text=True)
        if res.returncode != 0:
            raise ToolchainError(f"ar failed to pack the emulator runtime: {res.stderr.strip()}",
                                 "check the binutils installation")
        os.replace(partial, lib)
    return lib


def ensure_pch(cache_dir: Path, dtype_code: int) -> tuple[str, ...]:
    """``-I`` flags for a folder holding ``cuco_comm.h.gch``, precompiled with the candidate flags.

    Parsing the headers is ~2/3 of a candidate's g++ time. g++ uses the precompiled header only
    where it is exactly equivalent (the include comes first, same flags and macros) and reads the
    real header otherwise, so a candidate compiles the same either way. No flags when it cannot be built.
    """
    gxx = find_gxx()
    folder = Path(cache_dir) / f"pch-{_runtime_key(gxx)}-d{dtype_code}"
    gch = folder / "cuco_comm.h.gch"
    if not gch.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"cuco_comm.h.gch.{os.getpid()}.{threading.get_ident()}.tmp"
        cmd = [str(gxx), *_CANDIDATE_FLAGS, f"-DCUCO_DTYPE={dtype_code}", "-I", str(SHIM_INCLUDE), "-I",
               str(RUNTIME_INCLUDE), "-x", "c++-header", str(RUNTIME_INCLUDE / "cuco_comm.h"), "-o", str(partial)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return ()
        if res.returncode != 0:
            partial.unlink(missing_ok=True)
            return ()
        os.replace(partial, gch)
    return ("-I", str(folder))


def _compile_runtime_objects(gxx: Path, out_dir: Path) -> list[Path]:
    """Compile the runtime sources in parallel (one g++ per core)."""
    base = [str(gxx), *_LIB_FLAGS, "-I", str(SHIM_INCLUDE), "-I", str(RUNTIME_INCLUDE), "-I", str(SHIM_DIR)]
    jobs = max(1, os.cpu_count() or 1)
    objs, running, failures = [], [], []
    for name in RUNTIME_SOURCES:
        obj = out_dir / (Path(name).stem + ".o")
        objs.append(obj)
        proc = subprocess.Popen([*base, "-c", str(SHIM_DIR / name), "-o", str(obj)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        running.append((name, proc))
        if len(running) >= jobs:
            failures += _collect(running.pop(0))
    for item in running:
        failures += _collect(item)
    if failures:
        raise ToolchainError("g++ failed to build the cuco CPU emulator runtime:\n" + "\n".join(failures)[-4000:],
                             "use g++ >= 9 with C++17 support; report the log as a cuco bug otherwise")
    return objs


def _collect(item: tuple[str, subprocess.Popen]) -> list[str]:
    name, proc = item
    out, _ = proc.communicate(timeout=_COMPILE_TIMEOUT_S)
    return [f"{name}: {out.strip()}"] if proc.returncode != 0 else []


def compile_emulator(source: str, work_dir: Path, *, dtype_code: int, cache_dir: Path,
                     extra_flags: tuple[str, ...] = ()) -> EmulatorBuild:
    """Rewrite and compile one candidate into ``work_dir/emu``, linked with the cached runtime."""
    gxx = find_gxx()
    start = time.monotonic()
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        rewritten = rewrite_for_cpu(source)
    except ValueError as exc:
        # The candidate already compiled with nvcc, so this is the rewrite's limit, not a bug.
        return EmulatorBuild(False, None, f"source rewrite for the CPU emulator failed: {exc}",
                             time.monotonic() - start, not_emulatable=True)
    lib = ensure_runtime(Path(cache_dir).resolve())  # g++ runs in work_dir: a relative path would miss
    pch = ensure_pch(Path(cache_dir).resolve(), int(dtype_code))
    src = work_dir / "candidate_cpu.cpp"
    src.write_text('#line 1 "candidate.cu"\n' + rewritten)
    binary = work_dir / "emu"
    # File-scope __shared__ adds #line-corrected lines: numbers stay right, but g++ would echo the
    # text of the physical (rewritten) line under them, so leave the echo out in that case.
    caret = () if rewritten.count("\n") == source.count("\n") else ("-fno-diagnostics-show-caret",)
    cmd = [str(gxx), *_CANDIDATE_FLAGS, *caret, f"-DCUCO_DTYPE={int(dtype_code)}", *pch, "-I", str(SHIM_INCLUDE),
           "-I", str(RUNTIME_INCLUDE), *extra_flags, str(src), str(lib), "-o", str(binary)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S, cwd=work_dir)
    except subprocess.TimeoutExpired:
        return EmulatorBuild(False, None, f"g++ did not finish within {_COMPILE_TIMEOUT_S} s",
                             time.monotonic() - start, not_emulatable=False)
    log = (res.stdout + res.stderr).strip()
    seconds = time.monotonic() - start
    if res.returncode == 0:
        return EmulatorBuild(True, binary, log, seconds, not_emulatable=False)
    return EmulatorBuild(False, None, log, seconds, not_emulatable=is_not_emulatable(log))


def is_not_emulatable(log: str) -> bool:
    """True when g++'s errors come from constructs the shim cannot emulate (see the list)."""
    lines = [ln for ln in log.splitlines() if re.search(r"error|Assembler messages", ln, re.IGNORECASE)]
    return any(_NOT_EMULATABLE_RE.search(ln) for ln in lines)


def write_manifest(path: Path, *, world: int, num_sms: int, iterations: int, stall_seconds: float,
                   dims: Sequence[int], dtype_code: int, symm_bytes: int, workspace_bytes: int,
                   inputs: Sequence[tuple[int, int, Path, int]], outputs: Sequence[tuple[int, int, Path, int]],
                   stack_kib: int | None = None, runaway_seconds: int | None = None) -> Path:
    """Write the emulator's manifest. ``inputs``/``outputs``: (rank, slot, path, nbytes).

    Optional: ``stack_kib`` per emulated thread (default 64), ``runaway_seconds`` after which a
    thread that never yields is reported as a hang (default 20)."""
    if not 1 <= world <= 32:
        raise ValueError(f"world must be 1..32, got {world}")
    if len(dims) > 8:
        raise ValueError(f"at most 8 dims, got {len(dims)}")
    lines = [f"world {world}", f"num_sms {num_sms}", f"iterations {iterations}", f"stall_seconds {stall_seconds}",
             "dims " + " ".join(str(int(d)) for d in (list(dims) or [0])), f"dtype {dtype_code}",
             f"symm_bytes {symm_bytes}", f"workspace_bytes {workspace_bytes}"]
    if stack_kib:
        lines.append(f"stack_kib {stack_kib}")
    if runaway_seconds:
        lines.append(f"runaway_seconds {runaway_seconds}")
    for key, items in (("input", inputs), ("output", outputs)):
        for rank, slot, file, nbytes in items:
            text = str(file)
            if "\n" in text or text != text.strip():
                raise ValueError(f"unusable path for the manifest: {text!r}")
            lines.append(f"{key} {rank} {slot} {int(nbytes)} {text}")
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


def run_emulator(binary: Path, manifest: Path, *, timeout_s: float, cwd: Path | None = None) -> EmulatorRun:
    """Run ``emu MANIFEST`` in its own process group; on timeout the whole group is killed.

    A convenience for tests and tools; the evaluator runs the binary through its sandbox.
    """
    start = time.monotonic()
    proc = subprocess.Popen([str(binary), str(manifest)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        timed_out = True
    return EmulatorRun(proc.returncode, out, err, time.monotonic() - start, timed_out)
