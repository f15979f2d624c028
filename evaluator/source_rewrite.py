"""Rewrite CUDA source so that g++ and the cuco CPU shim (evaluator/shim) can compile it.

Two constructs are not C++ and cannot be handled by macros alone:

* ``kern<<<grid, block[, smem[, stream]]>>>(args);`` becomes
  ``cuco_launch_kernel([=](auto... cuco_a) { kern(cuco_a...); }, dim3(grid), dim3(block),
  (size_t)(smem), (cudaStream_t)(stream), args);``. The generic lambda (instead of a function
  pointer) lets template kernels deduce their parameters from the arguments, as nvcc does.
* ``__shared__ T name[dims];`` becomes a reference into the running block's shared-memory arena,
  and ``extern __shared__ T name[];`` a pointer to the block's dynamic shared memory: the
  emulator runs many blocks at once in one process, so a plain ``static`` would be shared
  between blocks.

Line numbers stay stable so g++ diagnostics point at the candidate's own lines: replacements keep
every newline of the text they replace (file-scope ``__shared__`` adds a ``#define`` followed by a
``#line`` directive that restores the numbering).

The scanner is deliberately small: comments, string and character literals are blanked out
first, then launches and declarations are parsed on the blanked text with bracket matching.
A ``<<<`` that cannot be parsed raises ``ValueError`` naming the line; a ``__shared__``
declaration it cannot parse is left alone, and the shim turns it into a compile error whose
identifier (``cuco_shared_declaration_not_rewritten``) marks the candidate "not emulatable".
"""

from __future__ import annotations

import re

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")": "(", "]": "[", "}": "{"}
_RAW_PREFIXES = ("u8R", "uR", "UR", "LR", "R")
_SHARED_RE = re.compile(r"\b__shared__\b")
_ALIGN_RE = re.compile(
    r"(?:__align__|alignas)\s*\(((?:[^()]|\([^()]*\))*)\)"
    r"|__attribute__\s*\(\(\s*aligned\s*\(((?:[^()]|\([^()]*\))*)\)\s*\)\)"
)
_DIRECTIVE_RE = re.compile(r"[ \t]*#")
_STORAGE_RE = re.compile(r"\b(extern|static)\b")
_NAMESPACE_HEAD_RE = re.compile(r'(\bnamespace\b[^;{}]*|\bextern\s*"\s*"\s*)$')
_CLASS_HEAD_RE = re.compile(r"(\b(struct|class|union|enum)\b[^;{}()]*|=\s*)$")


def rewrite_for_cpu(source: str) -> str:
    """Return ``source`` with kernel launches and ``__shared__`` declarations rewritten."""
    blank = _blank(source)
    edits = _launch_edits(source, blank) + _shared_edits(source, blank)
    edits.sort(key=lambda e: e[0])
    for (s1, e1, _), (s2, _, _) in zip(edits, edits[1:]):
        if s2 < e1:
            raise ValueError(f"overlapping rewrites at line {_line_of(source, s2)}")
    out = []
    pos = 0
    for start, end, text in edits:
        out.append(source[pos:start])
        out.append(text)
        pos = end
    out.append(source[pos:])
    return "".join(out)


# --------------------------------------------------------------------------- scanning


def _blank(src: str) -> str:
    """Copy of ``src`` with comments and literal contents replaced by spaces (newlines kept)."""
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
            wipe(i + 1, j - 1)
            i = j
        elif c == "'" and not _is_digit_separator(src, i):
            j = _quoted_end(src, i, "'")
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
        if start >= 0 and src[start:i] == prefix and (start == 0 or src[start - 1] not in _ID_CHARS):
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
    while j > 0 and (src[j - 1] in _ID_CHARS or src[j - 1] == "."):
        j -= 1
    return j < i and src[j].isdigit()


def _line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


def _skip_ws_back(b: str, j: int) -> int:
    """Index just past the last non-space character before ``j``."""
    while j > 0 and b[j - 1].isspace():
        j -= 1
    return j


def _skip_ws(b: str, j: int) -> int:
    while j < len(b) and b[j].isspace():
        j += 1
    return j


def _match_forward(b: str, i: int) -> int:
    """Index of the bracket closing the one at ``i`` (any of ( [ {), or -1."""
    depth = 0
    for j in range(i, len(b)):
        c = b[j]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _match_back(b: str, j: int, open_c: str, close_c: str) -> int:
    """Index of the ``open_c`` matching the ``close_c`` at ``j`` (brackets nest inside), or -1."""
    depth = 0
    paren = 0
    while j >= 0:
        c = b[j]
        if c in _CLOSE and c != close_c:
            paren += 1
        elif c in _OPEN and c != open_c:
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


def _split_top(b: str, a: int, e: int, angles: bool = False) -> list[tuple[int, int]]:
    """Ranges of ``b[a:e]`` split on commas outside brackets; computed on blanked text so commas
    in comments do not count. With ``angles``, ``<...>`` after a name also nests (templates);
    returns [] when those angle brackets do not balance (they were comparisons)."""
    parts, depth, angle, start = [], 0, 0, a
    for j in range(a, e):
        c = b[j]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif angles and depth == 0 and c == "<" and b[a:j].rstrip()[-1:] in _ID_CHARS:
            angle += 1
        elif angles and depth == 0 and c == ">" and angle > 0:
            angle -= 1
        elif c == "," and depth == 0 and angle == 0:
            parts.append((start, j))
            start = j + 1
    parts.append((start, e))
    return [] if angle else parts


def _split_config(b: str, a: int, e: int) -> list[tuple[int, int]]:
    """The 2 to 4 launch-configuration values: template-aware when that parse balances."""
    templ = _split_top(b, a, e, angles=True)
    return templ if 2 <= len(templ) <= 4 else _split_top(b, a, e)


def _line_breaks(text: str) -> str:
    """The line breaks of ``text`` (keeping backslash continuations inside macros)."""
    return "".join("\\\n" if text[:k].endswith("\\") else "\n" for k, c in enumerate(text) if c == "\n")


# --------------------------------------------------------------------------- launches


def _launch_edits(src: str, b: str) -> list[tuple[int, int, str]]:
    edits = []
    pos = b.find("<<<")
    while pos >= 0:
        edit = _one_launch(src, b, pos)
        edits.append(edit)
        pos = b.find("<<<", edit[1])
    return edits


def _one_launch(src: str, b: str, lt: int) -> tuple[int, int, str]:
    line = _line_of(src, lt)
    start = _callee_start(b, lt, line)
    gt = _config_end(b, lt + 3, line)
    config = _split_config(b, lt + 3, gt)
    if not 2 <= len(config) <= 4:
        raise ValueError(f"line {line}: launch configuration needs 2 to 4 values, got {len(config)}")
    paren = _skip_ws(b, gt + 3)
    if paren >= len(b) or b[paren] != "(":
        raise ValueError(f"line {line}: expected '(' with the kernel arguments after '>>>'")
    close = _match_forward(b, paren)
    if close < 0:
        raise ValueError(f"line {line}: unbalanced parentheses in the kernel arguments")
    values = [src[x:y] for x, y in config] + ["0", "0"]
    grid, block = values[0], values[1]
    smem = values[2] if values[2].strip() else "0"
    stream = values[3] if values[3].strip() else "0"
    callee_end = _skip_ws_back(b, lt)
    args = _fix_null_args(src, b, paren + 1, close)
    text = (
        f"cuco_launch_kernel([=](auto... cuco_a) {{ {src[start:callee_end]}(cuco_a...); }}, "
        f"dim3({grid}), dim3({block}), (size_t)({smem}), (cudaStream_t)({stream})"
        + (f", {args}" if args.strip() else "")
        + ")"
    )
    # Line breaks in the gaps we drop (before '<<<' and before '(') go after the call.
    lost = _line_breaks(src[callee_end:lt]) + _line_breaks(src[gt + 3 : paren])
    return start, close + 1, text + lost


def _fix_null_args(src: str, b: str, a: int, e: int) -> str:
    """NULL is a plain integer once forwarded through a template: make it nullptr."""
    parts = [src[x:y] for x, y in _split_top(b, a, e)]
    return ",".join(p.replace("NULL", "nullptr") if p.strip() == "NULL" else p for p in parts)


def _callee_start(b: str, lt: int, line: int) -> int:
    """Start of the kernel before '<<<': ns::name, name<T, 4>, ::name, ns::template k<T>, (expr)."""
    j = _skip_ws_back(b, lt)
    if j > 0 and b[j - 1] == ")":
        k = _match_back(b, j - 1, "(", ")")
        if k < 0 or not b[k + 1 : j - 1].strip():
            raise ValueError(f"line {line}: cannot find the kernel before '<<<'")
        return k
    while True:
        if j > 0 and b[j - 1] == ">":
            k = _match_back(b, j - 1, "<", ">")
            if k < 0:
                raise ValueError(f"line {line}: unbalanced template arguments before '<<<'")
            j = _skip_ws_back(b, k)
        k = j
        while k > 0 and b[k - 1] in _ID_CHARS:
            k -= 1
        if k == j or b[k].isdigit():
            raise ValueError(f"line {line}: cannot find the kernel name before '<<<'")
        j = k
        m = _skip_template_keyword(b, _skip_ws_back(b, j))
        if m < 2 or b[m - 2 : m] != "::":
            return j
        j = m - 2
        p = _skip_ws_back(b, j)
        if p == 0 or b[p - 1] not in _ID_CHARS and b[p - 1] != ">":
            return j  # ::name (global scope)
        j = p


def _skip_template_keyword(b: str, m: int) -> int:
    """In ``ns::template k<T>`` step back over ``template`` to the ``::`` before it."""
    if b[max(0, m - 8) : m] == "template" and (m == 8 or b[m - 9] not in _ID_CHARS):
        return _skip_ws_back(b, m - 8)
    return m


def _config_end(b: str, j: int, line: int) -> int:
    depth = 0
    while j < len(b):
        c = b[j]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth < 0:
                break
        elif c == ";" and depth == 0:
            break
        elif depth == 0 and b.startswith(">>>", j):
            return j
        j += 1
    raise ValueError(f"line {line}: '<<<' without a matching '>>>'")


# --------------------------------------------------------------------------- __shared__


class _Scope:
    """Tracks whether a position is inside a function body (brace kinds on a stack)."""

    def __init__(self, b: str) -> None:
        self.b = b
        self.pos = 0
        self.stack: list[bool] = []  # True: function-like braces
        self.head_start = 0

    def in_function(self, upto: int) -> bool:
        b = self.b
        for j in range(self.pos, upto):
            c = b[j]
            if c == "{":
                head = b[self.head_start : j].strip()
                ns_like = bool(_NAMESPACE_HEAD_RE.search(head) or _CLASS_HEAD_RE.search(head))
                self.stack.append(not ns_like and (bool(head) or any(self.stack)))
                self.head_start = j + 1
            elif c == "}":
                if self.stack:
                    self.stack.pop()
                self.head_start = j + 1
            elif c == ";":
                self.head_start = j + 1
        self.pos = max(self.pos, upto)
        return any(self.stack)


def _shared_edits(src: str, b: str) -> list[tuple[int, int, str]]:
    edits = []
    scope = _Scope(b)
    counter = 0
    for m in _SHARED_RE.finditer(b):
        span = _statement_span(b, m.start())
        if span is None:
            continue
        start, end = span
        directive = _in_directive(b, m.start())
        in_func = scope.in_function(start) or directive
        text = _rewrite_shared(b[start:end], counter, in_func, _line_of(src, end))
        if text is None:
            continue
        counter += 1
        if in_func:  # file-scope text ends with a #line directive that restores numbering
            text += _line_breaks(src[start:end])
        edits.append((start, end + 1, text))
    return edits


def _line_start(b: str, pos: int) -> int:
    """Start of the logical line holding ``pos`` (backslash continuations joined)."""
    j = b.rfind("\n", 0, pos)
    while j > 0 and b[j - 1] == "\\":
        j = b.rfind("\n", 0, j - 1)
    return j + 1


def _in_directive(b: str, pos: int) -> bool:
    return _DIRECTIVE_RE.match(b, _line_start(b, pos)) is not None


def _statement_span(b: str, pos: int) -> tuple[int, int] | None:
    """(start, index of ';') of the declaration holding ``pos``, or None if unclear."""
    directive = _in_directive(b, pos)
    limit = _line_start(b, pos) if directive else 0
    start = pos
    while start > limit and b[start - 1] not in ";{}":
        prev_end = start - 2  # last character of the previous line when b[start - 1] is a newline
        if b[start - 1] == "\n" and not directive and prev_end >= 0 and b[prev_end] != "\n":
            if _in_directive(b, prev_end):
                break
        start -= 1
    if directive:
        start = max(start, b.find("#", limit) + 1)
        start = _after_macro_head(b, start)
    start = _skip_ws(b, start)  # leading blank lines stay where they are
    depth = 0
    for j in range(pos, len(b)):
        c = b[j]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif c == ";" and depth == 0:
            if directive and "\n" in b[pos:j].replace("\\\n", ""):
                return None
            return start, j
        elif c == "{" and depth == 0:
            return None
    return None


def _after_macro_head(b: str, start: int) -> int:
    """Skip ``define NAME(args)`` so a __shared__ inside a macro body parses from the body."""
    m = re.match(r"\s*define\s+[A-Za-z_]\w*(\([^)]*\))?", b[start:])
    return start + m.end() if m else start


def _rewrite_shared(stmt: str, counter: int, in_func: bool, line: int) -> str | None:
    stmt = stmt.replace("\\\n", " ").replace("\n", " ")
    aligns = [a or b for a, b in _ALIGN_RE.findall(stmt)]
    stmt = _ALIGN_RE.sub(" ", stmt)
    is_extern = bool(re.search(r"\bextern\b", stmt))
    stmt = _STORAGE_RE.sub(" ", _SHARED_RE.sub(" ", stmt)).strip()
    decls = _parse_declarators(stmt)
    if decls is None:
        return None
    align = f"(size_t)({aligns[-1]})" if aligns else "0"
    out = []
    for k, (typ, name, dims) in enumerate(decls):
        tag = f"{counter}_{k}"
        if is_extern:
            out.append(_extern_decl(typ, name, dims, tag, in_func, line))
        else:
            out.append(_static_decl(typ, name, dims, tag, align, in_func, line))
    return " ".join(out)


def _parse_declarators(stmt: str) -> list[tuple[str, str, str]] | None:
    """[(type, name, dims)] of ``T a[4][8], *p`` (the type part may hold templates)."""
    ranges = _split_top(stmt, 0, len(stmt), angles=True) or _split_top(stmt, 0, len(stmt))
    pieces = [stmt[a:e] for a, e in ranges]
    first = _name_and_dims(pieces[0])
    if first is None:
        return None
    base_type, name, dims = first
    if not base_type.strip() or base_type.strip().endswith("::"):
        return None
    base = base_type.rstrip("*& ").rstrip()
    decls = [(base_type.strip(), name, dims)]
    for piece in pieces[1:]:
        parsed = _name_and_dims(piece)
        if parsed is None:
            return None
        prefix, pname, pdims = parsed
        decls.append((f"{base} {prefix.strip()}".strip(), pname, pdims))
    return decls


def _name_and_dims(piece: str) -> tuple[str, str, str] | None:
    depth = 0
    cut = len(piece)
    for j, c in enumerate(piece):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "[" and depth == 0:
            cut = j
            break
    head = piece[:cut].rstrip()
    m = re.search(r"([A-Za-z_]\w*)$", head)
    if m is None or "=" in piece:
        return None
    return head[: m.start()], m.group(1), piece[cut:].strip()


def _static_decl(typ: str, name: str, dims: str, tag: str, align: str, in_func: bool, line: int) -> str:
    t, s = f"cuco_shT_{tag}", f"cuco_shS_{tag}"
    alloc = f"cuco_shared_alloc(&{s}, sizeof({t}), {align}, alignof({t}))"
    if in_func:
        return f"typedef {typ} {t}{dims}; static cuco_shared_site {s}; {t}& {name} = *({t}*){alloc};"
    f = f"cuco_shF_{tag}"
    return (
        f"typedef {typ} {t}{dims}; static cuco_shared_site {s}; "
        f"static inline {t}& {f}() {{ return *({t}*){alloc}; }}"
        f"\n#define {name} ({f}())\n#line {line}\n"
    )


def _extern_decl(typ: str, name: str, dims: str, tag: str, in_func: bool, line: int) -> str:
    rest = dims[dims.find("]") + 1 :] if dims.startswith("[") else dims
    t = f"cuco_shT_{tag}"
    if in_func:
        return f"typedef {typ} {t}{rest}; {t}* {name} = ({t}*)cuco_dynamic_smem();"
    f = f"cuco_shF_{tag}"
    return (
        f"typedef {typ} {t}{rest}; static inline {t}* {f}() {{ return ({t}*)cuco_dynamic_smem(); }}"
        f"\n#define {name} ({f}())\n#line {line}\n"
    )
