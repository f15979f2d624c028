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
from dataclasses import dataclass

from kernels import cuda_scan as scan
from kernels.cuda_scan import ID_CHARS

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
    blank = scan.blank(source)
    edits = _launch_edits(source, blank) + _shared_edits(source, blank)
    edits.sort(key=lambda e: e[0])
    for (s1, e1, _), (s2, _, _) in zip(edits, edits[1:]):
        if s2 < e1:
            raise ValueError(f"overlapping rewrites at line {scan.line_of(source, s2)}")
    out = []
    pos = 0
    for start, end, text in edits:
        out.append(source[pos:start])
        out.append(text)
        pos = end
    out.append(source[pos:])
    return "".join(out)


# --------------------------------------------------------------------------- launches


def _launch_edits(src: str, b: str) -> list[tuple[int, int, str]]:
    edits = []
    pos = b.find("<<<")
    while pos >= 0:
        edit = _one_launch(src, b, pos)
        edits.append(edit)
        pos = b.find("<<<", edit[1])
    return edits


@dataclass(frozen=True)
class Launch:
    """One parsed ``kern<<<grid, block[, smem[, stream]]>>>(args)``: offsets into the source, the
    configuration text (smem and stream default to 0), the kernel expression."""

    start: int  # first character of the kernel expression
    callee_end: int
    lt: int  # the '<<<'
    gt: int  # the '>>>'
    paren: int  # '(' of the arguments
    close: int  # its ')'
    grid: str
    block: str
    smem: str
    stream: str


def parse_launch(src: str, b: str, lt: int) -> Launch:
    """Parse the launch whose ``<<<`` is at ``lt`` (``b``: ``src`` blanked by cuda_scan).
    Raises ``ValueError`` naming the line when it is not a launch this scanner understands."""
    line = scan.line_of(src, lt)
    start = _callee_start(b, lt, line)
    gt = _config_end(b, lt + 3, line)
    config = scan.split_config(b, lt + 3, gt)
    if not 2 <= len(config) <= 4:
        raise ValueError(f"line {line}: launch configuration needs 2 to 4 values, got {len(config)}")
    paren = scan.skip_ws(b, gt + 3)
    if paren >= len(b) or b[paren] != "(":
        raise ValueError(f"line {line}: expected '(' with the kernel arguments after '>>>'")
    close = scan.match_forward(b, paren)
    if close < 0:
        raise ValueError(f"line {line}: unbalanced parentheses in the kernel arguments")
    values = [src[x:y] for x, y in config] + ["", ""]
    return Launch(start=start, callee_end=scan.skip_ws_back(b, lt), lt=lt, gt=gt, paren=paren, close=close,
                  grid=values[0], block=values[1], smem=values[2] if values[2].strip() else "0",
                  stream=values[3] if values[3].strip() else "0")


def _one_launch(src: str, b: str, lt: int) -> tuple[int, int, str]:
    k = parse_launch(src, b, lt)
    args = _fix_null_args(src, b, k.paren + 1, k.close)
    text = (
        f"cuco_launch_kernel([=](auto... cuco_a) {{ {src[k.start:k.callee_end]}(cuco_a...); }}, "
        f"dim3({k.grid}), dim3({k.block}), (size_t)({k.smem}), (cudaStream_t)({k.stream})"
        + (f", {args}" if args.strip() else "")
        + ")"
    )
    # Line breaks in the gaps we drop (before '<<<' and before '(') go after the call.
    lost = scan.line_breaks(src[k.callee_end:lt]) + scan.line_breaks(src[k.gt + 3 : k.paren])
    return k.start, k.close + 1, text + lost


def _fix_null_args(src: str, b: str, a: int, e: int) -> str:
    """NULL is a plain integer once forwarded through a template: make it nullptr."""
    parts = [src[x:y] for x, y in scan.split_top(b, a, e)]
    return ",".join(p.replace("NULL", "nullptr") if p.strip() == "NULL" else p for p in parts)


def _callee_start(b: str, lt: int, line: int) -> int:
    """Start of the kernel before '<<<': ns::name, name<T, 4>, ::name, ns::template k<T>, (expr)."""
    j = scan.skip_ws_back(b, lt)
    if j > 0 and b[j - 1] == ")":
        k = scan.match_back(b, j - 1, "(", ")")
        if k < 0 or not b[k + 1 : j - 1].strip():
            raise ValueError(f"line {line}: cannot find the kernel before '<<<'")
        return k
    while True:
        if j > 0 and b[j - 1] == ">":
            k = scan.match_back(b, j - 1, "<", ">")
            if k < 0:
                raise ValueError(f"line {line}: unbalanced template arguments before '<<<'")
            j = scan.skip_ws_back(b, k)
        k = j
        while k > 0 and b[k - 1] in ID_CHARS:
            k -= 1
        if k == j or b[k].isdigit():
            raise ValueError(f"line {line}: cannot find the kernel name before '<<<'")
        j = k
        m = _skip_template_keyword(b, scan.skip_ws_back(b, j))
        if m < 2 or b[m - 2 : m] != "::":
            return j
        j = m - 2
        p = scan.skip_ws_back(b, j)
        if p == 0 or b[p - 1] not in ID_CHARS and b[p - 1] != ">":
            return j  # ::name (global scope)
        j = p


def _skip_template_keyword(b: str, m: int) -> int:
    """In ``ns::template k<T>`` step back over ``template`` to the ``::`` before it."""
    if b[max(0, m - 8) : m] == "template" and (m == 8 or b[m - 9] not in ID_CHARS):
        return scan.skip_ws_back(b, m - 8)
    return m


def _config_end(b: str, j: int, line: int) -> int:
    for k in scan.top_level(b, j):
        if b[k] == ";":
            break
        if b.startswith(">>>", k):
            return k
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
        text = _rewrite_shared(b[start:end], counter, in_func, scan.line_of(src, end))
        if text is None:
            continue
        counter += 1
        if in_func:  # file-scope text ends with a #line directive that restores numbering
            text += scan.line_breaks(src[start:end])
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
    start = scan.skip_ws(b, start)  # leading blank lines stay where they are
    end = next((j for j in scan.top_level(b, pos) if b[j] == ";"), None)
    if end is None or (directive and "\n" in b[pos:end].replace("\\\n", "")):
        return None
    return start, end


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
    ranges = scan.split_top(stmt, 0, len(stmt), angles=True) or scan.split_top(stmt, 0, len(stmt))
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
