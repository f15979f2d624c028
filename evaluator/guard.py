"""Guard stage: static checks, each finding with a written reason. Cheapest stage, run first.

Checks: evolve-block markers and frozen regions against the parent, the host entry point,
banned calls (processes, files, network, environment, dynamic loading, device reset, timer
reads used to fake timing), allowed includes, and that the declared design point matches the
code.

Banned names are looked for in the source as written and again after the candidate's own macros
are expanded (``g++ -E`` with its includes removed: token pasting cannot hide a name), used as
calls, types, scopes or values (a function-pointer alias), named in inline-asm labels or alias
attributes, and system-call or cycle-counter instructions in inline asm. The static scan is one
layer: the sandbox (no network, scrubbed environment, read-only filesystem) holds when it misses.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Optional

from design_space.candidate import EVOLVE_END, EVOLVE_START
from design_space.evolve_blocks import HOST_ENTRY, evolve_regions, frozen_text  # noqa: F401  (the guard's API)
from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.point import DesignPoint
from design_space import cuda_scan as scan


@dataclass(frozen=True)
class Finding:
    rule: str
    reason: str
    line: int = 0

    def __str__(self) -> str:
        return f"[{self.rule}]{f' line {self.line}' if self.line else ''}: {self.reason}"


_BANNED: dict[str, tuple[str, ...]] = {
    "process control": ("system", "popen", "fork", "vfork", "execl", "execlp", "execle", "execv", "execvp", "execve",
                        "posix_spawn", "kill", "raise", "abort", "exit", "_exit", "pthread_create", "syscall",
                        "clone", "clone3", "daemon", "setsid", "setpgid", "prctl", "ptrace", "unshare", "setns",
                        "__libc_system", "__libc_fork"),
    "file access": ("fopen", "freopen", "open", "openat", "creat", "remove", "unlink", "rename", "mkdir", "rmdir",
                    "ofstream", "ifstream", "fstream", "chmod", "truncate", "fdopen", "opendir", "readlink", "symlink",
                    "link", "chroot", "mount"),
    "network access": ("socket", "connect", "bind", "listen", "accept", "getaddrinfo", "gethostbyname", "sendto",
                       "recvfrom", "sendmsg", "recvmsg", "inet_addr", "inet_pton"),
    "environment access": ("getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "environ", "__environ",
                           "_environ"),
    "dynamic loading": ("dlopen", "dlsym", "dlmopen", "cuModuleLoad", "cuModuleLoadData", "cuLibraryLoadData"),
    "device reset or global device state": ("cudaDeviceReset", "cudaSetDevice", "cudaDeviceSetLimit",
                                            "cudaProfilerStart", "cudaProfilerStop"),
    "timer reads (the harness owns timing)": ("clock", "clock64", "clock_gettime", "gettimeofday", "time",
                                              "cudaEventElapsedTime", "rdtsc", "__rdtsc", "_rdtsc",
                                              "__rdtscp", "__builtin_ia32_rdtsc", "__builtin_ia32_rdtscp",
                                              "__builtin_readcyclecounter", "__globaltimer", "steady_clock",
                                              "system_clock", "high_resolution_clock"),
    "memory mapping": ("mmap", "munmap", "mprotect", "shm_open"),
}
_ALLOWED_INCLUDES = {"cuco_comm.h", "cuco_ctx.h", "cuco_types.h", "cuda_runtime.h", "cuda.h", "cuda_fp16.h",
                     "cuda_bf16.h", "stdint.h", "cstdint", "stddef.h", "cstddef", "math.h", "cmath", "float.h",
                     "cfloat", "limits.h", "climits", "cuda/atomic", "mma.h", "cooperative_groups.h"}
_ENTRY = HOST_ENTRY


def _markers(src: str, parent: Optional[str]) -> list[Finding]:
    spans, err = evolve_regions(src)
    if err:
        return [Finding("evolve_markers", err)]
    if not spans:
        return [Finding("evolve_markers", f"no {EVOLVE_START}/{EVOLVE_END} block: mutation would have nothing to change")]
    if parent is not None and frozen_text(parent) is not None and frozen_text(src) != frozen_text(parent):
        return [Finding("frozen_region_changed", "code outside the evolve blocks differs from the parent's; "
                         "only evolve-block contents may change")]
    return []


_CATEGORY = {name: category for category, names in _BANNED.items() for name in names}
# One pass over the code: a banned name after an optional `&` / `::`, and what follows it.
_BANNED_RE = re.compile(r"(?<![\w.])(?<!->)(&\s*|::\s*)?(" + "|".join(sorted(map(re.escape, _CATEGORY), key=len,
                                                                              reverse=True)) + r")\b(\s*\(|\s+\w|\s*::)?")
# Ordinary words: only a call, an address (&name), a global-scope name (::name) or a value
# (`= name;`, a function-pointer alias) counts; any other banned name counts wherever it appears.
_CALL_ONLY = {"time", "clock", "raise", "exit", "kill", "open", "remove", "rename", "bind", "listen", "accept",
              "connect", "system", "abort", "link", "mount", "clone", "daemon", "fork"}
_TIMER_REGISTER = re.compile(r"%%?(globaltimer\w*|clock64|clock(?:_hi)?)\b")
_ASM = re.compile(r"\b(?:asm|__asm|__asm__)\b\s*(?:(?:volatile|__volatile__|goto|inline)\b\s*)*\(")
_ASM_SYSCALL = re.compile(r"\b(syscall|sysenter|int\s+\$?0x80|svc\s+#?0)\b|\b(rdtscp?|rdpmc)\b")
# An asm label on a declaration (`int f() asm("fork");`) or an alias attribute renames a call.
_ASM_LABEL = re.compile(r"(?:\)|\w\s)\s*(?:asm|__asm|__asm__)\s*\(\s*\"([^\"]*)\"\s*\)")
_ALIAS_ATTR = re.compile(r"\b(alias|weakref|ifunc|symver)\s*\(\s*\"([^\"]*)\"")


def _value_use(code: str, start: int, end: int) -> bool:
    before = code[:start].rstrip()[-1:]
    after = code[end:].lstrip()[:1]
    return before in ("=", "(", ",", "?", ":") and after in (";", ",", ")", "")


def _banned(code: str, with_strings: str, where: str = "") -> list[Finding]:
    found = []
    for m in _BANNED_RE.finditer(code):
        pre, name, use = (m.group(1) or "").strip(), m.group(2), (m.group(3) or "").strip()
        if name in _CALL_ONLY and use != "(" and not pre and not _value_use(code, m.start(2), m.end(2)):
            continue
        found.append(Finding("banned_call", f"{name}: {_CATEGORY[name]} is not allowed in a candidate{where}",
                             scan.line_of(code, m.start(2))))
    for m in _TIMER_REGISTER.finditer(with_strings):
        found.append(Finding("banned_call", f"inline asm reading %{m.group(1)}: the harness owns timing{where}",
                             scan.line_of(with_strings, m.start())))
    return found + _asm(code, with_strings, where)


def _asm(code: str, with_strings: str, where: str) -> list[Finding]:
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
        if m.group(1) in _CATEGORY or m.group(1).lstrip("_") in _CATEGORY:
            found.append(Finding("banned_call", f"asm label \"{m.group(1)}\" renames a banned call: "
                                                f"{_CATEGORY.get(m.group(1)) or _CATEGORY[m.group(1).lstrip('_')]}"
                                                f"{where}", scan.line_of(with_strings, m.start())))
    for m in _ALIAS_ATTR.finditer(with_strings):
        found.append(Finding("banned_call", f"{m.group(1)}(\"{m.group(2)}\") attribute: symbol aliasing would hide "
                                            f"what the candidate calls{where}", scan.line_of(with_strings, m.start())))
    return found


# Any file-inclusion directive, also spelled with the `%:` digraph or split by line splices.
_INCLUDE_ANY = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(include_next|include|import|embed)\b[ \t]*(.*)$", re.M)
_INCLUDE_TARGET = re.compile(r'^[<"]([^>"]+)[>"]')
_SPLICE = re.compile(r"\\[ \t]*\r?\n")
PREPROCESS_TIMEOUT_S = 10.0


def _includes(src: str) -> list[Finding]:
    code = _SPLICE.sub("", scan.blank(src, strings=False))
    out = []
    for m in _INCLUDE_ANY.finditer(code):
        target = _INCLUDE_TARGET.match(m.group(2))
        if m.group(1) == "include" and target and target.group(1) in _ALLOWED_INCLUDES:
            continue
        shown = f"#{m.group(1)} {m.group(2).strip()}"
        out.append(Finding("include_not_allowed", f"{shown}: candidates may use only CUDA and cuco headers, "
                                                  f"named literally", scan.line_of(code, m.start())))
    return out


def preprocess(source: str) -> tuple[Optional[str], str]:
    """(the candidate's own text with its macros expanded, error): ``g++ -E`` on the source with
    every inclusion directive removed, once as host code and, where the source tests
    ``__CUDA_ARCH__``, once as device code. (None, "") where no g++ is installed."""
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        return None, ""
    text = _INCLUDE_ANY.sub("", _SPLICE.sub("", source))
    passes = [["-D__CUDACC__"]] + ([["-D__CUDACC__", "-D__CUDA_ARCH__=900"]] if "__CUDA_ARCH__" in source else [])
    out = []
    with tempfile.TemporaryDirectory(prefix="cuco-guard-") as tmp:
        for defines in passes:
            try:
                res = subprocess.run([gxx, "-E", "-P", "-nostdinc", "-std=c++17", *defines, "-x", "c++", "-"],
                                     input=text, capture_output=True, text=True, cwd=tmp, env={"LC_ALL": "C"},
                                     timeout=PREPROCESS_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return None, f"g++ -E did not finish in {PREPROCESS_TIMEOUT_S:.0f} s"
            if res.returncode != 0:
                return None, next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr[:200]).strip()
            out.append(res.stdout)
    return "\n".join(out), ""


def _expanded(source: str, seen: set[str]) -> list[Finding]:
    """Banned names that only show once the candidate's macros are expanded."""
    text, err = preprocess(source)
    if err:
        return [Finding("preprocess", f"the candidate's preprocessor directives do not expand ({err}): "
                                      "fix them; the guard checks the expanded code")]
    if text is None:
        return []
    found = _banned(scan.blank(text), scan.blank(text, strings=False), " (after macro expansion)")
    return [Finding(f.rule, f.reason, 0) for f in found if f.reason.split(":")[0] not in seen]


def _uses(code: str, name: str) -> bool:
    return re.search(rf"\b{name}\b", code) is not None


# What each backend's transfers look like in code, and how each backend signals and waits.
_BACKEND_CALLS = {
    Backend.LSA: ("cuco_put_thread", "cuco_put_warp", "cuco_put_cta", "cuco_peer"),
    Backend.GIN: ("cuco_gin_put",),
    Backend.MULTIMEM: ("cuco_mm_ld_reduce", "cuco_mm_ld_reduce2", "cuco_mm_st", "cuco_mm_st2"),
    Backend.COPY_ENGINE: ("cuco_ce_put", "cuco_ce_get"),
    Backend.HOST_NCCL: ("cuco_coll_allgather", "cuco_coll_reduce_scatter", "cuco_coll_allreduce",
                        "cuco_coll_alltoall", "cuco_coll_sendrecv"),
}
_DEVICE_INITIATED = ("cuco_put_thread", "cuco_put_warp", "cuco_put_cta", "cuco_gin_put", "cuco_gin_signal",
                     "cuco_mm_st", "cuco_mm_st2", "cuco_signal_add")
_SIGNALS = ("cuco_signal_add", "cuco_gin_put", "cuco_gin_signal", "cuco_ce_signal")
_WAITS = ("cuco_wait", "cuco_gin_wait", "cuco_ce_wait")


def _point_backend(code: str, point: DesignPoint) -> list[Finding]:
    """The declared backend's transfers and the declared sync scope's signals appear in the code."""
    out = []
    uses = lambda names: any(_uses(code, n) for n in names)  # noqa: E731
    backend = point.backend
    if not uses(_BACKEND_CALLS[backend]):
        out.append(Finding("point_backend", f"declared {point.key()} but {backend.value} code never calls any of "
                                            f"{', '.join(_BACKEND_CALLS[backend])}"))
    if backend is Backend.HOST_NCCL and uses(_DEVICE_INITIATED):
        out.append(Finding("point_backend", f"declared {point.key()} but the host-driven baseline must not move data "
                                            "or signal from the device"))
    if point.sync_scope is SyncScope.GLOBAL_BARRIER:
        # a barrier, GIN's wait for every peer's puts, or the library collective's own synchronisation
        sync = {Backend.GIN: ("cuco_barrier", "cuco_gin_wait"), Backend.HOST_NCCL: _BACKEND_CALLS[Backend.HOST_NCCL]}
        names = sync.get(backend, ("cuco_barrier",))
        if not uses(names):
            out.append(Finding("point_sync_scope", f"declared {point.key()} but global_barrier code never calls "
                                                   f"{' or '.join(names)}"))
    elif not (uses(_SIGNALS) and uses(_WAITS)):
        out.append(Finding("point_sync_scope", f"declared {point.key()} but {point.sync_scope.value} code must signal "
                                               f"({' / '.join(_SIGNALS)}) and wait ({' / '.join(_WAITS)})"))
    return out


def _point(code: str, point: DesignPoint) -> list[Finding]:
    out = []

    def need(cond: bool, rule: str, reason: str) -> None:
        if not cond:
            out.append(Finding(rule, f"declared {point.key()} but {reason}"))

    launches = len(re.findall(r"<<<", code))
    side = _uses(code, "cudaStreamWaitEvent")
    if point.placement is Placement.FUSED_PERSISTENT:
        need(launches == 1, "point_placement", f"fused_persistent must launch one kernel, found {launches} launch sites")
    elif point.placement is Placement.SEQUENTIAL:
        need(not side, "point_placement", "sequential code must not fork a second stream")
    else:
        need(side, "point_placement", f"{point.placement.value} needs a second stream joined by cudaStreamWaitEvent")
    out += _point_backend(code, point)
    puts = {i for i in (Issuer.THREAD, Issuer.WARP, Issuer.CTA) if _uses(code, f"cuco_put_{i.value}")}
    if point.issuer is Issuer.COPY_ENGINE:
        need(not puts, "point_issuer", f"the copy engines issue the transfers, yet the code puts with "
                                       f"{sorted(i.value for i in puts)}")
    elif puts:
        need(point.issuer in puts, "point_issuer", f"the code puts with {sorted(i.value for i in puts)}")
    for macro, value in (("CHUNK_BYTES", point.chunk_bytes), ("COMM_CTAS", point.comm_ctas)):
        m = re.search(rf"#\s*define\s+{macro}\s+\(?(\d+)", code)
        if m and int(m.group(1)) != value:
            out.append(Finding(f"point_{macro.lower()}", f"declared {macro}={value} but the code defines {m.group(1)}"))
    return out


def check(source: str, *, point: Optional[DesignPoint] = None, parent_source: Optional[str] = None) -> list[Finding]:
    """All findings; an empty list means the candidate may go on to the build."""
    code = scan.blank(source)
    with_strings = scan.blank(source, strings=False)
    banned = _banned(code, with_strings)
    findings = _markers(source, parent_source) + _includes(source) + banned
    findings += _expanded(source, {f.reason.split(":")[0] for f in banned})
    if not _ENTRY.search(with_strings):
        findings.append(Finding("entry_point", 'missing `extern "C" int cuco_run(const cuco_ctx* ctx, '
                                "cudaStream_t stream)`"))
    if point is not None:
        findings += _point(code, point)
    return findings
