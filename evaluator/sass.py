"""What a built cubin's machine code (SASS) says about a candidate, read without a GPU.

``nvdisasm -c`` (or ``cuobjdump -sass``; PATH, or the nvidia wheels of the ``dev`` extra)
disassembles the cubin the build stage produced; per kernel we count tensor-core MMA instructions
(HMMA on sm_80/sm_90 via mma.sync, HGMMA for Hopper's wgmma), the widest global loads and stores,
and local-memory traffic. Only opcodes count, never operands or labels, so a device function named
``HMMA`` adds nothing. The disassembler parses bytes built from candidate text, so it runs in the
sandbox like every other tool; it writes to a file, which is ~0.3 s faster than a pipe for the
megabytes of a tensor-core kernel's listing.
"""

from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evaluator import sandbox, toolchain

# a kernel's header: nvdisasm's section banner, or cuobjdump's "Function :" line
_FUNCTION = re.compile(r"^(?://-+ \.text\.(\S+) -+|\s*Function : (\S+))\s*$", re.M)
# an instruction's opcode: after its /*address*/ and an optional predicate (@P0, @!UPT, ...)
_OPCODE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_.]*)", re.M)
_MMA = frozenset({"HMMA", "HGMMA", "IMMA", "DMMA", "BMMA", "QGMMA", "IGMMA", "BGMMA"})
_GLOBAL = frozenset({"LDG", "STG", "LDGSTS"})
_LOCAL = frozenset({"LDL", "STL"})
_TOOLS = (("nvdisasm", ("-c", "-ndf")), ("cuobjdump", ("-sass",)))  # the first one found is used


@dataclass(frozen=True)
class KernelSass:
    name: str
    mma: int  # tensor-core MMA instructions
    widest_global_bytes: int  # 16 for 128-bit loads/stores (LDG.E.128), 8, or 4
    local_accesses: int  # LDL/STL: spills or local arrays


@functools.lru_cache(maxsize=1)
def sass_command() -> Optional[tuple[str, ...]]:
    """The disassembler and its options (nvdisasm, else cuobjdump) from PATH or the nvidia wheels;
    None when neither is installed."""
    for name, options in _TOOLS:
        wheels = [p for root in toolchain.nvidia_roots() for p in root.glob(f"*/bin/{name}")]
        found = shutil.which(name) or (str(wheels[0]) if wheels else None)
        if found:
            return (found, *options)
    return None


def sass_tool() -> Optional[str]:
    """The disassembler's path; None when none is installed."""
    command = sass_command()
    return command[0] if command else None


def _kernel(name: str, opcodes: list[str]) -> KernelSass:
    mma = width = local = 0
    for op in opcodes:
        base, _, rest = op.partition(".")
        if base in _MMA:
            mma += 1
        elif base in _LOCAL:
            local += 1
        elif base in _GLOBAL and rest:
            mods = rest.split(".")
            width = max(width, 16 if "128" in mods else 8 if "64" in mods else 0)
    return KernelSass(name=name, mma=mma, widest_global_bytes=width or 4, local_accesses=local)


def parse_sass(text: str) -> tuple[KernelSass, ...]:
    """Per-kernel facts of an nvdisasm or cuobjdump listing (opcodes only)."""
    heads = list(_FUNCTION.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)]
    return tuple(_kernel(h.group(1) or h.group(2), _OPCODE.findall(text, h.end(), end)) for h, end in zip(heads, ends))


def kernel_sass(cubin: Path, work_dir: Path, timeout_s: float = 60.0) -> Optional[tuple[KernelSass, ...]]:
    """Per-kernel SASS facts of ``cubin``; None when no disassembler is installed or it fails."""
    command = sass_command()
    if command is None or not Path(cubin).is_file():
        return None
    cubin = Path(cubin).resolve()
    listing = "candidate.sass"
    res = sandbox.run(["/bin/sh", "-c", f'exec "$0" "$@" > {listing}', *command, str(cubin)], workdir=Path(work_dir),
                      limits=sandbox.Limits(wall_s=timeout_s, cpu_s=int(timeout_s), file_size_bytes=256 << 20,
                                            collect_bytes=256 << 20),
                      view=(*sandbox.toolchain_view(Path(command[0])), cubin.parent), collect=(listing,))
    if res.returncode != 0 or res.timed_out or listing not in res.collected:
        return None
    return parse_sass((Path(work_dir) / listing).read_text(errors="replace"))
