"""Build stage: nvcc ``-cubin -Xptxas -v`` for the target arch gates a candidate and yields its
per-kernel registers, shared memory, stack and spills. Results are cached by content hash of
everything that can change the output (source, flags, compiler, headers)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from design_space.evaluation import BuildStats, KernelStats, trim_log
from evaluator import sandbox, sass
from evaluator.toolchain import RUNTIME_DIR, Toolchain

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                    r"(\d+) bytes spill loads")
_USED = re.compile(r"Function properties for (\S+)[\s\S]*?Used (\d+) registers(?:[^\n]*?(\d+) bytes smem)?")


@dataclass(frozen=True)
class BuildOutcome:
    ok: bool
    stats: BuildStats
    log: str


def runtime_digest() -> str:
    h = hashlib.sha256()
    for p in sorted(RUNTIME_DIR.glob("*.h")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def nvcc_limits(timeout_s: float, work_bytes: int = 512 << 20) -> sandbox.Limits:
    """What an nvcc stage on candidate text may use: time, memory, files (a `.fill` or a template
    explosion ends at these limits, as the candidate's failure)."""
    return sandbox.Limits(wall_s=timeout_s, cpu_s=int(timeout_s) + 10, address_space_bytes=16 << 30,
                          memory_bytes=6 << 30, file_size_bytes=256 << 20, work_bytes=work_bytes)


def nvcc_view(tc: Toolchain, extra: tuple[Path, ...] = ()) -> tuple[Path, ...]:
    """The only files an nvcc stage sees besides the system's: the toolkit, cuco's runtime headers,
    the NCCL headers (and what ``extra`` adds). No reference data, runs, caches or home folders."""
    return sandbox.toolchain_view(tc.nvcc, [RUNTIME_DIR, tc.nccl_include, *extra])


def build_flags(arch: str, comm_backend: str, dtype_code: int, tc: Toolchain) -> list[str]:
    return ["-cubin", f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", f"-DCUCO_COMM_{comm_backend.upper()}",
            f"-DCUCO_DTYPE={dtype_code}", f"-I{RUNTIME_DIR}", f"-I{tc.nccl_include}"]


def parse_ptxas(log: str) -> tuple[KernelStats, ...]:
    """Per entry function stats from ``-Xptxas -v`` output (device functions are skipped)."""
    entries = set(_ENTRY.findall(log))
    stats: dict[str, dict] = {}
    for name, stack, st, ld in _PROPS.findall(log):
        stats.setdefault(name, {}).update(stack_bytes=int(stack), spill_stores=int(st), spill_loads=int(ld))
    for block in re.split(r"(?=ptxas info\s+: Function properties for )", log):
        m = _USED.search(block)
        if m:
            stats.setdefault(m.group(1), {}).update(registers=int(m.group(2)), smem_bytes=int(m.group(3) or 0))
    return tuple(KernelStats(name=n, **v) for n, v in sorted(stats.items()) if n in entries)


def with_sass(kernels: tuple[KernelStats, ...], cubin: Path, work_dir: Path) -> tuple[KernelStats, ...]:
    """The kernels' stats with what their SASS shows (tensor-core MMA count, widest global access);
    unchanged when no disassembler is installed."""
    facts = {k.name: k for k in (sass.kernel_sass(cubin, work_dir) or ())}
    return tuple(k.model_copy(update={"mma": facts[k.name].mma, "widest_global_bytes": facts[k.name].widest_global_bytes})
                 if k.name in facts else k for k in kernels)


def build(source: str, *, arch: str, comm_backend: str, dtype_code: int, tc: Toolchain, cache_dir: Path,
          work_dir: Path, timeout_s: float = 180.0) -> BuildOutcome:
    flags = build_flags(arch, comm_backend, dtype_code, tc)
    key = hashlib.sha256(json.dumps([source, flags[:-2], tc.nvcc_version, tc.nccl_version, runtime_digest()])
                         .encode()).hexdigest()
    cached = cache_dir / "builds" / f"{key}.json"
    if cached.is_file():
        data = json.loads(cached.read_text())
        stats = BuildStats.model_validate({**data["stats"], "cached": True, "seconds": 0.0})
        return BuildOutcome(ok=data["ok"], stats=stats, log=data["log"])
    start = time.monotonic()
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "candidate.cu").write_text(source)
    res = sandbox.run([str(tc.nvcc), *flags, "-o", "candidate.cubin", "candidate.cu"], workdir=work_dir,
                      limits=nvcc_limits(timeout_s), view=nvcc_view(tc), collect=("candidate.cubin",))
    ok = res.returncode == 0 and not res.timed_out
    log = trim_log(res.output + ("\n(nvcc timed out)" if res.timed_out else ""))
    kernels = parse_ptxas(res.output) if ok else ()
    if ok:
        kernels = with_sass(kernels, work_dir / "candidate.cubin", work_dir / "sass")
    stats = BuildStats(arch=arch, comm_backend=comm_backend, kernels=kernels, cached=False,
                       seconds=time.monotonic() - start)
    if not res.timed_out:  # a timeout may be the machine's fault: do not cache it
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"ok": ok, "log": log, "stats": stats.model_dump(mode="json")}))
        tmp.replace(cached)
    return BuildOutcome(ok=ok, stats=stats, log=log)
