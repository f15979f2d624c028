"""Evolve blocks for the fast path's kernel: keep the writer's, or insert them around kernel
bodies, and validate the result (removing the marker lines gives back the code; the host entry
stays in place).

``evolve_regions`` / ``frozen_text`` are ``kernels.evolve_blocks``'s, the guard's own: what
this module calls frozen is what the guard will hold the slow path to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from design_space.candidate import EVOLVE_END, EVOLVE_START
from kernels.cuda_scan import blank, match_forward
from kernels.evolve_blocks import HOST_ENTRY, evolve_regions, frozen_text  # noqa: F401  (re-exported)

# A line that holds nothing but a marker comment: removing it changes no code.
_MARKER_LINE = re.compile(rf"^[ \t]*(?://|/\*)[ \t]*(?:{EVOLVE_START}|{EVOLVE_END})\b[^\n]*(?:\n|$)", re.M)
# The same as the file's last line, with no newline after it: the newline before it goes too.
_LAST_MARKER_LINE = re.compile(rf"\n[ \t]*(?://|/\*)[ \t]*(?:{EVOLVE_START}|{EVOLVE_END})\b[^\n]*\Z")
_MARKER = re.compile(rf"{EVOLVE_START}|{EVOLVE_END}")
# The host entry, as the guard looks for it.
ENTRY = HOST_ENTRY
_ATTRIBUTES = {"__launch_bounds__", "__attribute__", "__declspec", "alignas", "__align__", "__maxnreg__"}


@dataclass(frozen=True)
class Blocks:
    """A source with evolve blocks and what was done to get them."""

    source: str
    note: str  # e.g. "kept the writer's evolve blocks", "inserted blocks around: k1, k2"
    inserted: bool  # True when this module placed the markers


def has_markers(src: str) -> bool:
    return _MARKER.search(src) is not None


regions = evolve_regions  # as the guard sees them


def unmark(src: str) -> str:
    """The code without its markers: marker-only lines dropped, a marker inside a code line
    (which no block can use) erased from it."""
    return _MARKER.sub("", _MARKER_LINE.sub("", _LAST_MARKER_LINE.sub("", src)))


def marker_problem(src: str) -> Optional[str]:
    """Why the blocks of ``src`` cannot be used as they are, or None."""
    own_lines = {m.start() for m in _MARKER_LINE.finditer(src)}
    for m in _MARKER.finditer(src):
        line_start = src.rfind("\n", 0, m.start()) + 1
        if line_start not in own_lines:
            return f"{m.group(0)} shares line {src.count(chr(10), 0, m.start()) + 1} with code"
    spans, err = regions(src)
    if err:
        return err
    if not spans:
        return "no evolve block"
    if not ENTRY.search(blank(src, strings=False)):
        return 'no `extern "C" int cuco_run(const cuco_ctx*, cudaStream_t)` entry'
    return None


def with_blocks(code: str) -> Blocks:
    """``code`` ready for the guard: the writer's blocks when usable, else blocks inserted around
    each ``__global__`` kernel's body (see ``wrap_kernel_bodies``)."""
    prefix = ""
    if has_markers(code):
        problem = marker_problem(code)
        if problem is None:
            return Blocks(code, "kept the writer's evolve blocks", inserted=False)
        prefix, code = f"the writer's evolve blocks were unusable ({problem}); ", unmark(code)
    annotated, wrapped = wrap_kernel_bodies(code)
    if not wrapped:
        return Blocks(code, prefix + "no __global__ kernel body to wrap: no evolve block", inserted=True)
    return Blocks(annotated, prefix + f"inserted evolve blocks around the kernels {', '.join(wrapped)}", inserted=True)


def validation_problem(blocks: Blocks, code: str) -> Optional[str]:
    """Why ``blocks`` fails validation against the writer's ``code``, or None: the markers are
    well formed, removing them gives back the code exactly, and the host entry is present --
    frozen when the markers are ours (the writer may deliberately leave its launch sequence
    evolvable, as the pattern templates do: placement lives there; the guard checks the entry on
    every candidate)."""
    problem = marker_problem(blocks.source)
    if problem:
        return problem
    if unmark(blocks.source) != unmark(code):
        return "removing the marker lines does not give back the checked code"
    frozen = frozen_text(blocks.source) or ""
    if blocks.inserted and not ENTRY.search(blank(frozen, strings=False)):
        return "the cuco_run entry is inside an evolve block"
    return None


_IDENT_PAREN = re.compile(r"([A-Za-z_]\w*)\s*\(")


def kernel_bodies(src: str) -> list[tuple[str, int, int, int]]:
    """(name, definition start, ``{`` index, ``}`` index) of each ``__global__`` definition."""
    code = blank(src)
    found = []
    for g in re.finditer(r"\b__global__\b", code):
        pos = g.end()
        while True:  # skip attributes such as __launch_bounds__(256) to the kernel's name
            m = _IDENT_PAREN.search(code, pos)
            if not m:
                break
            close = match_forward(code, m.end() - 1)
            if m.group(1) in _ATTRIBUTES and close > 0:
                pos = close + 1
                continue
            brace = re.match(r"\s*(?:const\s*)?\{", code[close + 1:]) if close > 0 else None
            if brace:
                open_at = close + brace.end()
                end = match_forward(code, open_at)
                if end > 0:
                    found.append((m.group(1), g.start(), open_at, end))
            break
    return found


def wrap_kernel_bodies(src: str) -> tuple[str, list[str]]:
    """Blocks around each ``__global__`` kernel's body: the lines inside its braces when the
    braces end and start their lines, else the whole definition when it has its lines to itself
    (``__global__ void k(...) { one(); }``). Markers are whole lines, so ``unmark`` of the result
    is ``src``. Returns (annotated source, names of the wrapped kernels)."""
    code = blank(src)
    inserts: list[tuple[int, str]] = []  # (offset, marker line), applied last to first
    wrapped: list[str] = []
    taken_until = -1
    for name, start, open_at, close in kernel_bodies(src):
        if start < taken_until:
            continue
        span = _body_lines(code, open_at, close) or _definition_lines(code, start, close)
        if span is None:
            continue
        a, b = span
        indent = re.match(r"[ \t]*", src[a:]).group(0)
        end_marker = f"{indent}// {EVOLVE_END}\n" if src[b - 1:b] == "\n" else f"\n{indent}// {EVOLVE_END}"
        inserts += [(a, f"{indent}// {EVOLVE_START}\n"), (b, end_marker)]
        wrapped.append(name)
        taken_until = close
    out = src
    for offset, text in sorted(inserts, key=lambda x: x[0], reverse=True):
        out = out[:offset] + text + out[offset:]
    return out, wrapped


def _line_end(code: str, pos: int) -> int:
    """Offset just past the newline ending the line that holds ``pos`` (or the end)."""
    j = code.find("\n", pos)
    return len(code) if j < 0 else j + 1


def _body_lines(code: str, open_at: int, close: int) -> Optional[tuple[int, int]]:
    """[first body line start, closing-brace line start) when ``{`` ends its line and ``}``
    starts its own, and there is a line between them."""
    after_open = _line_end(code, open_at)
    close_line = code.rfind("\n", 0, close) + 1
    if code[open_at + 1:after_open].strip() or code[close_line:close].strip() or after_open >= close_line:
        return None
    return after_open, close_line


def _definition_lines(code: str, start: int, close: int) -> Optional[tuple[int, int]]:
    """The lines of the whole definition, when no other code shares them."""
    line_start = code.rfind("\n", 0, start) + 1
    end = _line_end(code, close)
    if re.search(r"[;{}]", code[line_start:start]) or code[close + 1:end].strip():
        return None
    return line_start, end
