"""Guard stage: static checks, each finding with a written reason. Cheapest stage, run first.

Checks: evolve-block markers and frozen code against the parent, the host entry point, banned
calls (processes, ending the process, threads, signals and non-local jumps, files and raw file
descriptors, network, environment, dynamic loading, memory mapping, device reset, timer reads
used to fake timing), cuco-internal names, allowed includes, one behaviour in every build, inline
asm that is PTX and nothing else, and that the declared design point matches the code.

Banned and internal names are looked for in the source as written and again after the
candidate's own macros are expanded (``g++ -E`` in the sandbox, includes removed: token pasting
cannot hide a name), used as calls, types, scopes or values (a function-pointer alias), named in
inline-asm labels or alias attributes, and system-call or cycle-counter instructions in inline asm.
The same preprocessing under each build's defines (CPU emulator, GPU host pass, GPU device passes)
must give the same text: a candidate that is judged in one build must run the same code in the
other. The static scan is one layer: the CPU build checks the compiled object
(candidate_object.py), and the sandbox holds when both miss.
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from design_space.candidate import EVOLVE_END, EVOLVE_START
from kernels.evolve_blocks import HOST_ENTRY, evolve_regions, frozen_code, frozen_text  # noqa: F401  (frozen_text: API)
from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.point import DesignPoint
from kernels import cuda_scan as scan
from evaluator import sandbox
from evaluator.guard_asm import Finding, asm_findings  # noqa: F401  (Finding: API)


# A trailing `*` bans every name with that prefix.
_BANNED: dict[str, tuple[str, ...]] = {
    "process control": (
        "system", "popen", "fork", "vfork", "_Fork", "clone", "clone3", "daemon", "kill", "killpg", "tgkill", "tkill",
        "raise", "sigqueue", "execl", "execlp", "execle", "execv", "execvp", "execve", "execvpe", "execveat", "fexecve",
        "posix_spawn*", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
        "waitpid", "wait3", "wait4", "waitid", "pidfd_*", "setsid", "setpgid", "setpgrp", "prctl", "ptrace",
        "unshare", "setns", "personality", "process_vm_readv", "process_vm_writev", "syscall", "setuid", "setgid",
        "seteuid", "setegid", "setresuid", "setresgid", "setgroups", "capset", "__libc_system", "__libc_fork"),
    "ending the process (the harness does)": (
        "exit", "_exit", "_Exit", "quick_exit", "at_quick_exit", "atexit", "on_exit", "abort", "__cxa_atexit",
        "__cxa_finalize", "__cxa_thread_atexit"),
    "threads": ("pthread_*", "thrd_*"),
    "signals and non-local jumps": (
        "signal", "sigaction", "sigprocmask", "sigsuspend", "sigwait", "sigwaitinfo", "sigtimedwait", "sigaltstack",
        "signalfd", "alarm", "setitimer", "timer_create", "timer_settime", "pause", "setjmp", "longjmp", "_setjmp",
        "_longjmp", "sigsetjmp", "siglongjmp", "__sigsetjmp", "__builtin_setjmp", "__builtin_longjmp"),
    "file access": (
        "fopen", "fopen64", "freopen", "freopen64", "fdopen", "fclose", "tmpfile", "tmpfile64", "tmpnam", "tmpnam_r",
        "tempnam", "mkstemp", "mkstemp64", "mkostemp", "mkostemps", "mkdtemp", "open", "open64", "openat", "openat64",
        "openat2", "creat", "creat64", "close", "close_range", "read", "write", "pread", "pread64", "pwrite",
        "pwrite64", "readv", "writev", "preadv", "preadv2", "pwritev", "pwritev2", "lseek", "lseek64", "dup", "dup2",
        "dup3", "fcntl", "fcntl64", "ioctl", "truncate", "truncate64", "ftruncate", "ftruncate64", "fallocate",
        "posix_fallocate", "remove", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat",
        "rmdir", "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "access", "faccessat",
        "faccessat2", "euidaccess", "eaccess", "stat", "stat64", "fstat", "fstat64", "lstat", "lstat64", "fstatat",
        "fstatat64", "statx", "statfs", "fstatfs", "readlink", "readlinkat", "symlink", "symlinkat", "link",
        "linkat", "chdir", "fchdir", "getcwd", "opendir", "fdopendir", "readdir", "readdir64", "scandir", "nftw",
        "ftw", "realpath", "chroot", "pivot_root", "mount", "umount", "umount2", "sendfile", "sendfile64", "splice",
        "vmsplice", "copy_file_range", "inotify_*", "fanotify_*", "name_to_handle_at", "open_by_handle_at", "mknod",
        "mknodat", "mkfifo", "mkfifoat", "utime", "utimes", "futimes", "futimens", "utimensat", "sync", "syncfs",
        "fsync", "fdatasync", "ofstream", "ifstream", "fstream", "filebuf", "stdin", "stdout", "stderr", "fprintf",
        "vfprintf", "dprintf", "fputs", "fputc", "putc", "fwrite", "fread", "fgets", "fgetc", "getc", "ungetc",
        "fscanf", "vfscanf", "scanf", "vscanf", "gets", "getline", "getdelim", "getchar", "fflush", "setvbuf",
        "setbuf", "fseek", "fseeko", "ftell", "ftello", "rewind", "fileno", "perror"),
    "network access": (
        "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "getaddrinfo", "getnameinfo",
        "gethostbyname", "gethostbyname2", "gethostbyaddr", "send", "sendto", "sendmsg", "sendmmsg", "recv",
        "recvfrom", "recvmsg", "recvmmsg", "setsockopt", "getsockopt", "getpeername", "getsockname", "shutdown",
        "inet_addr", "inet_aton", "inet_pton", "inet_ntop"),
    "environment access": (
        "getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "clearenv", "environ", "__environ", "_environ",
        "getauxval", "gethostname", "uname", "getlogin", "getlogin_r", "getpwnam", "getpwuid", "getpwnam_r",
        "getpwuid_r"),
    "dynamic loading": (
        "dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo", "dlerror", "dl_iterate_phdr",
        "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary", "cuLibraryLoadData",
        "cuLibraryLoadFromFile", "cuGetProcAddress", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion"),
    "memory mapping": (
        "mmap", "mmap64", "munmap", "mremap", "mprotect", "pkey_mprotect", "pkey_alloc", "madvise", "posix_madvise",
        "mlock", "mlock2", "mlockall", "munlock", "munlockall", "msync", "mincore", "remap_file_pages", "shm_open",
        "shm_unlink", "shmget", "shmat", "shmdt", "shmctl", "memfd_create", "memfd_secret", "brk", "sbrk"),
    "device reset or global device state": (
        "cudaDeviceReset", "cudaSetDevice", "cudaSetDeviceFlags", "cudaDeviceSetLimit", "cudaDeviceSetCacheConfig",
        "cudaDeviceSetSharedMemConfig", "cudaThreadExit", "cudaProfilerStart", "cudaProfilerStop", "cudaIpc*",
        "cuIpc*", "cuCtx*", "cuDevicePrimaryCtx*"),
    "timer reads (the harness owns timing)": (
        "clock", "clock64", "clock_gettime", "clock_getres", "gettimeofday", "time", "times", "ftime", "timespec_get",
        "getrusage", "cudaEventElapsedTime", "rdtsc", "__rdtsc", "_rdtsc", "__rdtscp", "rdpmc", "__rdpmc",
        "__builtin_ia32_rdtsc", "__builtin_ia32_rdtscp", "__builtin_ia32_rdpmc", "__builtin_readcyclecounter",
        "__globaltimer", "steady_clock", "system_clock", "high_resolution_clock"),
}
# Ordinary words: only a call, an address (&name), a global-scope name (::name) or a value
# (`= name;`, a function-pointer alias) counts; any other banned name counts wherever it appears.
_CALL_ONLY = {"time", "times", "clock", "raise", "exit", "kill", "open", "close", "read", "write", "remove", "rename",
              "bind", "listen", "accept", "connect", "send", "recv", "shutdown", "system", "abort", "link", "mount",
              "clone", "daemon", "fork", "stat", "access", "sync", "signal", "pause", "alarm", "dup", "getline"}
# Names that are only dangerous qualified (`thread` alone is an ordinary word).
_STD_ONLY = {"thread": "threads", "jthread": "threads", "async": "threads", "this_thread": "threads",
             "filesystem": "file access"}
_ALLOWED_INCLUDES = {"cuco_comm.h", "cuco_ctx.h", "cuco_types.h", "cuda_runtime.h", "cuda.h", "cuda_fp16.h",
                     "cuda_bf16.h", "stdint.h", "cstdint", "stddef.h", "cstddef", "math.h", "cmath", "float.h",
                     "cfloat", "limits.h", "climits", "cuda/atomic", "mma.h", "cooperative_groups.h"}
_ENTRY = HOST_ENTRY
# The runtime's build-selecting macros and include guards, the shim's and the harnesses' own names
# and the comm API's internals (inspected in evaluator/shim/include and evaluator/runtime). The public
# API (cuco_comm.h's documented calls, CUCO_MAX_*, CUCO_USER_SIGNALS, CUCO_GIN_*, CUCO_F32/F16/BF16,
# CUCO_DTYPE, CUCO_LAUNCH, CUCO_COLL_BARRIER, CUCO_MAX_BARRIERS) stays usable.
_INTERNAL_NAME = re.compile(
    r"\b(?:CUCO_COMM_\w+|CUCO_EMU\w*|cuco_emu\w*|_*cuco_internal\w*|__cuco\w*|cuco_gpu_\w+|CUCO_GPU_\w+"
    r"|CUCO_CHECKED_LAUNCH\w*|CUCO_LAUNCH_CHECK\w*|cuco_checked_launch\w*|cuco_launch_\w+|cuco_shared_\w+"
    r"|cuco_dynamic_smem|cuco_nccl\w*|CUCO_HAS_\w+|CUCO_\w+_H_|CUCO_EXPORT|CUCO_API|cuco_pause_on"
    r"|cuco_gin_(?:deliver\w*|queue|head|tail|op)|CUCO_GIN_(?:BASE|QUEUE)|cuco_mm_\w+_(?:ptx|peers)"
    r"|cuco_mm_address|cuco_ce_\w+_kernel|cuco_coll_(?:run|kernel|barrier_kernel|type|args|status|comm|symm|sum)"
    r"|CUCO_COLL_(?!BARRIER\b)\w+|CUCO_BAR_\w+|CUCO_SIGNAL_SLOTS|cuco_batch_\w+|cuco_sh[FST]_\w+|cuco_a)\b")


def _markers(src: str, parent: Optional[str]) -> list[Finding]:
    spans, err = evolve_regions(src)
    if err:
        return [Finding("evolve_markers", err)]
    if not spans:
        return [Finding("evolve_markers", f"no {EVOLVE_START}/{EVOLVE_END} block: mutation would have nothing to change")]
    if parent is not None and frozen_code(parent) is not None and frozen_code(src) != frozen_code(parent):
        return [Finding("frozen_region_changed", "code outside the evolve blocks differs from the parent's; "
                         "only evolve-block contents may change")]
    return []


_CATEGORY = {name.rstrip("*"): category for category, names in _BANNED.items() for name in names}
_PREFIXES = tuple(n.rstrip("*") for names in _BANNED.values() for n in names if n.endswith("*"))
_NAMES_RE = "|".join(sorted((re.escape(n) + (r"\w*" if n in _PREFIXES else "") for n in _CATEGORY),
                            key=len, reverse=True))
# One pass over the code: a banned name after an optional `&` / `::`, and what follows it.
_BANNED_RE = re.compile(r"(?<![\w.])(?<!->)(&\s*|::\s*)?(" + _NAMES_RE + r")\b(\s*\(|\s+\w|\s*::)?")
_STD_RE = re.compile(r"\bstd\s*::\s*(" + "|".join(_STD_ONLY) + r")\b")
_TIMER_REGISTER = re.compile(r"%%?(globaltimer\w*|clock64|clock(?:_hi)?)\b")


def category(name: str) -> Optional[str]:
    """The banned category of ``name`` (exact or by a banned prefix), or None."""
    return _CATEGORY.get(name) or next((_CATEGORY[p] for p in _PREFIXES if name.startswith(p)), None)


def _value_use(code: str, start: int, end: int) -> bool:
    before = code[:start].rstrip()[-1:]
    after = code[end:].lstrip()[:1]
    if before == ",":  # an argument (`f(a, send)`), not a declarator list (`size_t a, send;`)
        return after == ")"
    return before in ("=", "(", "?", ":") and after in (";", ",", ")", "")


def _banned(code: str, with_strings: str, where: str = "") -> list[Finding]:
    found = []
    for m in _BANNED_RE.finditer(code):
        pre, name, use = (m.group(1) or "").strip(), m.group(2), (m.group(3) or "").strip()
        if name in _CALL_ONLY and use != "(" and not pre and not _value_use(code, m.start(2), m.end(2)):
            continue
        found.append(Finding("banned_call", f"{name}: {category(name)} is not allowed in a candidate{where}",
                             scan.line_of(code, m.start(2))))
    for m in _STD_RE.finditer(code):
        found.append(Finding("banned_call", f"std::{m.group(1)}: {_STD_ONLY[m.group(1)]} is not allowed in a "
                                            f"candidate{where}", scan.line_of(code, m.start())))
    for m in _TIMER_REGISTER.finditer(with_strings):
        found.append(Finding("banned_call", f"inline asm reading %{m.group(1)}: the harness owns timing{where}",
                             scan.line_of(with_strings, m.start())))
    return found + asm_findings(code, with_strings, where, category) + _internal(code, where)


def _internal(code: str, where: str) -> list[Finding]:
    out: dict[str, Finding] = {}
    for m in _INTERNAL_NAME.finditer(code):
        out.setdefault(m.group(0), Finding("internal_name", (
            f"{m.group(0)}: a cuco-internal name (build selection, shim or harness); a candidate must behave the "
            f"same in every build, so it may use only the documented cuco API{where}"), scan.line_of(code, m.start())))
    return list(out.values())


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


# --------------------------------------------------------------------------- one source, one behaviour

# The defines each build compiles the candidate with (CUCO_DTYPE is the same in all of them).
BUILDS: dict[str, tuple[str, ...]] = {
    "the CPU emulator build": ("-DCUCO_COMM_CPU",),
    "the GPU host pass": ("-DCUCO_COMM_NCCL", "-D__CUDACC__", "-D__NVCC__"),
    "the GPU device pass for sm_80": ("-DCUCO_COMM_NCCL", "-D__CUDACC__", "-D__NVCC__", "-D__CUDA_ARCH__=800"),
    "the GPU device pass for sm_90": ("-DCUCO_COMM_NCCL", "-D__CUDACC__", "-D__NVCC__", "-D__CUDA_ARCH__=900"),
}
_COMMON = ("-E", "-nostdinc", "-isystem", "none", "-std=c++17", "-x", "c++", "-DCUCO_DTYPE=0",
           "-Wno-builtin-macro-redefined",
           '-D__DATE__="Jan 1 2000"', '-D__TIME__="00:00:00"', '-D__TIMESTAMP__="Sat Jan 1 00:00:00 2000"')
_CONDITIONAL = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b(.*)$", re.M)
_DEFINE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*define[ \t]+(\w+)", re.M)
_HAS_INCLUDE = re.compile(r"\b__has_include(?:_next)?\b")
# the documented constants, equal in every build
_PUBLIC_MACROS = {"CUCO_DTYPE", "CUCO_F32", "CUCO_F16", "CUCO_BF16", "CUCO_MAX_RANKS", "CUCO_MAX_DIMS",
                  "CUCO_MAX_INPUTS", "CUCO_MAX_OUTPUTS", "CUCO_MAX_BARRIERS", "CUCO_USER_SIGNALS", "CUCO_GIN_SIGNALS",
                  "CUCO_GIN_CONTEXTS", "CUCO_COLL_BARRIER", "defined", "true", "false", "and", "or", "not", "bitand",
                  "bitor", "xor", "compl", "and_eq", "or_eq", "xor_eq", "not_eq"}
_MARKER = re.compile(r'^# (\d+) "')


@functools.lru_cache(maxsize=1)
def _predefined() -> frozenset[str]:
    """Macros g++ defines by itself (the same in the host and device passes: nvcc mirrors its host compiler)."""
    gxx = shutil.which("g++") or shutil.which("c++")
    out = subprocess.run([gxx, "-dM", "-E", "-x", "c++", "-std=c++17", "-"], input="", capture_output=True,
                         text=True, timeout=30).stdout if gxx else ""
    return frozenset(ln.split()[1].split("(")[0] for ln in out.splitlines() if ln.startswith("#define "))


def _foreign_tests(source: str) -> list[Finding]:
    """Conditionals may test the candidate's own macros, cuco's public constants and g++'s own; anything
    else is defined by a build's headers or command line (CUDART_VERSION, a header's guard, a harness
    flag), so testing it could select different code in each build. __has_include likewise."""
    code = _SPLICE.sub("", scan.blank(source))
    own = set(_DEFINE.findall(code))
    fixed = {d[2:].split("=")[0] for build in BUILDS.values() for d in build}  # the builds' diff shows those
    for m in _CONDITIONAL.finditer(code):
        line = scan.line_of(code, m.start())
        if _HAS_INCLUDE.search(m.group(1)):
            return [Finding("build_dependent_code", "__has_include in a conditional: which headers exist differs "
                                                    "between the CPU emulator and CUDA; one source must run the same "
                                                    "code in every build", line)]
        tested = set(re.findall(r"[A-Za-z_]\w*", re.sub(r"\b__has_\w+\s*\([^)]*\)", " 0 ", m.group(1))))
        foreign = sorted(tested - own - fixed - _PUBLIC_MACROS - _predefined())
        if foreign:
            return [Finding("build_dependent_code", f"a conditional tests {', '.join(foreign)}, which the candidate "
                                                    "does not define: the builds define different macros, and one "
                                                    "source must run the same code in every build", line)]
    return []


def preprocess_builds(source: str) -> tuple[Optional[dict[str, list[tuple[int, str]]]], str]:
    """Per build, the candidate's own text with its macros expanded, as (source line, text) pairs:
    ``g++ -E`` in the sandbox with every inclusion directive removed. (None, "") where no g++ is
    installed; (None, error) where the directives do not expand."""
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        return None, ""
    text = _INCLUDE_ANY.sub("", _SPLICE.sub("", source))
    script = []
    for i, defines in enumerate(BUILDS.values()):
        argv = " ".join(map(shlex.quote, [gxx, *_COMMON, *defines, "candidate.cpp", "-o", f"pass{i}.ii"]))
        script.append(f"{argv} 2>pass{i}.err || exit {10 + i}")
    limits = sandbox.Limits(wall_s=PREPROCESS_TIMEOUT_S, cpu_s=int(PREPROCESS_TIMEOUT_S),
                            address_space_bytes=1 << 30, file_size_bytes=16 << 20)
    with tempfile.TemporaryDirectory(prefix="cuco-guard-") as tmp:
        work = Path(tmp)
        (work / "candidate.cpp").write_text(text)
        (work / "none").mkdir()  # an empty search path: __has_include(<x>) is false instead of an error
        res = sandbox.run(["sh", "-c", "\n".join(script)], workdir=work, limits=limits)
        if res.timed_out:
            return None, f"g++ -E did not finish in {PREPROCESS_TIMEOUT_S:.0f} s"
        if res.returncode != 0:
            err = (work / f"pass{res.returncode - 10}.err").read_text(errors="replace") \
                if 10 <= res.returncode < 10 + len(BUILDS) else res.output
            return None, next((ln for ln in err.splitlines() if "error" in ln), err[:200] or "killed").strip()
        return {name: _lines((work / f"pass{i}.ii").read_text(errors="replace"))
                for i, name in enumerate(BUILDS)}, ""


def _lines(ii: str) -> list[tuple[int, str]]:
    out, line = [], 0
    for text in ii.splitlines():
        m = _MARKER.match(text)
        if m:
            line = int(m.group(1))
            continue
        if text.strip():
            out.append((line, text.strip()))
        line += 1
    return out


def preprocess(source: str) -> tuple[Optional[str], str]:
    """(the candidate's own text with its macros expanded, in every build, error); see preprocess_builds."""
    builds, err = preprocess_builds(source)
    return (None if builds is None else "\n".join("\n".join(t for _, t in lines) for lines in builds.values())), err


def _build_dependent(source: str, builds: dict[str, list[tuple[int, str]]]) -> list[Finding]:
    foreign = _foreign_tests(source)
    if foreign:
        return foreign
    (first, base), *others = builds.items()
    for name, lines in others:
        for i in range(max(len(base), len(lines))):
            a, b = (base[i] if i < len(base) else (0, "")), (lines[i] if i < len(lines) else (0, ""))
            if a[1] != b[1]:
                line = a[0] or b[0]
                return [Finding("build_dependent_code", (
                    f"the code differs between {first} and {name} from line {line} (a test or use of "
                    f"__CUDA_ARCH__, __CUDACC__ or cuco's build macros): one source must run the same code in "
                    f"every build, or the build that is checked is not the one that runs"), line)]
    return []


def _expanded(source: str, seen: set[str]) -> list[Finding]:
    """Banned and internal names that only show once the candidate's macros are expanded, and code
    that differs between builds."""
    builds, err = preprocess_builds(source)
    if err:
        return [Finding("preprocess", f"the candidate's preprocessor directives do not expand ({err}): "
                                      "fix them; the guard checks the expanded code")]
    if builds is None:
        return []
    text = "\n".join("\n".join(t for _, t in lines) for lines in builds.values())
    found = _banned(scan.blank(text), scan.blank(text, strings=False), " (after macro expansion)")
    found = [Finding(f.rule, f.reason, 0) for f in found if f.reason.split(":")[0] not in seen]
    unique = list({f.reason: f for f in found}.values())
    return unique + _build_dependent(source, builds)


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


MAX_SOURCE_BYTES = 256 << 10  # a template render is ~20 KB; the checks must stay fast on anything


def _text_problem(source: str) -> Optional[Finding]:
    """A source the guard will not read: too large to check quickly, or not text."""
    if len(source) > MAX_SOURCE_BYTES:
        return Finding("source_size", f"the source has {len(source)} characters; candidates may have at most "
                                      f"{MAX_SOURCE_BYTES}: split nothing, write less")
    bad = re.search(r"[\ud800-\udfff\x00]", source)
    if bad:
        return Finding("source_text", f"the source holds {'a NUL' if bad.group() == chr(0) else 'an unpaired surrogate'}"
                                      f" character at offset {bad.start()}: it is not valid UTF-8 source text",
                       scan.line_of(source, bad.start()))
    return None


def check(source: str, *, point: Optional[DesignPoint] = None, parent_source: Optional[str] = None) -> list[Finding]:
    """All findings; an empty list means the candidate may go on to the build."""
    problem = _text_problem(source)
    if problem:
        return [problem]
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
