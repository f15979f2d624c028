"""Evolve-block helpers: where a candidate may change and what must stay frozen.

``evolve_regions`` / ``frozen_text`` are ``kernels.evolve_blocks``'s, the very functions the
guard uses: a patch accepted here is never refused there for its frozen text.
"""

from __future__ import annotations

from typing import Optional

from kernels.cuda_scan import line_of
from kernels.evolve_blocks import evolve_regions, frozen_text  # noqa: F401  (re-exported)


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
