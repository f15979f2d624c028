"""Run one untrusted stage: own session and process group, wall-clock timeout that kills the
whole group, rlimits (CPU time, address space, file size, open files), a process-count limit, a fresh
working directory as cwd and HOME, a whitelisted environment (no API keys, no cloud credentials), and
where the OS allows (see jail.py): a private network namespace with loopback only, a pid namespace
(nothing outlives the run), a read-only filesystem but for the workdir and `writable`, a private
/dev/shm and /tmp, and no capabilities. Each result records what it actually had (`Isolation`)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from design_space.errors import InfrastructureError
from evaluator import jail
from evaluator.jail import Isolation

__all__ = ["Isolation", "Limits", "SandboxResult", "run", "scrubbed_env"]

# Only these variables reach a stage; everything else (API keys, AWS_*, tokens) is dropped.
_ENV_WHITELIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")


@dataclass(frozen=True)
class Limits:
    wall_s: float = 60.0
    cpu_s: Optional[int] = None
    address_space_bytes: Optional[int] = None
    file_size_bytes: Optional[int] = 256 << 20
    open_files: Optional[int] = 1024
    processes: Optional[int] = 256  # tasks at once, threads included (nvcc, emulator ranks, NCCL threads)


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


def run(
    argv: Sequence[str],
    *,
    workdir: Path,
    limits: Limits = Limits(),
    env: Optional[Mapping[str, str]] = None,
    isolate_network: bool = True,
    writable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
) -> SandboxResult:
    """Run ``argv`` in the sandbox; never raises for anything the command does.

    Only ``workdir`` and the existing ``writable`` paths stay writable where a mount namespace is available;
    the existing ``hidden`` paths (e.g. the reference's outputs) read as empty there."""
    workdir.mkdir(parents=True, exist_ok=True)
    stage_env = scrubbed_env(workdir, env)
    # the jail's init execs the stage, so check here what Popen used to: a missing tool is ours to fix
    if not shutil.which(argv[0], path=stage_env.get("PATH")) and not os.access(workdir / argv[0], os.X_OK):
        raise InfrastructureError(f"cannot start {argv[0]}: not found or not executable",
                                  "check the tool is installed and executable")
    status_r, status_w = os.pipe()
    plan = jail.plan(limits, workdir=workdir.resolve(), writable=[Path(p).resolve() for p in writable],
                     isolate_network=isolate_network, status_fd=status_w,
                     hidden=[Path(p).resolve() for p in hidden])
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [*plan.command, *argv], cwd=workdir, env=stage_env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, pass_fds=(status_w,),
        )
    except OSError as e:
        os.close(status_r)
        plan.finish(None)
        raise InfrastructureError(f"cannot start {argv[0]}: {e}", "check the tool is installed and executable") from e
    finally:
        os.close(status_w)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        if plan.cgroup:  # what left the group (setsid) but not the cgroup
            try:
                plan.cgroup.kill_all()
            except OSError:
                pass
        out, err = _drain(proc)
    _kill_group(proc.pid)  # stragglers the stage left behind
    report, status = jail.read_report(status_r)
    isolation = plan.finish(report)  # kills what is left in the cgroup and removes it
    return SandboxResult(
        argv=tuple(argv), returncode=proc.returncode if status is None or timed_out else status,
        timed_out=timed_out, wall_s=time.monotonic() - start, stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"), isolation=isolation,
    )


def _drain(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    # A process that left our group may still hold the pipes: never wait on it for long.
    try:
        return proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        for pipe in (proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
        proc.wait()
        return b"", b"(output lost: a process escaped the sandbox's process group)"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
