"""Scanning CUDA/C++ source text: blank out comments and literals (keeping every newline, so
positions and line numbers stay valid), match brackets, split on top-level commas. Shared by the
guard (static checks), the source rewrites (CPU emulator, checked GPU launches) and the fast path's
evolve-block annotator; pure text, so it lives in design_space."""

from __future__ import annotations

from typing import Iterator

ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")": "(", "]": "[", "}": "{"}
_RAW_PREFIXES = ("u8R", "uR", "UR", "LR", "R")


def blank(src: str, strings: bool = True) -> str:
    """Copy of ``src`` with comments (and, with ``strings``, literal contents) replaced by spaces;
    newlines are kept."""
    out = list(src)
    n = len(src)
    i = 0

    def wipe(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "/" and src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif c == "/" and src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"':
            j = _raw_string_end(src, i)
            if j < 0:
                j = _quoted_end(src, i, '"')
            if strings:
                wipe(i + 1, j - 1)
            i = j
        elif c == "'" and not _is_digit_separator(src, i):
            j = _quoted_end(src, i, "'")
            if strings:
                wipe(i + 1, j - 1)
            i = j
        else:
            i += 1
    return "".join(out)


def _quoted_end(src: str, i: int, quote: str) -> int:
    """Index just past the literal that starts with the quote at ``i``."""
    j = i + 1
    n = len(src)
    while j < n:
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == quote or c == "\n":
            return j + 1
        j += 1
    return n


def _raw_string_end(src: str, i: int) -> int:
    """End of a raw string literal R"d(...)d" whose quote is at ``i``, or -1 if not raw."""
    for prefix in _RAW_PREFIXES:
        start = i - len(prefix)
        if start >= 0 and src[start:i] == prefix and (start == 0 or src[start - 1] not in ID_CHARS):
            paren = src.find("(", i)
            if paren < 0:
                return -1
            delim = src[i + 1 : paren]
            close = src.find(")" + delim + '"', paren)
            return len(src) if close < 0 else close + len(delim) + 2
    return -1


def _is_digit_separator(src: str, i: int) -> bool:
    """True for the ' in 1'000'000 (C++14 digit separator), false for a character literal."""
    j = i
    while j > 0 and (src[j - 1] in ID_CHARS or src[j - 1] == "."):
        j -= 1
    return j < i and src[j].isdigit()


def line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


def skip_ws_back(b: str, j: int) -> int:
    """Index just past the last non-space character before ``j``."""
    while j > 0 and b[j - 1].isspace():
        j -= 1
    return j


def skip_ws(b: str, j: int) -> int:
    while j < len(b) and b[j].isspace():
        j += 1
    return j


def top_level(b: str, start: int) -> Iterator[int]:
    """Positions from ``start`` that lie outside every bracket opened after ``start`` (bracket
    characters themselves excluded); stops at a closing bracket that was opened before it."""
    depth = 0
    for j in range(start, len(b)):
        c = b[j]
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            depth -= 1
            if depth < 0:
                return
        elif depth == 0:
            yield j


def match_forward(b: str, i: int) -> int:
    """Index of the bracket closing the one at ``i`` (any of ( [ {), or -1."""
    depth = 0
    for j in range(i, len(b)):
        c = b[j]
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return -1


def match_back(b: str, j: int, open_c: str, close_c: str) -> int:
    """Index of the ``open_c`` matching the ``close_c`` at ``j`` (brackets nest inside), or -1."""
    depth = 0
    paren = 0
    while j >= 0:
        c = b[j]
        if c in CLOSE and c != close_c:
            paren += 1
        elif c in OPEN and c != open_c:
            paren -= 1
            if paren < 0:
                return -1
        elif paren == 0 and c == close_c:
            depth += 1
        elif paren == 0 and c == open_c:
            depth -= 1
            if depth == 0:
                return j
        j -= 1
    return -1


def split_top(b: str, a: int, e: int, angles: bool = False) -> list[tuple[int, int]]:
    """Ranges of ``b[a:e]`` split on commas outside brackets; computed on blanked text so commas
    in comments do not count. With ``angles``, ``<...>`` after a name also nests (templates);
    returns [] when those angle brackets do not balance (they were comparisons)."""
    parts, depth, angle, start = [], 0, 0, a
    for j in range(a, e):
        c = b[j]
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            depth -= 1
        elif angles and depth == 0 and c == "<" and b[a:j].rstrip()[-1:] in ID_CHARS:
            angle += 1
        elif angles and depth == 0 and c == ">" and angle > 0:
            angle -= 1
        elif c == "," and depth == 0 and angle == 0:
            parts.append((start, j))
            start = j + 1
    parts.append((start, e))
    return [] if angle else parts


def split_config(b: str, a: int, e: int) -> list[tuple[int, int]]:
    """The 2 to 4 launch-configuration values: template-aware when that parse balances."""
    templ = split_top(b, a, e, angles=True)
    return templ if 2 <= len(templ) <= 4 else split_top(b, a, e)


def line_breaks(text: str) -> str:
    """The line breaks of ``text`` (keeping backslash continuations inside macros)."""
    return "".join("\\\n" if text[:k].endswith("\\") else "\n" for k, c in enumerate(text) if c == "\n")
