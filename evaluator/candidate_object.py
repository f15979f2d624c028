"""One candidate compiled for the CPU emulator into an object file that is checked before linking.

Every tool runs in the sandbox (they read untrusted text and bytes), all in one sandbox call:
``g++ -E`` (the preprocessed text, kept for inspection), ``g++ -S``, two gates on the assembly
*before* the assembler reads it, ``g++ -c``, then ``nm``/``c++filt``/``readelf`` on the object.

* Inline asm: gcc brackets every asm statement with ``#APP``; any is a rejection.
* Text the compiler never writes: a directive outside the set g++ emits (``.incbin``,
  ``.include``, ``.fill``, ``.rept``...), a ``;`` statement separator, text after a label. g++
  copies asm labels, section names and ``#ident`` strings verbatim, so a newline in one of them
  would put assembler directives in the file; the source checks below reject those constructs,
  and this gate keeps file-reading and output-inflating directives from the assembler regardless.
* Source: no ``#line``/linemarker directive (it would disguise which lines are the candidate's in
  the preprocessed text), no ``#ident``; in the candidate's own preprocessed lines no ``asm``
  (statements or labels) and no attribute that names sections or symbols for the assembler.
* Object (``check_object``): undefined symbols only from the published ``allowed_symbols.txt``;
  no definition of ``main``/crt/linker names, of anything the runtime library or the C/C++
  runtime libraries define (a candidate's definition would replace theirs for the whole
  emulator), of cuco-internal names, no indirect functions; sections only those g++ writes, so
  no constructors or destructors (``.init_array`` and kin) and no thread-local storage.

The symbol and section rules live in ``object_symbols``. Findings reuse the guard's ``Finding``;
an outcome with findings is a rejection, one without findings and not ``ok`` is a compile error
(``log``, ``not_emulatable``).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from kernels import cuda_scan as scan
from evaluator import sandbox
from evaluator import shim_build  # attributes read at call time: shim_build may import this module
from evaluator.guard import Finding
from evaluator.guard_asm import Scopes, is_ptx_statement
from evaluator.object_symbols import parse_symbols, runtime_defined, section_findings, symbol_findings, tool
from evaluator.source_rewrite import rewrite_for_cpu
from evaluator.toolchain import find_gxx

OBJECT_LIMIT_BYTES = 64 << 20
_ADDRESS_SPACE_BYTES = 4 << 30
_LOG_CHARS = 20000
_OUTPUTS = ("candidate.ii", "candidate.s", "unquoted.s", "compile.log", "assembly_text.txt", "assembler.log",
            "candidate.o", "nm.txt", "names.txt", "sections.txt")
# What g++ writes in x86-64 assembly for C++ (the .cfi_* family included).
_DIRECTIVES = ("text|data|bss|section|previous|globl|weak|hidden|protected|internal|local|comm|type|size|align|"
               "p2align|balign|byte|value|short|long|quad|zero|string|ascii|uleb128|sleb128|set|ident|file|cfi_[a-z_]+")
EXIT_COMPILE, EXIT_APP, EXIT_TEXT, EXIT_ASSEMBLE, EXIT_INSPECT = 10, 11, 12, 13, 14
# Paths travel as arguments (absolute paths in argv stay readable in the sandbox's private /tmp).
_INSPECT = ("{nm} -P \"$OBJ\" > nm.txt && cut -d' ' -f1 nm.txt | {filt} > names.txt && "
            "{readelf} -SW \"$OBJ\" > sections.txt")
# argv: sh -c SCRIPT sh GXX FLAGS...
_BUILD = r"""
GXX=$1; shift; OBJ=candidate.o
"$GXX" "$@" -E -fpch-preprocess candidate_cpu.cpp -o candidate.ii 2>/dev/null
"$GXX" "$@" -S candidate_cpu.cpp -o candidate.s 2>compile.log || exit {compile}
grep -q '^[[:space:]]*#APP' candidate.s && exit {app}
sed -E 's/"([^"\\]|\\.)*"/""/g' candidate.s > unquoted.s
{{ grep -nE ';|^[[:space:]]*[^[:space:]:]+:[[:space:]]*[^[:space:]]' unquoted.s
  grep -nE '^[[:space:]]*\.[A-Za-z_]' unquoted.s | grep -vE '^[0-9]+:[[:space:]]*\.[A-Za-z0-9_.$]+:[[:space:]]*$' \
    | grep -vE '^[0-9]+:[[:space:]]*\.({directives})([[:space:]]|$)'; }} | head -n 5 > assembly_text.txt
[ -s assembly_text.txt ] && exit {text}
"$GXX" -c -x assembler candidate.s -o candidate.o 2>assembler.log || exit {assemble}
{inspect} || exit {inspect_code}
"""


@dataclass(frozen=True)
class ObjectOutcome:
    ok: bool
    object: Optional[Path]
    findings: tuple[Finding, ...]
    log: str
    not_emulatable: bool
    seconds: float


def _inspect_command() -> str:
    return _INSPECT.format(nm=shlex.quote(tool("nm")), filt=shlex.quote(tool("c++filt")),
                           readelf=shlex.quote(tool("readelf")))


def _limits(timeout_s: float) -> sandbox.Limits:
    return sandbox.Limits(wall_s=timeout_s, cpu_s=int(timeout_s) + 1, address_space_bytes=_ADDRESS_SPACE_BYTES,
                          file_size_bytes=OBJECT_LIMIT_BYTES, work_bytes=4 * OBJECT_LIMIT_BYTES,
                          collect_bytes=OBJECT_LIMIT_BYTES)


def _view(pch: tuple[str, ...]) -> tuple[Path, ...]:
    """The compiler sees the system (g++, binutils, libc headers), the shim and runtime headers and the
    precompiled header: no reference data, runs, caches or home folders."""
    folders = [Path(p) for flag, p in zip(pch, pch[1:]) if flag == "-I"]
    return (*sandbox.system_view(), shim_build.SHIM_INCLUDE, shim_build.RUNTIME_INCLUDE, *folders)


def _read(path: Path, limit: int = OBJECT_LIMIT_BYTES) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode(errors="replace")
    except OSError:
        return ""


def compile_candidate_object(source: str, work_dir: Path, *, dtype_code: int, cache_dir: Path,
                             timeout_s: float = 120, stop: Optional[threading.Event] = None) -> ObjectOutcome:
    """Rewrite, compile and check one candidate into ``work_dir/candidate.o`` (see the module doc)."""
    start = time.monotonic()
    done = lambda ok, obj=None, findings=(), log="", ne=False: ObjectOutcome(  # noqa: E731
        ok, obj, tuple(findings), log, ne, time.monotonic() - start)
    work_dir = Path(work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    early = source_findings(source)
    if early:
        return done(False, findings=early)
    try:
        rewritten = rewrite_for_cpu(source)
    except ValueError as exc:  # the rewrite's limit, not the candidate's fault (nvcc accepted it)
        return done(False, log=f"source rewrite for the CPU emulator failed: {exc}", ne=True)
    cache_dir = Path(cache_dir).resolve()
    lib = shim_build.ensure_runtime(cache_dir)
    pch = shim_build.ensure_pch(cache_dir, int(dtype_code))
    for name in _OUTPUTS:
        (work_dir / name).unlink(missing_ok=True)
    (work_dir / "candidate_cpu.cpp").write_text('#line 1 "candidate.cu"\n' + rewritten)
    caret = () if rewritten.count("\n") == source.count("\n") else ("-fno-diagnostics-show-caret",)
    flags = [*shim_build.CANDIDATE_FLAGS, *caret, f"-DCUCO_DTYPE={int(dtype_code)}", *pch, "-I",
             str(shim_build.SHIM_INCLUDE), "-I", str(shim_build.RUNTIME_INCLUDE)]
    script = _BUILD.format(directives=_DIRECTIVES, inspect=_inspect_command(), compile=EXIT_COMPILE, app=EXIT_APP,
                           text=EXIT_TEXT, assemble=EXIT_ASSEMBLE, inspect_code=EXIT_INSPECT)
    res = sandbox.run(["sh", "-c", script, "sh", str(find_gxx()), *flags], workdir=work_dir, limits=_limits(timeout_s),
                      view=_view(pch), collect=_OUTPUTS, stop=stop)
    findings = preprocessed_findings(_read(work_dir / "candidate.ii"), allowed_roots(pch))
    if res.timed_out:
        return done(False, findings=findings, log=f"the CPU build did not finish within {timeout_s:.0f} s")
    if res.returncode == EXIT_COMPILE or (res.returncode < 0 and not (work_dir / "candidate.s").is_file()):
        return _compile_failed(done, work_dir, res, findings)
    seen = {g.rule for g in findings} | ({"inline_asm"} if "inline_ptx" in {g.rule for g in findings} else set())
    findings += [f for f in _stage_findings(res.returncode, work_dir) if f.rule not in seen]
    if _only_ptx(findings):
        return done(False, log=NOT_EMULATABLE_ASM, ne=True)
    if res.returncode == 0:
        findings += instruction_findings(_read(work_dir / "candidate.s")) + _object_findings(work_dir, lib)
    obj = work_dir / "candidate.o"
    if findings:
        obj.unlink(missing_ok=True)  # nothing rejected can be linked by mistake
    return done(not findings, None if findings else obj, findings, _read(work_dir / "compile.log", _LOG_CHARS))


def _stage_findings(rc: int, work_dir: Path) -> list[Finding]:
    """Why the script stopped after g++ -S (nothing when it ran through)."""
    if rc == 0:
        return []
    if rc == EXIT_APP:
        return [_inline_asm(0)]
    if rc == EXIT_TEXT:
        lines = _read(work_dir / "assembly_text.txt").strip().splitlines()
        return [Finding("assembly_text", "the assembly holds text g++ never writes (a directive, `;` or text after a "
                                         f"label), e.g. `{lines[0][:120] if lines else '?'}`: asm labels, section "
                                         "names and #ident strings must not carry assembler text")]
    if rc == EXIT_ASSEMBLE or rc < 0:
        # the assembler's messages may quote what it read: only the kind of failure is kept
        log = _read(work_dir / "assembler.log", 4096)
        too_big = rc == -25 or re.search(r"signal terminated program|File size limit|File too large", log)
        return [Finding("assembler", f"the object file exceeds {OBJECT_LIMIT_BYTES >> 20} MiB" if too_big else
                        "the assembler rejected the compiler's output (its messages are withheld)")]
    return [Finding("inspection", f"nm/readelf could not read the object (exit {rc}); the candidate cannot be "
                                  "checked")]


def _compile_failed(done, work_dir: Path, res: sandbox.SandboxResult, findings: list[Finding]) -> ObjectOutcome:
    if any(f.rule == "include_outside_toolchain" for f in findings):
        return done(False, findings=findings, log="(the compiler's messages are withheld: they may quote that file)")
    log = _read(work_dir / "compile.log", _LOG_CHARS).strip()
    if res.returncode < 0:
        log = f"{log}\ng++ was killed by {res.signal_name} (limits: {_ADDRESS_SPACE_BYTES >> 30} GiB address space, " \
              f"{OBJECT_LIMIT_BYTES >> 20} MiB per file)".strip()
    asm = [f for f in findings if f.rule == "inline_asm"]
    if asm:  # inline asm is a rejection whether or not g++ could compile its constraints
        return done(False, findings=asm, log=log)
    if _only_ptx(findings):
        return done(False, log=NOT_EMULATABLE_ASM, ne=True)
    return done(False, findings=findings, log=log, ne=not findings and shim_build.is_not_emulatable(log))


def check_object(obj: Path, runtime_lib: Path, work_dir: Path) -> list[Finding]:
    """Symbol and section checks of one object file (nm/c++filt/readelf in the sandbox)."""
    work_dir = Path(work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    for name in ("nm.txt", "names.txt", "sections.txt"):
        (work_dir / name).unlink(missing_ok=True)
    # the sandbox sees its work folder, not the object's: inspect a copy
    shutil.copyfile(obj, work_dir / "inspected.o")
    res = sandbox.run(["sh", "-c", 'OBJ=$1; ' + _inspect_command(), "sh", "inspected.o"], workdir=work_dir,
                      limits=_limits(60), collect=("nm.txt", "names.txt", "sections.txt"))
    if res.returncode != 0:
        return [Finding("inspection", f"nm/readelf could not read the object ({res.output[-300:] or res.returncode})")]
    return _object_findings(work_dir, Path(runtime_lib))


def _object_findings(work_dir: Path, runtime_lib: Path) -> list[Finding]:
    symbols, findings = parse_symbols(_read(work_dir / "nm.txt"), _read(work_dir / "names.txt"))
    findings += symbol_findings(symbols, runtime_defined(str(runtime_lib.resolve())))
    return findings + section_findings(_read(work_dir / "sections.txt"))


# --------------------------------------------------------------------------- source and preprocessed text

_SPLICE = re.compile(r"\\[ \t]*\r?\n")
_SOURCE_DIRECTIVE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(line\b|\d|ident\b|sccs\b)", re.M)


def source_findings(source: str) -> list[Finding]:
    """Directives that rename where lines come from or copy text into the assembly."""
    code = scan.blank(_SPLICE.sub("", source))
    return [Finding("line_directive", f"#{m.group(1)}{'' if m.group(1).isalpha() else ' (a linemarker)'} directive: "
                                      "candidates may not rename their lines or add #ident text",
                    scan.line_of(code, m.start())) for m in _SOURCE_DIRECTIVE.finditer(code)]


_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d+)*)\s*$')
_ASM_WORD = re.compile(r"\b(asm|__asm|__asm__)\b")
_ATTRIBUTE = re.compile(r"\b__attribute(?:__)?\s*\(|\[\[")
_SYMBOL_ATTR = re.compile(r"\b(?:gnu::)?(?:__)?(section|alias|weakref|ifunc|symver)(?:__)?\s*\(")
_IDENT_PRAGMA = re.compile(r"^\s*#\s*(?:ident|sccs|pragma\s+(?:GCC\s+)?ident)\b")


@functools.lru_cache(maxsize=8)
def allowed_roots(pch: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Folders whose headers a candidate may read: the shim's, cuco's, the pch folder, the compiler's."""
    roots = [str(shim_build.SHIM_INCLUDE), str(shim_build.RUNTIME_INCLUDE), *pch[1:2]]
    res = subprocess.run([str(find_gxx()), "-xc++", "-E", "-v", "-", "-o", os.devnull], input="", text=True,
                         capture_output=True, timeout=60)
    block = res.stderr.split("search starts here:")[-1].split("End of search list.")[0]
    roots += [ln.strip() for ln in block.splitlines() if ln.startswith(" /")]
    return tuple(os.path.normpath(r) for r in roots)


def preprocessed_findings(ii: str, roots: tuple[str, ...]) -> list[Finding]:
    """Checks of ``g++ -E`` output: files read, and the candidate's own lines (markers are genuine
    because ``source_findings`` refused #line and linemarkers in the source)."""
    own: list[tuple[int, str]] = []
    findings, file, line = [], "", 0
    for text in ii.splitlines():
        m = _MARKER.match(text)
        if m:
            file, line = m.group(2), int(m.group(1))
            path = os.path.normpath(file)
            entering = m.group(3).split()[:1] == ["1"]
            if entering and not any(path == r or path.startswith(r + os.sep) for r in roots):
                findings.append(Finding("include_outside_toolchain", f'reads "{file}": candidates may include '
                                                                     "only CUDA, C and cuco headers"))
            continue
        if file == "candidate.cu":
            own.append((line, text))
        line += 1
    return findings + _own_text_findings(own)


def _own_text_findings(own: list[tuple[int, str]]) -> list[Finding]:
    text = "\n".join(t for _, t in own)
    code = scan.blank(text)
    starts = [0]
    for t in own:
        starts.append(starts[-1] + len(t[1]) + 1)

    def line_at(pos: int) -> int:
        lo, hi = 0, len(own) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if starts[mid] <= pos else (lo, mid - 1)
        return own[lo][0] if own else 0

    found: dict[tuple[str, int], Finding] = {}
    scopes, with_strings = Scopes(code), scan.blank(text, strings=False)
    for m in _ASM_WORD.finditer(code):
        n = line_at(m.start())
        if scopes.at(m.start()) or not is_ptx_statement(code, with_strings, m.start()):
            found.setdefault(("inline_asm", n), _inline_asm(n))
        else:  # an asm statement in a function: PTX for the GPU build (the guard read its text)
            found.setdefault(("inline_ptx", n), Finding("inline_ptx", NOT_EMULATABLE_ASM, n))
    for m in _ATTRIBUTE.finditer(code):
        close = scan.match_forward(code, m.end() - 1)
        for a in _SYMBOL_ATTR.finditer(code, m.end(), close if close > 0 else len(code)):
            n = line_at(a.start())
            found.setdefault(("symbol_attribute", n), Finding("symbol_attribute", (
                f"attribute {a.group(1)}(...) places or names symbols for the assembler and linker: not allowed in a "
                "candidate"), n))
    for n, t in own:
        if _IDENT_PRAGMA.match(t):
            found.setdefault(("line_directive", n), Finding("line_directive", "#ident text goes into the assembly: "
                                                                              "not allowed in a candidate", n))
    return list(found.values())


NOT_EMULATABLE_ASM = ("not emulatable: inline asm (PTX) runs only in the GPU build; the CPU emulator never "
                      "compiles asm, so this candidate can be checked only on a GPU (write it in CUDA C++ to check "
                      "it here)")


def _only_ptx(findings: Sequence[Finding]) -> bool:
    """Inline PTX statements and nothing else wrong: not emulatable, not rejected."""
    return bool(findings) and all(f.rule == "inline_ptx" for f in findings)


def _inline_asm(line: int) -> Finding:
    return Finding("inline_asm", "inline asm (or an asm label) is not allowed in the CPU build: the emulator runs "
                                 "the candidate as x86 code and asm text would bypass every check; write it in CUDA "
                                 "C++ (the same code for every build)", line)


_INSTRUCTION = re.compile(r"^\s+(syscall|sysenter|int[13o]?|rdtscp?|rdpmc)\b", re.M)


def instruction_findings(asm: str) -> list[Finding]:
    """System-call and cycle-counter instructions (compiler builtins can emit them without asm)."""
    names = sorted({m.group(1) for m in _INSTRUCTION.finditer(asm)})
    return [Finding("instruction", f"x86 instruction {n} in the compiled code: system calls and cycle counters are "
                                   "not allowed") for n in names]
