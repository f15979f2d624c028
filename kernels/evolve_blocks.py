"""Where a candidate may change: its evolve blocks, and the frozen code outside them.

One definition for the guard (which rejects a child whose frozen code differs from its parent's)
and for the agents (which confine patches to the blocks), so the two can never disagree.
"""

from __future__ import annotations

import re
from typing import Optional

from design_space.candidate import EVOLVE_END, EVOLVE_START
from kernels.cuda_scan import ID_CHARS, blank, line_of

_MARKER = re.compile(rf"{EVOLVE_START}|{EVOLVE_END}")
# The host entry every candidate must define (the device contract).
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


# What stands for each evolve block in ``frozen_code``: moving frozen code across a block changes it.
BLOCK_MARK = "\u27e6evolve block\u27e7"
_SEPARATORS = frozenset("()[]{};,")  # never part of a longer token: space beside them is not code
_WORDISH = ID_CHARS | set(".\"'")  # a prefix and its literal (L"x") or a number's parts stay apart
_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_SPACE = re.compile(r"\s+")


def frozen_code(src: str) -> Optional[str]:
    """The code outside the evolve blocks, compared by the guard: comments blanked, whitespace
    normalised, each block a mark. Two sources with equal frozen code differ only in comments,
    whitespace that separates no tokens, and their block contents. None when the markers are broken.

    Comments are found in the whole source (line splices first, as the compiler does), so a comment
    that a block opens and a later block closes hides the frozen code between them here too."""
    spans, err = evolve_regions(src)
    if err:
        return None
    # a backslash-newline joins lines before comments are seen: blank the pair but keep positions
    joined = src.replace("\\\r\n", "   ").replace("\\\n", "  ")
    code = blank(joined, strings=False)
    parts, last = [], 0
    for a, b in spans:
        parts.append(code[last:a])
        last = b
    parts.append(code[last:])
    text = f"\n{BLOCK_MARK}\n".join(parts)
    return "\n".join(ln for ln in map(_normal_line, text.splitlines()) if ln)


def _normal_line(ln: str) -> str:
    """One line with whitespace that cannot matter removed: outside literals, a space run goes where
    a bracket or separator touches it or where it parts a word from punctuation (``a + b`` ==
    ``a+b``), and becomes one space where it keeps two tokens apart (``int x``, ``- -``). When in
    doubt it stays (a stricter comparison only refuses more). Preprocessor lines only collapse runs
    (``#define F(x)`` and ``#define F (x)`` differ)."""
    ln = ln.strip()
    if ln.startswith("#"):
        return _SPACE.sub(" ", ln)
    literals = [m.span() for m in _LITERAL.finditer(ln)]

    def keep(m: re.Match) -> str:
        if any(a < m.start() < b for a, b in literals):
            return m.group()
        before, after = ln[m.start() - 1], ln[m.end()]  # the line is stripped: both exist
        if before in _SEPARATORS or after in _SEPARATORS:
            return ""
        return " " if (before in _WORDISH) == (after in _WORDISH) else ""
    return _SPACE.sub(keep, ln)
