"""The GPU stages of the cascade (verify, then bench) for a candidate that passed emulation.

Which run a machine gets:
- two or more GPUs: ``multi`` (one process per rank and GPU, NCCL group) at the largest world
  size of the spec that fits; verify, then bench with the host-driven baseline measured in the
  same group; the times are ``measured`` and replace the simulated ones;
- one GPU: ``virtual`` ranks (one process, N rank instances co-resident on N streams) at the
  spec's emulation world sizes; verify only. One GPU shared by every rank says nothing about a
  multi-GPU time, so the timings stay ``simulated`` and the evaluation says so.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from design_space.candidate import Candidate
from design_space.evaluation import RankCheck, Stage, Status, Timing
from design_space.patterns import Pattern
from design_space.spec import KernelSpec
from evaluator.gpu import api, health


_GPU_LOCK = threading.Lock()  # parallel workers share the GPUs: one candidate on them at a time


@dataclass(frozen=True)
class GpuPlan:
    mode: str  # "multi" or "virtual"
    backend: str  # the comm backend the GPU build uses
    worlds: tuple[int, ...]
    bench: bool


@dataclass(frozen=True)
class GpuStagesOutcome:
    status: Status
    stage: Stage
    reason: str = ""
    checks: tuple[RankCheck, ...] = ()
    timings: tuple[Timing, ...] = ()  # measured; empty when nothing was benchmarked
    flags: tuple[str, ...] = ()
    log: str = ""


def plan(spec: KernelSpec, comm_backend: str) -> Optional[GpuPlan]:
    """What this machine's GPUs can run for ``spec``; None without a GPU."""
    if not health.gpu_available():
        return None
    gpus = health.device_count()
    fitting = [w for w in spec.world_sizes if w <= gpus]
    if fitting:
        return GpuPlan(mode="multi", backend=comm_backend, worlds=(max(fitting),), bench=True)
    return GpuPlan(mode="virtual", backend="symm", worlds=tuple(spec.emulation_world_sizes), bench=False)


def run(cand: Candidate, spec: KernelSpec, pattern: Pattern, gpu: GpuPlan, *, work: Path, cache_dir: Path,
        cap: Callable[[float], float], verify_timeout_s: float = 300.0, bench_timeout_s: float = 600.0,
        trials: int = 2) -> GpuStagesOutcome:
    """Verify at every planned world size, then bench (multi only). ``cap`` shortens a stage's own
    time limit to what the run's deadline leaves."""
    with _GPU_LOCK:
        return _run(cand, spec, pattern, gpu, work=work, cache_dir=cache_dir, cap=cap,
                    verify_timeout_s=verify_timeout_s, bench_timeout_s=bench_timeout_s, trials=trials)


def _run(cand: Candidate, spec: KernelSpec, pattern: Pattern, gpu: GpuPlan, *, work: Path, cache_dir: Path,
         cap: Callable[[float], float], verify_timeout_s: float, bench_timeout_s: float,
         trials: int) -> GpuStagesOutcome:
    checks: list[RankCheck] = []
    logs: list[str] = []
    for world in gpu.worlds:
        out = api.verify(cand.source, spec, pattern, cand.point, mode=gpu.mode, backend=gpu.backend, world=world,
                         trials=trials, work_dir=work / f"verify-w{world}", cache_dir=cache_dir,
                         timeout_s=cap(verify_timeout_s), candidate_id=cand.id)
        checks.extend(out.checks)
        logs.append(f"$ gpu verify mode={gpu.mode} backend={gpu.backend} world={world}\n{out.log}")
        if out.status is not Status.OK:
            return GpuStagesOutcome(out.status, Stage.VERIFY, out.reason, tuple(checks), log="\n".join(logs))
    flags = (f"verified_on_gpu ({gpu.mode}, {gpu.backend}, worlds {', '.join(map(str, gpu.worlds))})",)
    if not gpu.bench:
        return GpuStagesOutcome(Status.OK, Stage.VERIFY, "", tuple(checks),
                                flags=(*flags, "not_benchmarked: one GPU (virtual ranks); times stay simulated"),
                                log="\n".join(logs))
    world = gpu.worlds[-1]
    out = api.bench(cand.source, spec, pattern, cand.point, mode=gpu.mode, backend=gpu.backend, world=world,
                    work_dir=work / "bench", cache_dir=cache_dir, timeout_s=cap(bench_timeout_s),
                    hardware=spec.hardware, candidate_id=cand.id)
    logs.append(f"$ gpu bench mode={gpu.mode} backend={gpu.backend} world={world}\n{out.log}")
    if out.status is not Status.OK:
        return GpuStagesOutcome(out.status, Stage.BENCH, out.reason, tuple(checks), log="\n".join(logs))
    return GpuStagesOutcome(Status.OK, Stage.BENCH, "", tuple(checks), out.timings, (*flags, *out.flags),
                            "\n".join(logs))
