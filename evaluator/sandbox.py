"""Run one untrusted stage: own session and process group, wall-clock timeout that kills the
whole group, rlimits (CPU time, address space, file size), a fresh working directory as cwd and
HOME, a whitelisted environment (no API keys, no cloud credentials), and no network where the
OS lets us make a private network namespace."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

from design_space.errors import InfrastructureError

# Only these variables reach a stage; everything else (API keys, AWS_*, tokens) is dropped.
_ENV_WHITELIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")


@dataclass(frozen=True)
class Limits:
    wall_s: float = 60.0
    cpu_s: Optional[int] = None
    address_space_bytes: Optional[int] = None
    file_size_bytes: Optional[int] = 256 << 20
    open_files: Optional[int] = 1024


@dataclass(frozen=True)
class SandboxResult:
    argv: tuple[str, ...]
    returncode: int  # negative: killed by that signal (as subprocess reports it)
    timed_out: bool
    wall_s: float
    stdout: str
    stderr: str
    network_isolated: bool = False
    extra: dict = field(default_factory=dict)

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


@functools.lru_cache(maxsize=1)
def _can_unshare_net() -> bool:
    exe = shutil.which("unshare")
    if not exe:
        return False
    try:
        return subprocess.run([exe, "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _limit_prefix(limits: Limits) -> list[str]:
    exe = shutil.which("prlimit")
    if not exe:
        return []
    opts = []
    if limits.cpu_s:
        opts.append(f"--cpu={limits.cpu_s}")
    if limits.address_space_bytes:
        opts.append(f"--as={limits.address_space_bytes}")
    if limits.file_size_bytes:
        opts.append(f"--fsize={limits.file_size_bytes}")
    if limits.open_files:
        opts.append(f"--nofile={limits.open_files}")
    return [exe, *opts, "--"] if opts else []


def run(
    argv: Sequence[str],
    *,
    workdir: Path,
    limits: Limits = Limits(),
    env: Optional[Mapping[str, str]] = None,
    isolate_network: bool = True,
) -> SandboxResult:
    """Run ``argv`` in the sandbox; never raises for anything the command does."""
    workdir.mkdir(parents=True, exist_ok=True)
    isolated = isolate_network and _can_unshare_net()
    full = [*_limit_prefix(limits), *(["unshare", "-n", "--"] if isolated else []), *argv]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            full, cwd=workdir, env=scrubbed_env(workdir, env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as e:
        raise InfrastructureError(f"cannot start {argv[0]}: {e}", "check the tool is installed and executable") from e
    timed_out = False
    try:
        out, err = proc.communicate(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = _drain(proc)
    _kill_group(proc.pid)  # stragglers the stage left behind
    return SandboxResult(
        argv=tuple(argv), returncode=proc.returncode, timed_out=timed_out, wall_s=time.monotonic() - start,
        stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"), network_isolated=isolated,
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
