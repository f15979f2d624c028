"""Inline asm in a candidate: system-call and cycle-counter instructions, asm labels and alias
attributes that rename a banned call, and text that is not PTX (host-side asm reaches the GNU
assembler, whose directives read and write files). Part of the guard stage (evaluator/guard.py).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Callable, Optional

from kernels import cuda_scan as scan


@dataclass(frozen=True)
class Finding:
    rule: str
    reason: str
    line: int = 0

    def __str__(self) -> str:
        return f"[{self.rule}]{f' line {self.line}' if self.line else ''}: {self.reason}"


_ASM = re.compile(r"\b(?:asm|__asm|__asm__)\b\s*(?:(?:volatile|__volatile__|goto|inline)\b\s*)*\(")
_ASM_SYSCALL = re.compile(r"\b(syscall|sysenter|int\s+\$?0x80|svc\s+#?0)\b|\b(rdtscp?|rdpmc)\b")
# An asm label on a declaration (`int f() asm("fork");`) or an alias attribute renames a call.
_ASM_LABEL = re.compile(r"(?:\)|\w\s)\s*(?:asm|__asm|__asm__)\s*\(\s*\"([^\"]*)\"\s*\)")
_ALIAS_ATTR = re.compile(r"\b(alias|weakref|ifunc|symver)\s*\(\s*\"([^\"]*)\"")


def asm_findings(code: str, with_strings: str, where: str, category: Callable[[str], Optional[str]]) -> list[Finding]:
    """System calls, cycle-counter reads, renamed banned calls and non-PTX text in inline asm."""
    found = []
    for m in _ASM.finditer(code):
        close = scan.match_forward(code, m.end() - 1)
        # escapes as the assembler sees them: "\tsyscall" is a tab, then the instruction
        body = with_strings[m.end():close if close > 0 else len(code)].replace("\\n", "\n").replace("\\t", "\t")
        for bad in _ASM_SYSCALL.finditer(body):
            what = (f"a system call ({bad.group(1)}): process, file and network access are not allowed"
                    if bad.group(1) else f"a cycle-counter read ({bad.group(2)}): the harness owns timing")
            found.append(Finding("banned_call", f"inline asm with {what}{where}", scan.line_of(code, m.start())))
    for m in _ASM_LABEL.finditer(with_strings):
        if category(m.group(1)) or category(m.group(1).lstrip("_")):
            found.append(Finding("banned_call", f"asm label \"{m.group(1)}\" renames a banned call: "
                                                f"{category(m.group(1)) or category(m.group(1).lstrip('_'))}"
                                                f"{where}", scan.line_of(with_strings, m.start())))
    for m in _ALIAS_ATTR.finditer(with_strings):
        found.append(Finding("banned_call", f"{m.group(1)}(\"{m.group(2)}\") attribute: symbol aliasing would hide "
                                            f"what the candidate calls{where}", scan.line_of(with_strings, m.start())))
    return found + _asm_ptx(code, with_strings, where)


# --------------------------------------------------------------------------- inline asm: PTX text only

# GNU assembler directives: asm that reaches a host compiler goes to `as`, which would run them.
_GNU_DIRECTIVES = frozenset(
    "incbin include fill space skip zero byte 2byte 4byte 8byte short word long quad octa ascii asciz string "
    "string8 string16 section pushsection popsection previous subsection text data bss org set equ equiv eqv macro "
    "endm purgem exitm rept irp irpc endr globl global weak weakref symver type size align balign p2align comm "
    "lcomm file loc ident err error warning print abort altmacro noaltmacro if ifdef ifndef else elseif endif end "
    "reloc nops sleb128 uleb128 float double single hword value int cfi_startproc".split())
_PTX_DIRECTIVES = frozenset({"reg", "local", "shared", "param", "pragma"})  # what PTX declares inside a function
_PTX_OPCODES = frozenset("""abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra
    brev brkpt brx clusterlaunchcontrol clz cnot copysign cos cp createpolicy cvt cvta discard div dp2a dp4a elect ex2
    exit fence fma fns getctarank griddepcontrol isspacep istypep ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa match
    max mbarrier membar min mma mov movmatrix mul mul24 multimem nanosleep neg not or pmevent popc prefetch prefetchu
    prmt rcp red redux rem rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin slct sqrt st stackrestore stacksave
    stmatrix sub subc suld suq sured sust szext tanh tcgen05 tensormap testp tex tld4 trap txq vabsdiff vabsdiff2
    vabsdiff4 vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax vmax2 vmax4 vmin vmin2 vmin4 vote vset vset2 vset4 vshl vshr
    vsub vsub2 vsub4 wgmma wmma xor""".split())
_PTX_BARE = frozenset({"exit", "trap", "brkpt", "pmevent"})  # PTX opcodes written without a suffix
# x86 immediates, AT&T memory operands and register names (PTX writes [addr] and %r1, %rd2, %f3...)
_X86_OPERAND = re.compile(r"\$-?\d|\(\s*%|%%?(?:[re]?(?:ax|bx|cx|dx|si|di|sp|bp|ip)|[xyz]mm\d+|[cdefgs]s|cr\d|dr\d"
                          r"|[abcd][lh])\b")
_LITERAL = re.compile(r'(?:u8|u|U|L)?(?:R"([^(\s]*)\((.*?)\)\1"|"((?:\\.|[^"\\])*)")', re.S)
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]+|[0-7]{1,3}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_STATEMENT_KEYWORDS = {"if", "while", "for", "switch", "else", "do", "return"}


def _unescape(body: str) -> str:
    simple = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b", "0": "\0"}

    def one(m: re.Match) -> str:
        e = m.group(1)
        if e[0] in "xuU":
            return chr(min(int(e[1:], 16), 0x10FFFF))
        if e[0].isdigit() and e != "0":
            return chr(int(e, 8))
        return simple.get(e, e)
    return _ESCAPE.sub(one, body)


def is_label(code: str, start: int) -> bool:
    """An asm label renames a declaration (`int f() asm("g")`); an asm statement follows a statement boundary."""
    j = scan.skip_ws_back(code, start)
    before = code[j - 1:j]
    if before == "]":
        return True
    if before == ")":
        depth, k = 0, j - 1
        while k >= 0:
            depth += {")": 1, "(": -1}.get(code[k], 0)
            if depth == 0:
                break
            k -= 1
        word = re.search(r"(\w+)\s*$", code[max(0, k - 200):max(0, k)])  # bounded: linear in the source overall
        return not (word and word.group(1) in _STATEMENT_KEYWORDS)
    word = re.search(r"(\w+)$", code[max(0, j - 200):j])
    return bool(word) and word.group(1) not in _STATEMENT_KEYWORDS


class Scopes:
    """Whether a position is at file scope (no function or class body encloses it; namespace and
    extern "C" blocks do not count), answered from one pass over the braces."""

    _OPENER = re.compile(r'(?:\bnamespace\b[\w\s:]{0,200}|\bextern\s*"[^"]{0,40}")\s*$')

    def __init__(self, code: str) -> None:
        self.positions, self.file_scope = [], []
        stack: list[bool] = []
        bad = 0  # enclosing braces that are function or class bodies
        for m in re.finditer(r"[{}]", code):
            if m.group() == "}":
                if stack:
                    bad -= not stack.pop()
            else:
                ok = bool(self._OPENER.search(code[max(0, m.start() - 200):m.start()]))
                stack.append(ok)
                bad += not ok
            self.positions.append(m.start())
            self.file_scope.append(bad == 0)

    def at(self, pos: int) -> bool:
        i = bisect.bisect_left(self.positions, pos) - 1
        return True if i < 0 else self.file_scope[i]


def _ptx_problem(statement: str) -> Optional[str]:
    if statement.startswith("."):
        word = re.match(r"\.(\w*)", statement).group(1)
        if word in _PTX_DIRECTIVES:
            return None
        return f"GNU assembler directive .{word}" if word in _GNU_DIRECTIVES else f"directive .{word} (not PTX)"
    m = re.match(r"([a-z][a-z0-9_]*)((?:\.[\w:]+)*)", statement)
    if not m or m.group(1) not in _PTX_OPCODES or not (m.group(2) or m.group(1) in _PTX_BARE):
        return f"`{statement.split()[0][:40]}`, not a PTX instruction"
    bad = _X86_OPERAND.search(statement[m.end():])
    return f"x86 operand `{bad.group(0)}`" if bad else None


def _ptx_text(template: str) -> Optional[str]:
    """What in an asm template is not PTX (None: all of it is)."""
    for raw in re.split(r"[;\n\r]", template):
        st = raw.strip().lstrip("{}").strip()
        while (m := re.match(r"[A-Za-z_$][\w$]*:(?!:)\s*", st)) is not None:  # labels
            st = st[m.end():]
        st = re.sub(r"^@!?%*[\w.$]+\s+", "", st).strip().rstrip("{}").strip()  # a predicate guard
        problem = _ptx_problem(st) if st else None
        if problem:
            return problem
    return None


_DIRECTIVE_LINE = re.compile(r"^[ \t]*(?:#|%:)(?:[^\n]*\\\n)*[^\n]*", re.M)


def _asm_ptx(code: str, with_strings: str, where: str) -> list[Finding]:
    """Inline asm is PTX text in device code, nothing else: the host build hands asm to the GNU assembler
    (file-scope asm always goes there). asm labels must be plain symbol names."""
    out = []
    # a macro body is checked where the macro is used (the expanded pass), not in its #define
    code = _DIRECTIVE_LINE.sub(lambda d: re.sub(r"[^\n]", " ", d.group(0)), code)
    scopes = Scopes(code)
    for m in _ASM.finditer(code):
        line = scan.line_of(code, m.start())
        close = scan.match_forward(code, m.end() - 1)
        body = code[m.end():close if close > 0 else len(code)]
        colon = next((i for i in scan.top_level(body, 0) if body[i] == ":"), len(body))
        literals = list(_LITERAL.finditer(with_strings, m.end(), m.end() + colon))
        text = "".join(lit.group(2) if lit.group(2) is not None else _unescape(lit.group(3) or "") for lit in literals)
        shell = re.sub(r'(?:u8|u|U|L)?R?"[^"]*"', "", body[:colon]).strip()
        if is_label(code, m.start()):
            if literals and not re.fullmatch(r"[A-Za-z_.$][\w.$]*", text):
                out.append(Finding("asm_not_ptx", f"asm label {text[:60]!r}: not a plain symbol name, so it would "
                                                  f"put text into the assembly{where}", line))
            continue
        if scopes.at(m.start()):
            out.append(Finding("asm_not_ptx", f"file-scope asm: it goes to the host assembler; only PTX inside "
                                              f"device functions is allowed{where}", line))
            continue
        # unexpanded macros may stand for the template in the source as written: the expanded pass decides
        problem = _ptx_text(text) or (f"a template that is not string literals (`{shell[:40]}`)"
                                      if shell and where else None)
        if problem:
            out.append(Finding("asm_not_ptx", f"inline asm with {problem}: only PTX is allowed (asm in host code "
                                              f"reaches the GNU assembler){where}", line))
    return out


def is_ptx_statement(code: str, with_strings: str, pos: int) -> bool:
    """The asm at ``pos`` is a statement (not a label) whose template is PTX text and nothing else."""
    m = _ASM.match(code, pos)
    if not m or is_label(code, pos):
        return False
    close = scan.match_forward(code, m.end() - 1)
    body = code[m.end():close if close > 0 else len(code)]
    colon = next((i for i in scan.top_level(body, 0) if body[i] == ":"), len(body))
    literals = list(_LITERAL.finditer(with_strings, m.end(), m.end() + colon))
    text = "".join(lit.group(2) if lit.group(2) is not None else _unescape(lit.group(3) or "") for lit in literals)
    return bool(literals) and _ptx_text(text) is None
