"""What a candidate's object file may define, use and hold: its symbols (``nm``, demangled by
``c++filt``) against the published allowlist and the names the runtime and the C/C++ libraries
define, and its sections (``readelf``) against those g++ writes for ordinary code.

``candidate_object`` runs the tools in the sandbox and hands their text here; nothing in this
module runs candidate bytes.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from design_space.errors import ToolchainError
from evaluator.guard import Finding
from evaluator.toolchain import find_gxx

ALLOWLIST = Path(__file__).with_name("allowed_symbols.txt")


def tool(name: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise ToolchainError(f"{name} not found (the CPU build inspects each candidate's object with it)",
                             "install binutils: apt-get install binutils (Debian/Ubuntu)")
    return exe


@dataclass(frozen=True)
class Symbol:
    name: str  # as in the object (mangled)
    shown: str  # demangled
    kind: str  # nm's letter


_NM_LINE = re.compile(r"^([A-Za-z0-9_.$]+) ([A-Za-z?])(?: |$)")
_UNDEFINED = set("Uwv")


def parse_symbols(nm_text: str, names_text: str) -> tuple[list[Symbol], list[Finding]]:
    lines, shown = nm_text.splitlines(), names_text.splitlines()
    if len(lines) != len(shown):
        return [], [Finding("inspection", "nm and c++filt disagree on the symbol table; the object cannot be checked")]
    symbols, findings = [], []
    for raw, nice in zip(lines, shown):
        m = _NM_LINE.match(raw)
        if not m:
            findings.append(Finding("symbol_name", f"symbol {raw.split(' ')[0][:80]!r} has characters a C++ name "
                                                   "never has (an asm label?)"))
            continue
        symbols.append(Symbol(m.group(1), nice.strip(), m.group(2)))
    return symbols, findings


@dataclass(frozen=True)
class Allowlist:
    exact: frozenset[str]
    patterns: tuple[re.Pattern, ...]

    def allows(self, shown: str) -> bool:
        base = shown.split("(", 1)[0]
        return (shown in self.exact or base in self.exact
                or any(p.fullmatch(shown) or p.fullmatch(base) for p in self.patterns))


@functools.lru_cache(maxsize=4)
def load_allowlist(path: Path = ALLOWLIST) -> Allowlist:
    entries = [ln.strip() for ln in Path(path).read_text().splitlines()]
    entries = [e for e in entries if e and not e.startswith("#")]
    pats = tuple(re.compile(".*".join(map(re.escape, e.split("*")))) for e in entries if "*" in e)
    return Allowlist(frozenset(e for e in entries if "*" not in e), pats)


def _global_defined(kind: str) -> bool:
    return kind not in _UNDEFINED and (kind.isupper() or kind in "ui") and kind not in "N?"


@functools.lru_cache(maxsize=8)
def runtime_defined(lib: str) -> frozenset[str]:
    """Global names the emulator runtime library defines (trusted: built by shim_build)."""
    out = subprocess.run([tool("nm"), "-P", "--defined-only", lib], capture_output=True, text=True, timeout=60).stdout
    return frozenset(f[0] for f in (ln.split() for ln in out.splitlines()) if len(f) >= 2 and _global_defined(f[1]))


@functools.lru_cache(maxsize=1)
def system_defined() -> frozenset[str]:
    """Names the C and C++ runtime libraries export (libc, libm, libstdc++, libgcc, the loader)."""
    gxx = str(find_gxx())
    names: set[str] = set()
    for lib in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2", "libgcc.a"):
        flag = "-print-libgcc-file-name" if lib == "libgcc.a" else f"-print-file-name={lib}"
        path = subprocess.run([gxx, flag], capture_output=True, text=True, timeout=60).stdout.strip()
        if not os.path.isabs(path) or not os.path.isfile(path):
            continue
        dyn = [] if lib.endswith(".a") else ["-D"]
        out = subprocess.run([tool("nm"), *dyn, "-P", "--defined-only", path], capture_output=True, text=True,
                             timeout=60).stdout
        names.update(f[0].split("@")[0] for f in (ln.split() for ln in out.splitlines())
                     if len(f) >= 2 and f[1] != "A" and _global_defined(f[1]))
    return frozenset(names)


_RESERVED = frozenset({"main", "_start", "_init", "_fini"})
# what g++ itself defines alongside exception tables (a weak hidden pointer to the personality routine)
_COMPILER_DEFINED = frozenset({"DW.ref.__gxx_personality_v0"})
_INTERNAL = ("cuco_emu", "__cuco", "cuco_internal", "cuco_gpu_")
_MANGLED_HEAD = re.compile(r"^_Z(?:T[VITSH]|GV|Z|L)*N?[rVKRO]*(\d+)")


def _internal(name: str) -> bool:
    m = _MANGLED_HEAD.match(name)
    first = name[m.end():m.end() + int(m.group(1))] if m else name
    return first.startswith(_INTERNAL)


def symbol_findings(symbols: list[Symbol], runtime: frozenset[str]) -> list[Finding]:
    allow, system = load_allowlist(), system_defined()
    out = []
    for s in symbols:
        if s.kind in _UNDEFINED:
            if not allow.allows(s.shown):
                out.append(Finding("undefined_symbol", f"uses {s.shown}: not on the CPU build's allowlist "
                                                       "(evaluator/allowed_symbols.txt)"))
            continue
        if not _global_defined(s.kind) or s.name in _COMPILER_DEFINED:
            continue
        why = None
        if s.kind == "i":
            why = "an indirect function (its resolver would run before the harness)"
        elif s.name in _RESERVED or (not s.name.startswith("_Z") and re.match(r"__|_[A-Z]", s.name)):
            why = "a name reserved for the C/C++ runtime and the linker"
        elif _internal(s.name):
            why = "a cuco-internal name"
        elif s.name in runtime:
            why = "a name the emulator runtime defines (the candidate's definition would replace its code)"
        elif s.name in system:
            why = f"a name the C/C++ runtime provides ({'weak ' if s.kind in 'VW' else ''}override of the library)"
        if why:
            out.append(Finding("defined_symbol", f"defines {s.shown}: {why}"))
    return out


# --------------------------------------------------------------------------- sections

_CTOR_SECTION = re.compile(r"^\.(?:(?:init_array|fini_array|preinit_array|ctors|dtors)(?:\..*)?|init|fini)$")
_TLS_SECTION = re.compile(r"^\.(?:tdata|tbss)(?:\..*)?$")
_NORMAL_SECTION = re.compile(r"^(?:|\.text|\.data|\.bss|\.rodata|\.comment|\.note\.GNU-stack|\.note\.gnu\.property|"
                             r"\.eh_frame|\.gcc_except_table|\.group|\.symtab|\.symtab_shndx|\.strtab|\.shstrtab)$|"
                             r"^\.(?:text|data|bss|rodata|gcc_except_table)\.[A-Za-z0-9_.$]+$")
_SECTION_TYPES = {"NULL", "PROGBITS", "NOBITS", "RELA", "REL", "SYMTAB", "STRTAB", "GROUP",
                  "NOTE", "X86_64_UNWIND"}
_SECTION_LINE = re.compile(r"^\s*\[\s*(\d+)\]\s(.*)$")


def section_findings(readelf_text: str) -> list[Finding]:
    out, seen = [], 0
    for line in readelf_text.splitlines():
        m = _SECTION_LINE.match(line)
        if not m or m.group(2).strip().startswith("Name"):
            continue
        seen += 1
        tokens = m.group(2).split()
        name, kind = ("", tokens[0]) if m.group(1) == "0" else (tokens[0], tokens[1] if len(tokens) > 1 else "?")
        flags = tokens[6] if len(tokens) == 10 else ""
        plain = re.sub(r"^\.rela?(?=\.)", "", name)
        if _CTOR_SECTION.match(plain):
            why = "constructors and destructors run outside cuco_run (make globals constant or set them in cuco_run)"
        elif _TLS_SECTION.match(plain):
            why = "thread-local storage is not allowed"
        elif kind not in _SECTION_TYPES or not _NORMAL_SECTION.match(plain) or len(tokens) not in (8, 9, 10):
            why = "not a section g++ writes for ordinary code"
        elif "W" in flags and "X" in flags:
            why = "writable and executable"
        else:
            continue
        out.append(Finding("section", f"section {name!r} ({kind}): {why}"))
    if not seen:
        out.append(Finding("inspection", "readelf listed no sections; the object cannot be checked"))
    return out
