"""What a built cubin's machine code (SASS) says about a candidate, read without a GPU.

``cuobjdump -sass`` (PATH, or the nvidia-cuda-cuobjdump wheel of the ``dev`` extra) disassembles
the cubin the build stage produced; per kernel we count tensor-core MMA instructions (HMMA on
sm_80/sm_90 via mma.sync, HGMMA for Hopper's wgmma), the widest global loads and stores, and
local-memory traffic. The disassembler parses bytes built from candidate text, so it runs in the
sandbox like every other tool.
"""

from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evaluator import sandbox, toolchain

_FUNCTION = re.compile(r"\n\s*Function : (\S+)")
_MMA = re.compile(r"\b(HMMA|HGMMA|IMMA|DMMA|BMMA)\b")
_WIDTH = re.compile(r"\b(?:LDG|STG|LDGSTS)(?:\.E)?(?:\.[A-Z0-9_]+)*?\.(128|64)\b")
_LOCAL = re.compile(r"\b(?:LDL|STL)\b")


@dataclass(frozen=True)
class KernelSass:
    name: str
    mma: int  # tensor-core MMA instructions
    widest_global_bytes: int  # 16 for 128-bit loads/stores (LDG.E.128), 8, or 4
    local_accesses: int  # LDL/STL: spills or local arrays


@functools.lru_cache(maxsize=1)
def sass_tool() -> Optional[str]:
    """cuobjdump from PATH or the nvidia wheels; None when neither is installed."""
    found = shutil.which("cuobjdump")
    wheels = [p for root in toolchain.nvidia_roots() for p in root.glob("*/bin/cuobjdump")]
    return found or (str(wheels[0]) if wheels else None)


def parse_sass(text: str) -> tuple[KernelSass, ...]:
    parts = _FUNCTION.split("\n" + text)
    out = []
    for name, body in zip(parts[1::2], parts[2::2]):
        widths = [int(w) // 8 for w in _WIDTH.findall(body)]
        out.append(KernelSass(name=name, mma=len(_MMA.findall(body)), widest_global_bytes=max(widths, default=4),
                              local_accesses=len(_LOCAL.findall(body))))
    return tuple(out)


def kernel_sass(cubin: Path, work_dir: Path, timeout_s: float = 60.0) -> Optional[tuple[KernelSass, ...]]:
    """Per-kernel SASS facts of ``cubin``; None when no disassembler is installed or it fails."""
    tool = sass_tool()
    if tool is None or not Path(cubin).is_file():
        return None
    cubin = Path(cubin).resolve()
    res = sandbox.run([tool, "-sass", str(cubin)], workdir=Path(work_dir),
                      limits=sandbox.Limits(wall_s=timeout_s, cpu_s=int(timeout_s), output_bytes=64 << 20),
                      view=(*sandbox.toolchain_view(Path(tool)), cubin.parent))
    if res.returncode != 0 or res.timed_out or res.dropped_bytes:
        return None
    return parse_sass(res.stdout)
