"""Host side of the sandbox's isolation: what this machine allows (probed once), the per-run pids
cgroup, the command line that enters the namespaces, and the record of what a run actually got.

The namespaces come from util-linux `unshare` (`-r` adds a user namespace where we are not root);
inside them `jail_init.py` does the rest and reports back. Nothing here ever fails a stage: whatever
is unavailable is left out and the `Isolation` record says so.
"""

from __future__ import annotations

import functools
import itertools
import json
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


@dataclass(frozen=True)
class Isolation:
    """What one sandboxed run actually had (not what was asked for)."""

    network: bool = False  # private network namespace (loopback only)
    pid_namespace: bool = False  # the stage cannot outlive the run, even after setsid()
    readonly_fs: bool = False  # every mount read-only but the workdir and `writable`
    private_tmp: bool = False  # private /dev/shm, and /tmp private or read-only (TMPDIR is the workdir)
    process_limit: Optional[int] = None  # tasks (threads count) the stage may hold at once
    process_limit_how: Optional[str] = None  # "cgroup" | "rlimit" | None
    no_capabilities: bool = False  # the stage holds no capabilities (cannot remount or escape the cgroup)

    def describe(self) -> str:
        parts = ["net=private" if self.network else "net=host",
                 "pid=ns" if self.pid_namespace else "pid=host",
                 "fs=ro" if self.readonly_fs else "fs=rw",
                 "tmp=private" if self.private_tmp else "tmp=host",
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
    # as root the plain namespaces work; elsewhere a user namespace is what makes them possible
    user_flags = ([],) if os.geteuid() == 0 else (["--map-root-user"],)
    for user in user_flags:
        full = [exe, *user, *_NAMESPACES, "--"]
        if _works(full):
            return Modes(prefix=tuple(full), user_namespace=bool(user))
    for user in user_flags:
        net = [exe, *user, "--net", "--"]
        if _works(net):
            return Modes(net_only=tuple(net), user_namespace=bool(user))
    return Modes()


def _own_cgroup(controller: str) -> Optional[str]:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(",") or (controller == "" and ctrls == ""):
            return path
    return None


def _cgroup_mounts() -> tuple[Optional[Path], Optional[Path]]:
    v1 = v2 = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        fstype, _, super_opts = right.split(" ")[:3]
        point = Path(left.split(" ")[4])
        if fstype == "cgroup" and "pids" in super_opts.split(","):
            v1 = v1 or point
        elif fstype == "cgroup2":
            v2 = v2 or point
    return v1, v2


@functools.lru_cache(maxsize=1)
def pids_cgroup_parent() -> Optional[Path]:
    """A writable cgroup whose children get a pids controller (v1 or v2), or None."""
    try:
        v1, v2 = _cgroup_mounts()
        candidates = []
        if v1 and _own_cgroup("pids") is not None:
            candidates.append(v1 / _own_cgroup("pids").lstrip("/") / "cuco-sandbox")
        if v2 and _own_cgroup("") is not None:
            candidates.append(v2 / _own_cgroup("").lstrip("/") / "cuco-sandbox")
        for parent in candidates:
            try:
                parent.mkdir(exist_ok=True)
                if (parent / "cgroup.subtree_control").exists():  # v2: controllers are enabled top-down
                    if not (parent / "pids.max").exists():
                        (parent.parent / "cgroup.subtree_control").write_text("+pids")
                    (parent / "cgroup.subtree_control").write_text("+pids")
                _prune(parent)
                return parent
            except OSError:
                continue
    except (OSError, ValueError):
        pass
    return None


def _prune(parent: Path) -> None:
    # leftovers of runs that died with their host process; a populated one refuses rmdir, as it should
    for child in parent.iterdir():
        if child.is_dir():
            try:
                child.rmdir()
            except OSError:
                pass


class PidsCgroup:
    """One run's cgroup: created with its pids.max, every task in it killed and the cgroup removed at end."""

    def __init__(self, parent: Path, max_tasks: int):
        self.path = parent / f"run-{os.getpid()}-{next(_counter)}-{time.monotonic_ns() % 10**9}"
        self.path.mkdir()
        try:
            (self.path / "pids.max").write_text(str(max_tasks))
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


@dataclass
class Plan:
    """How one run enters its jail; `finish` turns the init's report into the Isolation record."""

    command: list[str]
    spec: dict
    cgroup: Optional[PidsCgroup]
    network: bool
    rlimit_processes: Optional[int]

    def finish(self, report: Optional[dict]) -> Isolation:
        if self.cgroup:
            self.cgroup.remove()
        r = report or {}
        how, limit = None, None
        if self.cgroup and r.get("cgroup"):
            how, limit = "cgroup", self.spec["processes"]
        elif self.rlimit_processes:
            how, limit = "rlimit", self.rlimit_processes
        return Isolation(network=self.network, pid_namespace=bool(r.get("pid_namespace")),
                         readonly_fs=bool(r.get("readonly_fs")), private_tmp=bool(r.get("private_tmp")),
                         process_limit=limit, process_limit_how=how, no_capabilities=bool(r.get("caps_dropped")))


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


def plan(limits, *, workdir: Path, writable: Sequence[Path], isolate_network: bool, status_fd: int,
         hidden: Sequence[Path] = ()) -> Plan:
    m = modes()
    prefix: list[str] = list(m.prefix)
    if prefix and not isolate_network:
        prefix.remove("--net")
    elif not prefix and isolate_network:
        prefix = list(m.net_only)
    full = bool(m.prefix)
    network = isolate_network and bool(prefix)
    cgroup = None
    if limits.processes and pids_cgroup_parent() is not None:
        try:  # +1: the init itself lives in the cgroup too
            cgroup = PidsCgroup(pids_cgroup_parent(), limits.processes + 1)
        except OSError:
            cgroup = None
    rlimits = _rlimits(limits)
    # RLIMIT_NPROC counts per user and does not bind root outside a user namespace
    rlimit_procs = None
    if limits.processes and not cgroup and (os.geteuid() != 0 or m.user_namespace):
        rlimits["nproc"] = rlimit_procs = int(limits.processes)
    spec = {"status_fd": status_fd, "workdir": str(workdir), "writable": [str(p) for p in writable],
            "cgroup": str(cgroup.path) if cgroup else None, "network": network, "pid_namespace": full,
            "mount_namespace": full, "rlimits": rlimits, "drop_caps": True, "processes": limits.processes,
            "mask": [*_mask_paths([workdir, *writable]), *(str(p) for p in hidden if p.exists())] if full else []}
    command = [*prefix, sys.executable, "-I", "-S", str(INIT_SCRIPT), json.dumps(spec), "--"]
    return Plan(command, spec, cgroup, network, rlimit_procs)


def read_report(fd: int) -> tuple[Optional[dict], Optional[int]]:
    """The init's first line (what it achieved) and its last (the stage's status as subprocess reports it)."""
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
    report = returncode = None
    if lines:
        try:
            report = json.loads(lines[0])
        except ValueError:
            report = None
        kind, _, value = lines[-1].partition(" ")
        if kind in ("exit", "signal") and value.isdigit():
            returncode = int(value) if kind == "exit" else -int(value)
    return report, returncode
