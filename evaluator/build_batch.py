"""Batched build for sweeps: many candidates compiled by one nvcc call.

Alone, a template candidate's build takes ~1.2 s, and cicc spends ~0.85 s of that on ``cuco_comm.h``
and the NCCL device headers, whatever the candidate. So a sweep over thousands of points puts a
batch of sources into one translation unit: the shared headers first, then each source inside its
own namespace (its ``#include`` lines become no-ops behind the include guards), its macros undefined
after it, and ``extern "C"`` dropped so that every member's ``cuco_run`` is its own symbol. Same
flags and arch as the build stage. Measured with 8 per batch: ~0.25 s per LSA point, ~3 s per GIN
point (4.9 s alone; NCCL's GIN backends dominate).

Only sources whose includes all come before any other code are batched, and only with sources that
include exactly the same headers (none compiles against a header it did not include). A batch that
fails is rebuilt one source at a time through the real build stage, so a failing point always gets
its own verdict and log. The evaluator never uses this: its build stage compiles each candidate alone.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from evaluator import build, sandbox
from evaluator.toolchain import Toolchain

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"][^>"]+[>"])', re.M)
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)", re.M)
_EXTERN_C = re.compile(r'\bextern\s+"C"\s+(?!\{)')


@dataclass(frozen=True)
class BatchedBuild:
    ok: bool
    log: str
    seconds: float  # this source's share of its batch's nvcc time (its own build time when rebuilt alone)
    batched: bool  # False: built alone (not batchable, or its batch failed)


def batchable(source: str) -> bool:
    """Every ``#include`` precedes the first line of code or macro, so hoisting them changes nothing."""
    seen_code = False
    for line in _strip_comments(source).splitlines():
        text = line.strip()
        if not text:
            continue
        if _INCLUDE.match(text):
            if seen_code:
                return False
        else:
            seen_code = True
    return 'extern "C" {' not in source and "extern \"C\"{" not in source


def _strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


def batch_source(sources: Sequence[str]) -> str:
    """One translation unit: shared includes, then each source in namespace ``cuco_batch_<i>``."""
    includes: list[str] = []
    for src in sources:
        includes += [m for m in _INCLUDE.findall(src) if m not in includes]
    parts = [f"#include {inc}" for inc in includes]
    for i, src in enumerate(sources):
        body = _EXTERN_C.sub("", src)
        parts += [f"namespace cuco_batch_{i} {{", f'#line 1 "point-{i}.cu"', body, f"}}  // namespace cuco_batch_{i}"]
        parts += [f"#undef {name}" for name in dict.fromkeys(_DEFINE.findall(src))]
    return "\n".join(parts) + "\n"


def build_batch(sources: Sequence[str], *, arch: str, comm_backend: str, dtype_code: int, tc: Toolchain,
                cache_dir: Path, work_dir: Path, timeout_s: float = 600.0) -> list[BatchedBuild]:
    """Build every source for ``arch``; one verdict per source, in order."""
    results: dict[int, BatchedBuild] = {}
    groups: dict[tuple[str, ...], list[int]] = {}  # same includes: no member sees a header it did not include
    for i, src in enumerate(sources):
        if batchable(src):
            groups.setdefault(tuple(_INCLUDE.findall(src)), []).append(i)
    for n, together in enumerate(g for g in groups.values() if len(g) > 1):
        start = time.monotonic()
        ok, log = _compile(batch_source([sources[i] for i in together]), arch=arch, comm_backend=comm_backend,
                           dtype_code=dtype_code, tc=tc, work_dir=work_dir / f"batch-{n}", timeout_s=timeout_s)
        share = (time.monotonic() - start) / len(together)
        if ok:
            results.update({i: BatchedBuild(True, log, share, True) for i in together})
    for i, src in enumerate(sources):
        if i not in results:
            one = build.build(src, arch=arch, comm_backend=comm_backend, dtype_code=dtype_code, tc=tc,
                              cache_dir=cache_dir, work_dir=work_dir / f"alone-{i}", timeout_s=timeout_s)
            results[i] = BatchedBuild(one.ok, one.log, one.stats.seconds, False)
    return [results[i] for i in range(len(sources))]


def _compile(text: str, *, arch: str, comm_backend: str, dtype_code: int, tc: Toolchain, work_dir: Path,
             timeout_s: float) -> tuple[bool, str]:
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "batch.cu").write_text(text)
    flags = [f for f in build.build_flags(arch, comm_backend, dtype_code, tc) if f != "-v" and f != "-Xptxas"]
    res = sandbox.run([str(tc.nvcc), *flags, "-o", "batch.cubin", "batch.cu"], workdir=work_dir,
                      limits=build.nvcc_limits(timeout_s), view=build.nvcc_view(tc))
    return res.returncode == 0 and not res.timed_out, res.output[-4000:]
