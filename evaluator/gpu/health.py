"""Is there a usable GPU, and is it still healthy after a candidate failed on it?

``gpu_available`` is cheap on a machine without one (no /dev/nvidia* -> False without importing
torch). ``check_health`` runs a tiny CUDA op and a synchronize in a fresh sandboxed process with a
short timeout; ``require_healthy`` turns a failure into ``InfrastructureError`` so the next
candidate never starts on a broken GPU."""

from __future__ import annotations

import functools
import glob
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from design_space.errors import InfrastructureError
from evaluator import sandbox

_PROBE = (
    "import sys, torch\n"
    "if not torch.cuda.is_available():\n"
    "    print('no GPU: torch.cuda.is_available() is False'); sys.exit(3)\n"
    "x = torch.ones(1 << 20, device='cuda')\n"
    "s = float((x * 2).sum())\n"
    "torch.cuda.synchronize()\n"
    "assert s == 2.0 * (1 << 20), s\n"
    "print('ok', torch.cuda.get_device_name(0))\n"
)
NO_GPU_EXIT = 3


@dataclass(frozen=True)
class HealthReport:
    ok: bool
    no_gpu: bool
    detail: str


def _device_nodes() -> bool:
    return bool(glob.glob("/dev/nvidia[0-9]*"))


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True when this machine has a CUDA GPU torch can use (computed once)."""
    if not _device_nodes():
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def gpu_env() -> dict[str, str]:
    """Variables a GPU stage needs that the sandbox's whitelist drops."""
    keep = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
            "TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return env


def gpu_limits(wall_s: float) -> sandbox.Limits:
    """CUDA maps a huge virtual address space and NCCL starts many threads: no AS or task cap. Host
    memory is capped at half the machine's (a torch rank with CUDA and NCCL holds a few GiB, pinned
    staging buffers more), not the 2 GiB a CPU stage gets."""
    return sandbox.Limits(wall_s=wall_s, address_space_bytes=None, file_size_bytes=1 << 30, processes=4096,
                          memory_bytes=_half_the_memory())


def _half_the_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def check_health(work_dir: Path, *, timeout_s: float = 60.0) -> HealthReport:
    if not _device_nodes():
        return HealthReport(ok=False, no_gpu=True, detail="no GPU: no /dev/nvidia* device on this machine")
    res = sandbox.run([sys.executable, "-c", _PROBE], workdir=work_dir, limits=gpu_limits(timeout_s),
                      env=gpu_env(), isolate_network=True)
    last = (res.output.strip().splitlines() or [""])[-1][:300]
    if res.timed_out:
        return HealthReport(False, False, f"a tiny CUDA op did not finish in {timeout_s:.0f} s")
    if res.returncode == NO_GPU_EXIT:
        return HealthReport(False, True, last)
    return HealthReport(res.returncode == 0, False, last or f"exit code {res.returncode}")


def require_healthy(candidate_id: str, work_dir: Path, *, timeout_s: float = 60.0,
                    report: Optional[HealthReport] = None) -> HealthReport:
    """Raise ``InfrastructureError`` unless the GPU still runs a tiny op after ``candidate_id``."""
    report = report or check_health(work_dir, timeout_s=timeout_s)
    if not report.ok:
        raise InfrastructureError(f"GPU unhealthy after candidate {candidate_id}: {report.detail}",
                                  "reset it (nvidia-smi -r) or reboot before evaluating more candidates")
    return report


@functools.lru_cache(maxsize=1)
def device_count() -> int:
    """CUDA devices torch sees (0 without a GPU; computed once)."""
    if not gpu_available():
        return 0
    import torch
    return int(torch.cuda.device_count())
