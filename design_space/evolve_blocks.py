"""Where a candidate may change: its evolve blocks, and the frozen text outside them.

One definition for the guard (which rejects a child whose frozen text differs from its parent's)
and for the agents (which confine patches to the blocks), so the two can never disagree.
"""

from __future__ import annotations

import re
from typing import Optional

from design_space.candidate import EVOLVE_END, EVOLVE_START
from design_space.cuda_scan import line_of

_MARKER = re.compile(rf"{EVOLVE_START}|{EVOLVE_END}")
# The host entry every candidate must define (ARCHITECTURE section 4).
HOST_ENTRY = re.compile(r'extern\s+"C"\s+int\s+cuco_run\s*\(\s*const\s+cuco_ctx\s*\*\s*\w*\s*,\s*cudaStream_t\s*\w*\s*\)')


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
    # trailing whitespace and blank lines at the end are not code: an LLM that drops them changed nothing
    return "\n".join(ln.rstrip() for ln in "".join(parts).splitlines()).rstrip()
