"""Where evaluations run: one protocol, three engines (``--launcher local | ray | slurm``).

An evaluation travels as an ``EvaluationJob`` (plain JSON-able fields: the spec, the evaluator's
settings, the run's secret shape seed, the candidate, its parent's source, a wall-clock deadline
and how many GPUs its GPU stages need); ``run_job`` evaluates one in whatever process receives it
(one Evaluator per spec and settings is kept per process, so a worker prepares the reference once).

- ``local`` (default): a thread pool in this process, ``slots`` wide, with a GPU allocator
  (``--gpus 0-7``) that hands each job needing GPUs a disjoint set and holds the job until one is
  free: nothing is ever oversubscribed.
- ``ray`` (extra ``ray``): each job a Ray task asking for one CPU and, when it needs GPUs, that many
  of the ``gpu_resource`` resource (``"GPU"`` on a real cluster; a custom resource stands in for
  GPUs in tests); ``address`` joins an existing cluster, else a local one starts.
- ``slurm`` (extra ``slurm``): each job a submitit job (one per evaluation), on a Slurm cluster or,
  with ``cluster="local"``, on submitit's local executor.

Every launcher returns ``concurrent.futures.Future`` s of ``Evaluation``; the loop never knows which
engine it talks to.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from design_space.candidate import Candidate
from design_space.errors import ConfigError
from design_space.evaluation import Evaluation
from design_space.spec import KernelSpec

LAUNCHERS = ("local", "ray", "slurm")


@dataclass(frozen=True)
class EvaluationJob:
    spec_json: str
    config: dict  # EvaluatorConfig fields (see evaluator_config)
    shape_seed: int
    candidate_json: str
    parent_source: Optional[str] = None
    deadline_epoch: Optional[float] = None  # time.time() of --max-wall's end: it means the same on every node
    gpus: int = 0


def job_for(evaluator, cand: Candidate, parent_source: Optional[str], deadline: Optional[float],
            gpus: int = 0) -> EvaluationJob:
    """The job that evaluates ``cand`` as ``evaluator`` would (``deadline``: a monotonic time)."""
    c = evaluator.config
    config = {"cache_dir": str(c.cache_dir), "comm_backend": c.comm_backend, "arch": c.arch, "gpu": c.gpu,
              "emulation": asdict(c.emulation), "shape_variants": c.shape_variants,
              "build_timeout_s": c.build_timeout_s, "keep_work": c.keep_work}
    epoch = None if deadline is None else time.time() + (deadline - time.monotonic())
    return EvaluationJob(evaluator.spec.model_dump_json(), config, int(c.seed), cand.model_dump_json(),
                         parent_source, epoch, gpus)


_EVALUATORS: dict = {}
_EVALUATORS_LOCK = threading.Lock()


def _evaluator(job: EvaluationJob):
    from evaluator.cascade import Evaluator, EvaluatorConfig  # noqa: PLC0415 (a worker imports it once)
    from evaluator.emulate import EmulationSettings  # noqa: PLC0415

    key = (job.spec_json, repr(sorted(job.config.items())), job.shape_seed)
    with _EVALUATORS_LOCK:
        ev = _EVALUATORS.get(key)
        if ev is None:
            cfg = {**job.config, "cache_dir": Path(job.config["cache_dir"]),
                   "emulation": EmulationSettings(**job.config["emulation"])}
            ev = Evaluator(KernelSpec.model_validate_json(job.spec_json), EvaluatorConfig(**cfg))
            ev.use_shape_seed(job.shape_seed)
            _EVALUATORS[key] = ev
    return ev


def run_job(job: EvaluationJob) -> str:
    """Evaluate one job in this process; the Evaluation as JSON (it crosses process boundaries)."""
    ev = _evaluator(job)
    deadline = None if job.deadline_epoch is None else time.monotonic() + (job.deadline_epoch - time.time())
    cand = Candidate.model_validate_json(job.candidate_json)
    return ev.evaluate(cand, job.parent_source, deadline).model_dump_json()


def _as_evaluation(text: str) -> Evaluation:
    return Evaluation.model_validate_json(text)


class GpuAllocator:
    """Disjoint GPU sets for concurrent jobs: ``acquire(n)`` blocks until n GPUs are free."""

    def __init__(self, ids: Sequence[int]) -> None:
        self.free = list(ids)
        self.total = len(self.free)
        self._cv = threading.Condition()

    def acquire(self, n: int) -> tuple[int, ...]:
        if n > self.total:
            raise ConfigError(f"an evaluation needs {n} GPUs and the launcher has {self.total}",
                              "pass more with --gpus (e.g. --gpus 0-7), or a smaller world size")
        with self._cv:
            self._cv.wait_for(lambda: len(self.free) >= n)
            got, self.free = tuple(self.free[:n]), self.free[n:]
            return got

    def release(self, ids: Sequence[int]) -> None:
        with self._cv:
            self.free.extend(ids)
            self._cv.notify_all()


def parse_gpus(text: Optional[str]) -> tuple[int, ...]:
    """``"0-3,6"`` -> (0, 1, 2, 3, 6); None or "" -> ()."""
    out: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            lo, _, hi = part.partition("-")
            out += list(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise ConfigError(f"cannot read --gpus {text!r}", "give GPU ids like 0-7 or 0,1,4") from None
    return tuple(dict.fromkeys(out))


class LocalLauncher:
    name = "local"

    def __init__(self, slots: int, gpus: Sequence[int] = (), run: Optional[Callable] = None) -> None:
        self.slots = max(1, slots)
        self.gpus = GpuAllocator(gpus)
        self._pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="cuco-eval")
        self._run = run  # the loop's own evaluator, called directly (no serialisation in one process)

    def submit(self, job: EvaluationJob, local_call: Optional[Callable[[], Evaluation]] = None) -> Future:
        def work() -> Evaluation:
            held = self.gpus.acquire(job.gpus) if job.gpus else ()
            try:
                return local_call() if local_call is not None else _as_evaluation(run_job(job))
            finally:
                if held:
                    self.gpus.release(held)
        return self._pool.submit(work)

    def close(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


class RayLauncher:
    name = "ray"

    def __init__(self, slots: Optional[int] = None, address: Optional[str] = None, gpu_resource: str = "GPU",
                 init_kwargs: Optional[dict] = None) -> None:
        try:
            import ray  # noqa: PLC0415
        except ImportError:
            raise ConfigError("--launcher ray needs Ray", "pip install 'cuco-kernels[ray]'") from None
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, **(init_kwargs or {}))
        self.gpu_resource = gpu_resource
        self.slots = slots or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote = ray.remote(run_job)

    def submit(self, job: EvaluationJob, local_call=None) -> Future:
        resources = {self.gpu_resource: job.gpus} if job.gpus and self.gpu_resource != "GPU" else {}
        ref = self._remote.options(num_cpus=1, num_gpus=job.gpus if self.gpu_resource == "GPU" else 0,
                                   resources=resources).remote(job)
        out: Future = Future()
        inner = ref.future()
        inner.add_done_callback(lambda f: out.set_exception(f.exception()) if f.exception()
                                else out.set_result(_as_evaluation(f.result())))
        return out

    def close(self, wait: bool = True) -> None:
        pass  # the cluster is the user's (a local one ends with this process)


class SlurmLauncher:
    name = "slurm"

    def __init__(self, folder: Path, slots: int = 4, cluster: Optional[str] = None,
                 parameters: Optional[dict] = None) -> None:
        try:
            import submitit  # noqa: PLC0415
        except ImportError:
            raise ConfigError("--launcher slurm needs submitit", "pip install 'cuco-kernels[slurm]'") from None
        self.executor = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
        self.executor.update_parameters(timeout_min=60, **(parameters or {}))
        self.slots = slots
        self._waiters = ThreadPoolExecutor(max_workers=max(1, slots), thread_name_prefix="cuco-slurm")

    def submit(self, job: EvaluationJob, local_call=None) -> Future:
        handle = self.executor.submit(run_job, job)
        return self._waiters.submit(lambda: _as_evaluation(handle.result()))

    def close(self, wait: bool = True) -> None:
        self._waiters.shutdown(wait=wait, cancel_futures=True)
