"""Host side of the sandbox's isolation: what this machine allows (probed once), the per-run pids and
memory cgroups, what the stage's filesystem holds (binds, links, masks), the command line that enters
the namespaces, and the record of what a run actually got.

The namespaces come from util-linux `unshare` (`-r` adds a user namespace where we are not root);
inside them `jail_init.py` does the rest and reports back. Nothing here ever fails a stage: whatever
is unavailable is left out and the `Isolation` record says so.
"""

from __future__ import annotations

import ast
import functools
import itertools
import marshal
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

INIT_SCRIPT = Path(__file__).with_name("jail_init.py")
_NAMESPACES = ("--net", "--pid", "--fork", "--kill-child", "--mount", "--propagation", "private")
_counter = itertools.count()


def _size(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


@dataclass(frozen=True)
class Isolation:
    """What one sandboxed run actually had (not what was asked for)."""

    network: bool = False  # private network namespace (loopback only)
    pid_namespace: bool = False  # the stage cannot outlive the run, even after setsid()
    readonly_fs: bool = False  # every mount read-only but the workdir, `writable`, /tmp and /dev/shm
    private_tmp: bool = False  # /tmp and /dev/shm are fresh size-limited tmpfs (TMPDIR is the workdir)
    process_limit: Optional[int] = None  # tasks (threads count) the stage may hold at once
    process_limit_how: Optional[str] = None  # "cgroup" | "rlimit" | None
    no_capabilities: bool = False  # the stage holds no capabilities (cannot remount or escape the cgroup)
    memory_limit: Optional[int] = None  # bytes the whole stage may hold, its tmpfs pages included
    memory_limit_how: Optional[str] = None  # "cgroup" | None (then only the per-process address-space rlimit)
    work_limit: Optional[int] = None  # the workdir is a tmpfs of this size; None: the real folder on disk
    fs_view: bool = False  # the root holds only the system folders, the view and the stage's own folders
    tmp_limit: Optional[int] = None  # size of the private /tmp
    shm_limit: Optional[int] = None  # size of the private /dev/shm

    def describe(self) -> str:
        fs = "fs=view" if self.fs_view and self.readonly_fs else "fs=ro" if self.readonly_fs else "fs=rw"
        memory = (f"memory<={_size(self.memory_limit)}({self.memory_limit_how})" if self.memory_limit
                  else "memory=rlimit-only")
        parts = ["net=private" if self.network else "net=host",
                 "pid=ns" if self.pid_namespace else "pid=host", fs,
                 f"tmp<={_size(self.tmp_limit)}(tmpfs)" if self.tmp_limit else "tmp=host",
                 f"shm<={_size(self.shm_limit)}(tmpfs)" if self.shm_limit else "shm=host",
                 f"work<={_size(self.work_limit)}(tmpfs)" if self.work_limit else "work=disk", memory,
                 f"procs<={self.process_limit}({self.process_limit_how})" if self.process_limit else "procs=unlimited",
                 "caps=none" if self.no_capabilities else "caps=kept"]
        return " ".join(parts)


@dataclass(frozen=True)
class Modes:
    """What the namespaces probe found usable on this machine."""

    prefix: tuple[str, ...] = ()  # unshare plus its flags for the full jail, or () when unavailable
    net_only: tuple[str, ...] = ()  # fallback: `unshare [-r] --net` when only that works
    user_namespace: bool = False


def _works(cmd: list[str]) -> bool:
    try:
        return subprocess.run([*cmd, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=1)
def modes() -> Modes:
    exe = shutil.which("unshare")
    if not exe:
        return Modes()
    # `unshare` dies with the thread that started it (a killed evaluator leaves no stage running:
    # its --kill-child then takes the stage's pid namespace down too)
    setpriv = shutil.which("setpriv")
    lifeline = [setpriv, "--pdeathsig", "KILL"] if setpriv and _works([setpriv, "--pdeathsig", "KILL", "--"]) else []
    # as root the plain namespaces work; elsewhere a user namespace is what makes them possible
    user_flags = ([],) if os.geteuid() == 0 else (["--map-root-user"],)
    for user in user_flags:
        full = [*lifeline, exe, *user, *_NAMESPACES, "--"]
        if _works(full):
            return Modes(prefix=tuple(full), user_namespace=bool(user))
    for user in user_flags:
        net = [*lifeline, exe, *user, "--net", "--"]
        if _works(net):
            return Modes(net_only=tuple(net), user_namespace=bool(user))
    return Modes()


def _own_cgroup(controller: str) -> Optional[str]:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(",") or (controller == "" and ctrls == ""):
            return path
    return None


def _cgroup_mounts() -> tuple[dict[str, Path], Optional[Path]]:
    v1: dict[str, Path] = {}
    v2 = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        fstype, _, super_opts = right.split(" ")[:3]
        point = Path(left.split(" ")[4])
        if fstype == "cgroup":
            for ctrl in ("pids", "memory"):
                if ctrl in super_opts.split(","):
                    v1.setdefault(ctrl, point)
        elif fstype == "cgroup2":
            v2 = v2 or point
    return v1, v2


@functools.lru_cache(maxsize=None)
def cgroup_parent(controller: str) -> Optional[Path]:
    """A writable cgroup whose children get ``controller`` ("pids" or "memory"; v1 or v2), or None."""
    try:
        v1, v2 = _cgroup_mounts()
        candidates = []
        if controller in v1 and _own_cgroup(controller) is not None:
            candidates.append(v1[controller] / _own_cgroup(controller).lstrip("/") / "cuco-sandbox")
        if v2 and _own_cgroup("") is not None:
            candidates.append(v2 / _own_cgroup("").lstrip("/") / "cuco-sandbox")
        for parent in candidates:
            try:
                parent.mkdir(exist_ok=True)
                if (parent / "cgroup.subtree_control").exists():  # v2: controllers are enabled top-down
                    if not (parent / f"{controller}.max").exists():
                        (parent.parent / "cgroup.subtree_control").write_text(f"+{controller}")
                    (parent / "cgroup.subtree_control").write_text(f"+{controller}")
                _prune(parent)
                return parent
            except OSError:
                continue
    except (OSError, ValueError):
        pass
    return None


def pids_cgroup_parent() -> Optional[Path]:
    return cgroup_parent("pids")


def memory_cgroup_parent() -> Optional[Path]:
    return cgroup_parent("memory")


def _prune(parent: Path) -> None:
    """Leftovers of runs whose host process died; a live process's runs (other threads) stay."""
    for child in parent.iterdir():
        pid = child.name.split("-")[1] if child.name.startswith("run-") else ""
        if child.is_dir() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                child.rmdir()  # a populated one refuses, as it should
            except OSError:
                pass


class RunCgroup:
    """One run's cgroup in one hierarchy: made with its limits; at the end every task in it is killed
    and the cgroup removed."""

    def __init__(self, parent: Path, settings: Sequence[tuple[str, int, bool]]):
        self.path = parent / f"run-{os.getpid()}-{next(_counter)}-{time.monotonic_ns() % 10**9}"
        self.path.mkdir()
        try:
            for name, value, required in settings:  # in order: v1 wants memsw set after the memory limit
                try:
                    (self.path / name).write_text(str(value))
                except OSError:
                    if required:
                        raise
        except OSError:
            self.path.rmdir()
            raise

    def kill_all(self) -> None:
        for _ in range(200):  # tasks forking while we kill them: loop until the cgroup is empty
            pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)

    def remove(self) -> bool:
        try:
            self.kill_all()
        except OSError:
            pass
        for _ in range(400):  # killed tasks leave the cgroup once reaped
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                time.sleep(0.005)
        return False


def _memory_settings(parent: Path, limit: int) -> list[tuple[str, int, bool]]:
    if (parent / "memory.limit_in_bytes").exists():  # v1: memsw (memory + swap) no higher, and no swapping
        return [("memory.limit_in_bytes", limit, True), ("memory.memsw.limit_in_bytes", limit, False),
                ("memory.swappiness", 0, False)]
    return [("memory.max", limit, True), ("memory.swap.max", 0, False)]


def _run_cgroups(limits) -> dict[str, RunCgroup]:
    """controller -> this run's cgroup (v2 holds both controllers in one)."""
    wanted: dict[Path, list] = {}
    for ctrl, value in (("pids", limits.processes), ("memory", limits.memory_bytes)):
        parent = cgroup_parent(ctrl) if value else None
        if parent is None:
            continue
        # pids +1: the init itself lives in the cgroup too
        settings = [("pids.max", int(value) + 1, True)] if ctrl == "pids" else _memory_settings(parent, int(value))
        ctrls, merged = wanted.setdefault(parent, ([], []))
        ctrls.append(ctrl)
        merged.extend(settings)
    out = {}
    for parent, (ctrls, settings) in wanted.items():
        try:
            cg = RunCgroup(parent, settings)
        except OSError:
            continue
        out.update({c: cg for c in ctrls})
    return out


@dataclass
class Plan:
    """How one run enters its jail; `finish` turns the init's report into the Isolation record."""

    command: list[str]
    spec: dict
    cgroups: dict[str, RunCgroup]
    network: bool
    rlimit_processes: Optional[int]

    def kill_all(self) -> None:
        """Everything in the run's cgroups, including what left the process group with setsid()."""
        for cg in {id(c): c for c in self.cgroups.values()}.values():
            try:
                cg.kill_all()
            except OSError:
                pass

    def finish(self, report: Optional[dict]) -> Isolation:
        for cg in {id(c): c for c in self.cgroups.values()}.values():
            cg.remove()
        r = report or {}
        joined = set(r.get("cgroups") or ())
        has = {ctrl: str(cg.path) in joined for ctrl, cg in self.cgroups.items()}
        how, limit = None, None
        if has.get("pids"):
            how, limit = "cgroup", self.spec["processes"]
        elif self.rlimit_processes:
            how, limit = "rlimit", self.rlimit_processes
        memory = self.spec["memory_bytes"] if has.get("memory") else None
        tmp = bool(r.get("private_tmp")) and bool(r.get("private_shm"))
        return Isolation(network=self.network, pid_namespace=bool(r.get("pid_namespace")),
                         readonly_fs=bool(r.get("readonly_fs")), private_tmp=tmp,
                         process_limit=limit, process_limit_how=how, no_capabilities=bool(r.get("caps_dropped")),
                         memory_limit=memory, memory_limit_how="cgroup" if memory else None,
                         work_limit=self.spec["work_bytes"] if r.get("work_tmpfs") else None,
                         fs_view=bool(r.get("fs_view")),
                         tmp_limit=self.spec["tmp_bytes"] if r.get("private_tmp") else None,
                         shm_limit=self.spec["shm_bytes"] if r.get("private_shm") else None)


# where a root-uid stage could read credentials it has no business with (the environment is scrubbed already)
_CREDENTIALS = (".ssh", ".aws", ".azure", ".kube", ".docker", ".gnupg", ".netrc", ".git-credentials", ".pypirc",
                ".npmrc", ".config/gcloud", ".config/gh", ".cache/huggingface/token")


def _mask_paths(keep: Sequence[Path]) -> list[str]:
    """Host unix sockets (path-named ones, which a network namespace does not hide) and credentials."""
    paths = set()
    try:
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) >= 8 and fields[7].startswith("/"):
                paths.add(fields[7])
    except OSError:
        pass
    try:
        home = Path.home()
        paths.update(str(home / c) for c in _CREDENTIALS if (home / c).exists())
    except (OSError, RuntimeError):
        pass
    kept = [str(k) for k in keep]
    # never cover a kept path or a folder holding one
    return sorted(p for p in paths if not any(k == p or k.startswith(p + "/") or p.startswith(k + "/") for k in kept))


def _rlimits(limits) -> dict:
    pairs = {"cpu": limits.cpu_s, "as": limits.address_space_bytes, "fsize": limits.file_size_bytes,
             "nofile": limits.open_files, "core": 0}
    return {k: int(v) for k, v in pairs.items() if v is not None}


# ---- what the stage's filesystem holds

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
# what the loader, compilers and locale read; nothing with secrets (no shadow, no ssh keys)
SYSTEM_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "passwd", "group", "nsswitch.conf",
              "hosts", "host.conf", "gai.conf", "localtime", "timezone", "locale.alias", "mtab", "os-release")


def system_paths() -> tuple[Path, ...]:
    """What every view holds: the folders programs run from and a minimal /etc (those that exist here)."""
    names = (*SYSTEM_DIRS, *(f"/etc/{e}" for e in SYSTEM_ETC))
    return tuple(Path(p) for p in names if os.path.lexists(p))


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _canonical(path) -> str:
    """``path`` with its folders' symlinks resolved (the last part may stay a link)."""
    p = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p)) if p != "/" else "/"


def implied_reads(argv: Sequence[str], hidden: Sequence[Path]) -> list[str]:
    """Without a view, what a stage plainly reads that the private /tmp would hide: the program, absolute
    paths in its arguments (also as -I/x or --opt=/x), and the folders holding `hidden` files (their other
    files are the stage's inputs). A view lists everything itself."""
    out = []
    program = shutil.which(argv[0]) if argv else None
    for a in [*argv, *([program] if program else [])]:
        for c in (a, a[2:] if a.startswith("-") else "", a.partition("=")[2]):
            if c.startswith("/tmp/") and os.path.exists(c):
                out.append(c)
    out += [os.path.dirname(_canonical(h)) for h in hidden]
    # a Python in a virtual environment under /tmp needs its environment (pyvenv.cfg, site-packages)
    out += [str(venv) for venv in {Path(p).parent.parent for p in out} if (venv / "pyvenv.cfg").is_file()]
    return out


def _layout(view_mode: bool, rw: Sequence[str], ro: Sequence[str]) -> tuple[list, list]:
    """(binds, links) for the init: parents before children, nothing bound twice. Without a view only
    what the private /tmp would hide needs a read-only bind (the rest of the host tree is visible)."""
    links, ro_real = [], []
    for p in ro:
        c = _canonical(p)
        if os.path.islink(c):
            links.append((c, os.readlink(c)))
            c = os.path.realpath(c)
            if any(_under(c, k) for k in ("/proc", "/dev", "/sys")):  # /etc/mtab: the stage has its own
                continue
        if os.path.exists(c) and (view_mode or _under(c, "/tmp")):
            ro_real.append(c)
    rw_set = set(rw)
    binds, shown = [], []
    for path in sorted(set(ro_real) | rw_set):
        if path not in rw_set and any(_under(path, s) for s in shown):
            continue
        binds.append([path, "rw" if path in rw_set else "ro"])
        shown.append(path)
    if not view_mode:
        return binds, []
    return binds, sorted([p, t] for p, t in set(links) if not any(_under(p, s) for s in shown))


def plan(limits, *, workdir: Path, writable: Sequence[Path], isolate_network: bool, status_fd: int,
         hidden: Sequence[Path] = (), readable: Sequence[str] = (), view: Optional[Sequence[Path]] = None,
         collect: Sequence[str] = (), pass_fds: Sequence[int] = ()) -> Plan:
    m = modes()
    prefix: list[str] = list(m.prefix)
    if prefix and not isolate_network:
        prefix.remove("--net")
    elif not prefix and isolate_network:
        prefix = list(m.net_only)
    full = bool(m.prefix)
    network = isolate_network and bool(prefix)
    cgroups = _run_cgroups(limits)
    rlimits = _rlimits(limits)
    # RLIMIT_NPROC counts per user and does not bind root outside a user namespace
    rlimit_procs = None
    if limits.processes and "pids" not in cgroups and (os.geteuid() != 0 or m.user_namespace):
        rlimits["nproc"] = rlimit_procs = int(limits.processes)
    view_mode = full and view is not None
    rw = [str(p) for p in (workdir, *writable) if p.exists()]
    ro = [*readable, *((*map(str, system_paths()), *map(str, view)) if view_mode else ())]
    binds, links = _layout(view_mode, rw, ro) if full else ([], [])
    hidden_s = [str(p) for p in hidden if p.exists()]
    spec = {"status_fd": status_fd, "workdir": str(workdir), "binds": binds, "links": links, "view": view_mode,
            "cgroups": sorted({str(c.path) for c in cgroups.values()}), "network": network,
            "pid_namespace": full, "mount_namespace": full, "rlimits": rlimits, "drop_caps": True,
            "processes": limits.processes, "memory_bytes": limits.memory_bytes,
            "mask": [*_mask_paths([workdir, *writable]), *hidden_s] if full else [], "hidden": hidden_s,
            "tmp_bytes": limits.tmp_bytes, "shm_bytes": limits.shm_bytes, "inodes": limits.work_inodes,
            "work_bytes": limits.work_bytes, "collect": list(collect), "collect_bytes": limits.collect_bytes,
            "pass_fds": list(pass_fds)}
    # marshal: the init reads it without importing json (same interpreter: the format matches)
    command = [*prefix, sys.executable, "-I", "-S", str(INIT_SCRIPT), marshal.dumps(spec).hex(), "--"]
    return Plan(command, spec, cgroups, network, rlimit_procs)


def _literal(text: str) -> Optional[dict]:
    try:
        value = ast.literal_eval(text)  # literals only: nothing in it can run
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def read_report(fd: int) -> tuple[Optional[dict], Optional[int], Optional[dict]]:
    """The init's first line (what it achieved), its collection line if any, and its last (the stage's
    status as subprocess reports it)."""
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    lines = b"".join(chunks).decode(errors="replace").splitlines()
    report = returncode = collected = None
    if lines:
        report = _literal(lines[0])
        for line in lines[1:]:
            if line.startswith("collect "):
                collected = _literal(line[len("collect "):])
        kind, _, value = lines[-1].partition(" ")
        if kind in ("exit", "signal") and value.isdigit():
            returncode = int(value) if kind == "exit" else -int(value)
    return report, returncode, collected
