"""Run one untrusted stage (nvcc, g++, the emulator...) with bounded resources, seeing only what it needs.

Every run gets: its own session and process group, a wall-clock timeout that kills the whole group,
rlimits (CPU time, address space, file size, open files), a fresh working directory as cwd and HOME,
a whitelisted environment (no API keys, no cloud credentials), and output capture that keeps only the
head and tail of each stream (a stage printing gigabytes costs the evaluator nothing). Where the OS
allows (see jail.py, jail_init.py) it also gets: a private network namespace with loopback only, a pid
namespace (nothing outlives the run), pids and memory cgroups (tasks, and bytes including its tmpfs
pages), a read-only filesystem but for the workdir and `writable`, private size-limited /tmp and
/dev/shm, no capabilities; on request a size-limited tmpfs workdir from which only `collect`
files come back, and a `view`: a root holding only the system folders and the listed paths.
Each result records what it actually had (`Isolation`), never more.
"""

from __future__ import annotations

import fcntl
import os
import re
import selectors
import shutil
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from design_space.errors import InfrastructureError
from evaluator import jail
from evaluator.jail import Isolation

__all__ = ["Isolation", "Limits", "SandboxResult", "run", "scrubbed_env", "system_view", "toolchain_view"]

# Only these variables reach a stage; everything else (API keys, AWS_*, tokens) is dropped.
_ENV_WHITELIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")
_GRACE_S = 2.0  # how long output may still drain once the stage is dead or killed
_F_SETPIPE_SZ = 1031


@dataclass(frozen=True)
class Limits:
    wall_s: float = 60.0
    cpu_s: Optional[int] = None
    address_space_bytes: Optional[int] = None
    file_size_bytes: Optional[int] = 256 << 20
    open_files: Optional[int] = 1024
    processes: Optional[int] = 256  # tasks at once, threads included (nvcc, emulator ranks, NCCL threads)
    memory_bytes: Optional[int] = 2 << 30  # the whole stage, tmpfs pages included (memory cgroup)
    output_bytes: int = 64 << 10  # kept from the head and from the tail of stdout and of stderr
    work_bytes: Optional[int] = None  # the workdir becomes a tmpfs of this size; None: the real folder
    work_inodes: int = 10_000  # files + folders in each tmpfs (workdir, /tmp, /dev/shm)
    collect_bytes: int = 256 << 20  # the largest `collect` file copied back from a tmpfs workdir
    tmp_bytes: int = 64 << 20  # the private /tmp
    shm_bytes: int = 64 << 20  # the private /dev/shm


@dataclass(frozen=True)
class SandboxResult:
    argv: tuple[str, ...]
    returncode: int  # negative: killed by that signal (as subprocess reports it)
    timed_out: bool
    wall_s: float
    stdout: str
    stderr: str
    isolation: Isolation = Isolation()
    extra: dict = field(default_factory=dict)
    dropped_bytes: int = 0  # output left out between head and tail (both streams)
    collected: tuple[str, ...] = ()  # `collect` paths now in the workdir as the stage's regular files
    not_collected: dict = field(default_factory=dict)  # `collect` path -> why it is not there
    notes: tuple[str, ...] = ()  # isolation steps that failed (best effort: the stage ran anyway)

    @property
    def network_isolated(self) -> bool:
        return self.isolation.network

    @property
    def signal_name(self) -> Optional[str]:
        if self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    @property
    def output(self) -> str:
        return (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()


def scrubbed_env(workdir: Path, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_WHITELIST if k in os.environ}
    env.update({"HOME": str(workdir), "TMPDIR": str(workdir), "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra or {})
    return env


def system_view() -> tuple[Path, ...]:
    """What every view holds anyway: /usr, /bin, /lib... (links as on the host) and a minimal /etc."""
    return jail.system_paths()


def toolchain_view(tool: Path, extra: Sequence[Path] = ()) -> tuple[Path, ...]:
    """The paths a compiler needs in a view besides the system ones: the tool as named, and the install
    root of its real binary (nvcc finds its headers, nvvm and libraries relative to its real folder,
    behind symlinks and wrapper scripts; pip wheels split the toolkit across site-packages/nvidia/*)."""
    real = _real_program(Path(tool))
    root = real.parent.parent if real.parent.name == "bin" else real.parent
    for parent in root.parents:
        if parent.name == "nvidia" and parent.parent.name == "site-packages":
            root = parent
            break
    return tuple(dict.fromkeys([Path(tool).absolute(), real, root, *map(Path, extra)]))


def _real_program(tool: Path, depth: int = 3) -> Path:
    real = Path(os.path.realpath(tool))
    try:
        head = real.read_bytes()[:4096] if real.stat().st_size <= 4096 else b""
    except OSError:
        return real
    if depth and head.startswith(b"#!"):  # a wrapper script: follow the absolute path it runs
        for m in re.findall(rb"(/[^\s\"';|&]+)", head[head.find(b"\n"):]):
            cand = Path(m.decode(errors="replace"))
            if cand.name == tool.name and os.access(cand, os.X_OK) and cand.is_file():
                return _real_program(cand, depth - 1)
    return real


def run(
    argv: Sequence[str],
    *,
    workdir: Path,
    limits: Limits = Limits(),
    env: Optional[Mapping[str, str]] = None,
    isolate_network: bool = True,
    writable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    pass_fds: Sequence[int] = (),
    collect: Sequence[str] = (),
    view: Optional[Sequence[Path]] = None,
    stop: Optional[threading.Event] = None,
) -> SandboxResult:
    """Run ``argv`` in the sandbox; never raises for anything the command does.

    Where a mount namespace is available:
    - only ``workdir`` and the existing ``writable`` paths are writable, and /tmp and /dev/shm are
      private; the existing ``hidden`` paths (e.g. the reference's outputs) read as empty;
    - without a ``view`` the host's tree is visible read-only, except the host's /tmp: paths under it
      are seen only if ``readable``, or named as absolute paths in ``argv`` (also -I/x, --opt=/x),
      or the program itself, or a folder holding a ``hidden`` file (its other files are inputs);
    - with a ``view`` the root holds only ``system_view()``, ``view`` and ``readable`` (read-only),
      the workdir, ``writable``, /dev, /proc, /tmp and /dev/shm: list the program and its inputs.
    ``pass_fds`` stay open in the stage; no other fd does. ``collect``: workdir-relative paths that
    must be regular files (no symlink followed) of at most ``limits.collect_bytes`` after the run;
    others are removed and named in ``not_collected``. With ``limits.work_bytes`` the workdir is a
    tmpfs seeded with the folder's files, and only the ``collect`` paths reach the disk. Setting ``stop``
    ends the stage as its deadline would (the result reads as timed out): for a caller that no longer
    needs it."""
    workdir.mkdir(parents=True, exist_ok=True)
    collect = [_relative(c) for c in collect]
    stage_env = scrubbed_env(workdir, env)
    # the jail's init execs the stage, so check here what Popen used to: a missing tool is ours to fix
    if not shutil.which(argv[0], path=stage_env.get("PATH")) and not os.access(workdir / argv[0], os.X_OK):
        raise InfrastructureError(f"cannot start {argv[0]}: not found or not executable",
                                  "check the tool is installed and executable")
    hidden = [Path(p).resolve() for p in hidden]
    status_r, status_w = os.pipe()
    plan = jail.plan(limits, workdir=workdir.resolve(), writable=[Path(p).resolve() for p in writable],
                     isolate_network=isolate_network, status_fd=status_w, hidden=hidden,
                     readable=[*map(str, readable), *(jail.implied_reads(argv, hidden) if view is None else ())],
                     view=None if view is None else [Path(p) for p in view], collect=collect,
                     pass_fds=list(pass_fds))
    start = time.monotonic()
    proc = _spawn(plan, argv, workdir, stage_env, (status_r, status_w), pass_fds)
    with _LIVE_LOCK:
        _LIVE.add(proc.pid)
    try:
        streams, timed_out, lost = _capture(proc, plan, start + limits.wall_s, limits.output_bytes, stop)
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc.pid)
    _kill_group(proc.pid)  # stragglers the stage left behind
    report, status, got = jail.read_report(status_r)
    isolation = plan.finish(report)  # kills what is left in the cgroups and removes them
    out, err = (s.text() for s in streams)
    if lost:
        err += "\n(output cut: a process that escaped the sandbox's process group still held the pipe)"
    collected, not_collected = _collected(workdir, collect, limits.collect_bytes, got, isolation, timed_out)
    return SandboxResult(
        argv=tuple(argv), returncode=proc.returncode if status is None or timed_out else status,
        timed_out=timed_out, wall_s=time.monotonic() - start, stdout=out, stderr=err, isolation=isolation,
        dropped_bytes=sum(s.dropped for s in streams), collected=collected, not_collected=not_collected,
        notes=(*((report or {}).get("errors") or ()), *_shortfalls(limits, view, isolation)),
    )


# The process groups of the stages running now (a stage is its own session and group).
_LIVE: set[int] = set()
_LIVE_LOCK = threading.Lock()


def stop_all() -> int:
    """Kill every stage running now in this process (an interrupted run that will not wait for
    them); each stage's ``run`` then returns as killed. Returns how many were running."""
    with _LIVE_LOCK:
        groups = list(_LIVE)
    for pgid in groups:
        _kill_group(pgid)
    return len(groups)


def _spawn(plan: jail.Plan, argv: Sequence[str], workdir: Path, env: Mapping[str, str], status: tuple[int, int],
           pass_fds: Sequence[int]) -> subprocess.Popen:
    try:
        return subprocess.Popen(
            [*plan.command, *argv], cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, pass_fds=(status[1], *pass_fds),
        )
    except OSError as e:
        os.close(status[0])
        plan.finish(None)
        raise InfrastructureError(f"cannot start {argv[0]}: {e}", "check the tool is installed and executable") from e
    finally:
        os.close(status[1])


def _shortfalls(limits: Limits, view: Optional[Sequence[Path]], isolation: Isolation) -> list[str]:
    """What was asked for and not had (the describe() flags say it too, tersely)."""
    out = []
    if view is not None and not isolation.fs_view:
        out.append("no filesystem view: the stage saw the host's tree (see fs= in the isolation record)")
    if limits.work_bytes and not isolation.work_limit:
        out.append("no tmpfs workdir: the stage wrote to the real folder, unbounded but for the file-size rlimit")
    if limits.memory_bytes and not isolation.memory_limit:
        out.append("no memory cgroup: only the per-process address-space rlimit bounds memory")
    return out


class _Tail:
    """The first and the last ``limit`` bytes of one stream, and how many fell in between."""

    def __init__(self, limit: int):
        self.limit, self.head, self.tail, self.dropped = limit, bytearray(), bytearray(), 0

    def add(self, data: bytes) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            excess = len(self.tail) - self.limit
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def text(self) -> str:
        marker = f"\n[... {self.dropped} bytes of output dropped ...]\n" if self.dropped else ""
        return self.head.decode(errors="replace") + marker + self.tail.decode(errors="replace")


def _capture(proc: subprocess.Popen, plan: jail.Plan, deadline: float, limit: int,
             stop: Optional[threading.Event] = None) -> tuple[list, bool, bool]:
    """Read both pipes as they fill, keeping head and tail only; (streams, timed out, output lost).
    Once the stage is dead or killed, whatever still holds a pipe (escaped the group) gets a short grace."""
    tails = {p.fileno(): _Tail(limit) for p in (proc.stdout, proc.stderr)}
    sel = selectors.DefaultSelector()
    for fd in tails:
        try:
            fcntl.fcntl(fd, _F_SETPIPE_SZ, 1 << 20)  # fewer wake-ups for a chatty stage
        except OSError:
            pass
        sel.register(fd, selectors.EVENT_READ)
    timed_out, ended_at, lost = False, None, False
    try:
        while sel.get_map() and not lost:
            now = time.monotonic()
            if stop is not None and stop.is_set():
                deadline = min(deadline, now)
            if ended_at is None and (now >= deadline or proc.poll() is not None):
                timed_out = proc.poll() is None
                _end(proc, plan)
                ended_at = now
            lost = ended_at is not None and now >= ended_at + _GRACE_S
            wait = (ended_at + _GRACE_S if ended_at is not None else deadline) - now
            for key, _ in sel.select(min(max(wait, 0.0), 0.25)):
                data = os.read(key.fd, 1 << 20)
                if data:
                    tails[key.fd].add(data)
                else:
                    sel.unregister(key.fd)
        while ended_at is None and proc.poll() is None:  # the stage closed its output but may still run
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                timed_out = True
                break
            try:
                proc.wait(timeout=min(max(deadline - time.monotonic(), 0.0), 0.25))
            except subprocess.TimeoutExpired:
                pass
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        if proc.poll() is None:
            _end(proc, plan)
        proc.wait()
    return list(tails.values()), timed_out, lost


def _end(proc: subprocess.Popen, plan: jail.Plan) -> None:
    _kill_group(proc.pid)
    plan.kill_all()  # what left the group (setsid) but not the cgroup


def _relative(path: str) -> str:
    p = os.path.normpath(str(path))
    if os.path.isabs(p) or p == "." or p.startswith(".."):
        raise InfrastructureError(f"cannot collect {path!r}: not a path inside the workdir",
                                  "name collected files relative to the workdir, without '..'")
    return p


def _collected(workdir: Path, collect: Sequence[str], max_bytes: int, got: Optional[dict], isolation: Isolation,
               timed_out: bool) -> tuple[tuple[str, ...], dict]:
    """Which `collect` files are there. A tmpfs workdir's init copied them back (its report says which);
    otherwise the stage wrote into the real folder, so check each here and remove what must not be read."""
    if not collect:
        return (), {}
    if isolation.work_limit:
        if got is None:
            why = "the stage timed out" if timed_out else "the jail ended before copying files back"
            return (), {c: why for c in collect}
        return tuple(got.get("collected", ())), dict(got.get("refused", {}))
    collected, refused = [], {}
    for rel in collect:
        why = _check_on_disk(workdir, rel, max_bytes)
        if why is None:
            collected.append(rel)
        else:
            refused[rel] = why
    return tuple(collected), refused


def _check_on_disk(workdir: Path, rel: str, max_bytes: int) -> Optional[str]:
    """None when ``rel`` is a regular file reached without any symlink; else it is removed and why says so."""
    parts = rel.split("/")
    fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                return "missing"
            os.close(fd)
            fd = nxt
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return "missing"
        why = ("not a regular file" if not stat.S_ISREG(st.st_mode) else
               f"too large ({st.st_size} bytes > {max_bytes})" if st.st_size > max_bytes else None)
        if why:
            try:
                os.unlink(parts[-1], dir_fd=fd)
            except OSError:
                pass
        return why
    finally:
        os.close(fd)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
