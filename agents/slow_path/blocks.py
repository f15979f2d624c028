"""Evolve-block helpers: where a candidate may change and what must stay frozen.

A mirror of ``evaluator/guard.py``'s ``evolve_regions`` / ``frozen_text`` (agents may not import
the evaluator: the star rule). The semantics must stay identical -- the guard rejects a child whose
frozen text differs from its parent's, so a patch accepted here and refused there would waste a
build. ``tests/agents/slow_path/test_blocks.py`` compares the two on every pattern's renders.
"""

from __future__ import annotations

import re
from typing import Optional

from design_space.candidate import EVOLVE_END, EVOLVE_START

_MARKER = re.compile(rf"{EVOLVE_START}|{EVOLVE_END}")


def line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


def evolve_regions(src: str) -> tuple[list[tuple[int, int]], Optional[str]]:
    """Spans of the evolve blocks (marker lines excluded) or an error message."""
    spans, start = [], None
    for m in _MARKER.finditer(src):
        if m.group(0) == EVOLVE_START:
            if start is not None:
                return [], f"nested {EVOLVE_START} at line {line_of(src, m.start())}"
            start = src.index("\n", m.end()) + 1 if "\n" in src[m.end():] else len(src)
        else:
            if start is None:
                return [], f"{EVOLVE_END} without a start at line {line_of(src, m.start())}"
            spans.append((start, src.rfind("\n", 0, m.start()) + 1))
            start = None
    if start is not None:
        return [], f"{EVOLVE_START} is never closed"
    return spans, None


def frozen_text(src: str) -> Optional[str]:
    """The source with evolve-block contents removed (what mutation must leave alone)."""
    spans, err = evolve_regions(src)
    if err:
        return None
    parts, last = [], 0
    for a, b in spans:
        parts.append(src[last:a])
        last = b
    parts.append(src[last:])
    return "\n".join(ln.rstrip() for ln in "".join(parts).splitlines())


def frozen_lines(src: str) -> list[tuple[int, str]]:
    """The frozen lines with their 1-based line numbers in ``src`` (to say where a change is)."""
    spans, err = evolve_regions(src)
    if err:
        return []
    inside = set()
    for a, b in spans:
        inside.update(range(line_of(src, a), line_of(src, b)))  # b is the END marker line's start
    return [(i, ln.rstrip()) for i, ln in enumerate(src.splitlines(), 1) if i not in inside]


def evolve_text(src: str) -> Optional[str]:
    """The evolve blocks' contents joined, or None when the source has none (or broken markers)."""
    spans, err = evolve_regions(src)
    if err or not spans:
        return None
    return "".join(src[a:b] for a, b in spans)


def first_frozen_difference(child: str, parent: str) -> Optional[str]:
    """Where ``child``'s frozen text departs from ``parent``'s, in words, or None when equal."""
    if frozen_text(child) == frozen_text(parent):
        return None
    mine, theirs = frozen_lines(child), frozen_lines(parent)
    for k, ((line, text), (_, want)) in enumerate(zip(mine, theirs)):
        if text != want:
            return f"frozen code changed at line {line}: expected {_clip(want)!r}, got {_clip(text)!r}"
    if len(mine) > len(theirs):
        return f"frozen code changed at line {mine[len(theirs)][0]}: a line was added outside the evolve blocks"
    last = mine[-1][0] if mine else 1
    return f"frozen code changed at line {last}: {_clip(theirs[len(mine)][1])!r} is missing outside the evolve blocks"


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."
