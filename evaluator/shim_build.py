"""Build and run the cuco CPU emulator (the ``cpu`` backend of the device contract, README "The device contract").

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from design_space.errors import ToolchainError
from design_space.evaluation import Status
from evaluator.source_rewrite import rewrite_for_cpu
from evaluator.toolchain import find_gxx, gxx_version

SHIM_DIR = Path(__file__).resolve().parent / "shim"
SHIM_INCLUDE = SHIM_DIR / "include"
RUNTIME_INCLUDE = Path(__file__).resolve().parent / "runtime"
RUNTIME_SOURCES = ("fiber.cpp", "sched.cpp", "shared_mem.cpp", "diagnostics.cpp", "intrinsics.cpp", "streams.cpp",
                   "trace.cpp", "hostapi.cpp", "coord.cpp", "manifest.cpp", "emu_main.cpp")
_LIB_FLAGS = ("-std=c++17", "-O2", "-pthread", "-DCUCO_COMM_CPU", "-Wall")
CANDIDATE_FLAGS = ("-std=c++17", "-O1", "-pthread", "-DCUCO_COMM_CPU")
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
    status: Status = Status.OK  # rejected (what the object may not do) or emulation_failed
    reason: str = ""


@dataclass(frozen=True)
class EmulatorRun:
    returncode: int  # negative: killed by that signal
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    outputs: dict = field(default_factory=dict)  # (rank, slot) -> bytes of the last call


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
        cmd = [str(gxx), *CANDIDATE_FLAGS, f"-DCUCO_DTYPE={dtype_code}", "-I", str(SHIM_INCLUDE), "-I",
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
                     extra_flags: tuple[str, ...] = (), check_object: bool = True,
                     stop: Optional[threading.Event] = None) -> EmulatorBuild:
    """Compile one candidate into ``work_dir/emu``: its object is built and checked in the sandbox
    (``candidate_object``: no inline asm, only allowlisted symbols, no constructors, no overrides of
    the runtime), then linked with the cached runtime, in the sandbox too.

    ``extra_flags`` and ``check_object=False`` are for cuco's own test kernels only: an evaluation
    never passes them."""
    from evaluator import candidate_object  # noqa: PLC0415  (it reads this module's constants)

    start = time.monotonic()
    work_dir = Path(work_dir).resolve()
    if not check_object or extra_flags:
        return _compile_unchecked(source, work_dir, dtype_code=dtype_code, cache_dir=cache_dir,
                                  extra_flags=extra_flags, start=start)
    obj = candidate_object.compile_candidate_object(source, work_dir, dtype_code=dtype_code, cache_dir=cache_dir,
                                                    stop=stop)
    if obj.findings:
        first = obj.findings[0]
        return _failed("\n".join(str(f) for f in obj.findings), start, not_emulatable=False, status=Status.REJECTED,
                       reason=str(first))
    if not obj.ok or obj.object is None:
        return _failed(obj.log, start, not_emulatable=obj.not_emulatable)
    return _link(obj.object, work_dir, ensure_runtime(Path(cache_dir).resolve()), obj.log, start)


def _link(obj: Path, work_dir: Path, lib: Path, log: str, start: float) -> EmulatorBuild:
    from evaluator import sandbox  # noqa: PLC0415

    res = sandbox.run([str(find_gxx()), "-pthread", obj.name, str(lib), "-o", "emu"], workdir=work_dir,
                      limits=sandbox.Limits(wall_s=_COMPILE_TIMEOUT_S, cpu_s=_COMPILE_TIMEOUT_S, file_size_bytes=256 << 20,
                                            work_bytes=512 << 20),
                      view=(*sandbox.system_view(), lib.parent), collect=("emu",))
    binary = work_dir / "emu"
    if res.returncode != 0 or res.timed_out or "emu" not in res.collected:
        return _failed(f"{log}\nthe link failed: {res.output[-2000:]}".strip(), start, not_emulatable=False)
    return EmulatorBuild(True, binary, log, time.monotonic() - start, not_emulatable=False)


def _compile_unchecked(source: str, work_dir: Path, *, dtype_code: int, cache_dir: Path,
                       extra_flags: tuple[str, ...], start: float) -> EmulatorBuild:
    """One g++ call outside the sandbox, with extra flags: cuco's own test kernels (trusted code)."""
    gxx = find_gxx()
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        rewritten = rewrite_for_cpu(source)
    except ValueError as exc:
        # The candidate already compiled with nvcc, so this is the rewrite's limit, not a bug.
        return _failed(f"source rewrite for the CPU emulator failed: {exc}", start, not_emulatable=True)
    lib = ensure_runtime(Path(cache_dir).resolve())  # g++ runs in work_dir: a relative path would miss
    pch = ensure_pch(Path(cache_dir).resolve(), int(dtype_code))
    src = work_dir / "candidate_cpu.cpp"
    src.write_text('#line 1 "candidate.cu"\n' + rewritten)
    binary = work_dir / "emu"
    # File-scope __shared__ adds #line-corrected lines: numbers stay right, but g++ would echo the
    # text of the physical (rewritten) line under them, so leave the echo out in that case.
    caret = () if rewritten.count("\n") == source.count("\n") else ("-fno-diagnostics-show-caret",)
    cmd = [str(gxx), *CANDIDATE_FLAGS, *caret, f"-DCUCO_DTYPE={int(dtype_code)}", *pch, "-I", str(SHIM_INCLUDE),
           "-I", str(RUNTIME_INCLUDE), *extra_flags, str(src), str(lib), "-o", str(binary)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S, cwd=work_dir)
    except subprocess.TimeoutExpired:
        return _failed(f"g++ did not finish within {_COMPILE_TIMEOUT_S} s", start, not_emulatable=False)
    log = (res.stdout + res.stderr).strip()
    if res.returncode == 0:
        return EmulatorBuild(True, binary, log, time.monotonic() - start, not_emulatable=False)
    return _failed(log, start, not_emulatable=is_not_emulatable(log))


def _failed(log: str, start: float, *, not_emulatable: bool, status: Status = Status.EMULATION_FAILED,
            reason: str = "") -> EmulatorBuild:
    why = reason or ("not emulatable" if not_emulatable else "g++ could not compile the candidate for emulation")
    return EmulatorBuild(False, None, log, time.monotonic() - start, not_emulatable, status, why)


def is_not_emulatable(log: str) -> bool:
    """True when g++'s errors come from constructs the shim cannot emulate (see the list)."""
    lines = [ln for ln in log.splitlines() if re.search(r"error|Assembler messages", ln, re.IGNORECASE)]
    return any(_NOT_EMULATABLE_RE.search(ln) for ln in lines)


def run_emulator(binary: Path, *, world: int, dims: Sequence[int] = (0,), calls: int = 1,
                 inputs: Optional[Mapping[tuple[int, int], bytes]] = None,
                 outputs: Optional[Mapping[tuple[int, int], int]] = None, num_sms: int = 4, dtype_code: int = 0,
                 symm_bytes: int = 0, workspace_bytes: int = 4096, stall_seconds: float = 3.0,
                 runaway_seconds: Optional[int] = None, timeout_s: float = 60.0, cwd: Optional[Path] = None,
                 manifest: Optional[str] = None) -> EmulatorRun:
    """Run ``emu`` on ``world`` ranks outside the sandbox, in its own process group (killed whole on
    timeout): a convenience for tests and tools; the evaluator runs it through its sandbox.

    ``inputs``: (rank, slot) -> bytes, the same for every call; ``outputs``: (rank, slot) -> bytes
    to allocate; the result's ``outputs`` hold the last call's. ``manifest`` replaces the manifest text."""
    from evaluator import emulator_io  # noqa: PLC0415  (numpy: only when something runs)

    inputs, outputs = dict(inputs or {}), dict(outputs or {})
    sizes = [(r, c, False, s, len(b)) for c in range(1, calls + 1) for (r, s), b in sorted(inputs.items())]
    sizes += [(r, c, True, s, n) for c in range(1, calls + 1) for (r, s), n in sorted(outputs.items())]
    slots, size = emulator_io.layout(sizes)
    text = manifest if manifest is not None else emulator_io.manifest_text(
        world=world, num_sms=num_sms, calls=calls, stall_seconds=stall_seconds, dims=dims, dtype_code=dtype_code,
        symm_bytes=symm_bytes, workspace_bytes=workspace_bytes, slots=slots, runaway_seconds=runaway_seconds)
    data = {(r, c, s): b for c in range(1, calls + 1) for (r, s), b in inputs.items()}
    start = time.monotonic()
    with emulator_io.IoFiles(text, slots, size, data) as io:
        proc = subprocess.Popen([str(binary), *map(str, io.fds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=cwd, start_new_session=True, pass_fds=io.fds)
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
        got = {(r, s): io.output(r, calls, s) for (r, s) in outputs}
    return EmulatorRun(proc.returncode, out, err, time.monotonic() - start, timed_out, got)
