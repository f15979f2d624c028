"""The GPU stages as the cascade calls them: ``verify`` and ``bench`` of one candidate.

Each builds the candidate as a shared library (checked launches), writes a job, and runs the GPU
worker (evaluator/gpu/worker.py) in ONE sandbox call for all ranks, then reads its result.json.
A candidate's failure is an outcome; after a crash or a timeout the GPU's health is checked and
an unhealthy GPU raises ``InfrastructureError``. Nothing here imports torch.
"""

from __future__ import annotations

import json
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from design_space.errors import InfrastructureError
from evaluator.tolerance import output_tolerance, reduced_collective
from design_space.evaluation import RankCheck, Status, Tier, Timing, TimingSource, trim_log
from design_space.hardware import get_profile
from design_space.model import t_comm_ideal, t_comp
from design_space.patterns import Pattern
from design_space.point import DesignPoint
from design_space.spec import KernelSpec, ShapeCase
from evaluator import reference, sandbox, toolchain
from evaluator.gpu import bench_stats, health
from evaluator.gpu.shared_build import build_nccl_helper, build_shared

_STATUS = {"ok": Status.OK, "wrong_result": Status.WRONG_RESULT, "timeout": Status.TIMEOUT,
           "crashed": Status.CRASHED, "refused": Status.REJECTED}


@dataclass(frozen=True)
class VerifyOutcome:
    status: Status
    reason: str
    checks: tuple[RankCheck, ...] = ()
    log: str = ""
    env: dict = field(default_factory=dict)


@dataclass(frozen=True)
class BenchOutcome:
    status: Status
    reason: str
    timings: tuple[Timing, ...] = ()
    flags: tuple[str, ...] = ()
    log: str = ""
    details: tuple[dict, ...] = ()  # per shape: median, p10, p90, IQR, iterations, input sets, baseline spread


def gpu_available() -> bool:
    return health.gpu_available()


def fitting_shapes(pattern: Pattern, shapes: Sequence[ShapeCase], world: int) -> list[ShapeCase]:
    return [s for s in shapes if not pattern.dim_problems(s.at(world), world)]


def _case(pattern: Pattern, spec: KernelSpec, shape: ShapeCase, world: int) -> dict:
    d, dims = spec.dtype, pattern.full_dims(shape.at(world))  # a dim of the world size at this world
    return {"name": shape.name, "dims": dims, "dims_list": [dims[k] for k in pattern.dims],
            "symm_bytes": pattern.symm_bytes(dims, world, d),
            "workspace_bytes": max(1 << 16, pattern.workspace_bytes(dims, world, d))}


def _tensor(tf: reference.TensorFile) -> dict:
    return {"path": str(tf.path.resolve()), "shape": list(tf.shape), "dtype": tf.dtype}


def _virtual_cases(spec, pattern, world, shapes, trials, seed, ref_root: Path) -> list[dict]:
    """Reference data from the spec's hooks on gloo (CPU), made BEFORE the candidate runs."""
    seeds = tuple(seed + t for t in range(trials))
    refs = reference.prepare(spec, pattern, ref_root, worlds=[world], cases=shapes, seeds=seeds)
    cases = []
    for shape in shapes:
        c = _case(pattern, spec, shape, world)
        c["trials"] = [{"ranks": [{"inputs": [_tensor(t) for t in rd.inputs], "outputs": [_tensor(t) for t in rd.outputs],
                                   "exact": [_tensor(t) for t in rd.exact]}
                                  for rd in rc.ranks]} for rc in refs if rc.shape.name == shape.name]
        cases.append(c)
    return cases


def _job(spec, pattern, *, mode, backend, world, cases, trials, seed, task, timeout_s, run_timeout_s) -> dict:
    # the loosest of the outputs' tolerances at this world (no float64 calibration at GPU shapes)
    collective = reduced_collective(pattern.cost(spec.headline.at(world), world, spec.dtype))
    tols = [output_tolerance(spec, name, world=world, collective=collective) for name in pattern.outputs]
    tol = max(tols, key=lambda t: (t.rtol, t.atol)) if tols else spec.tolerances[spec.dtype]
    return {"mode": mode, "backend": backend, "world": world, "dtype": spec.dtype.value, "dtype_code": spec.dtype.code,
            "tolerance": {"atol": tol.atol, "rtol": tol.rtol}, "cases": cases, "trials": trials, "seed": seed,
            "spec": {"inputs": spec.inputs, "reference": spec.reference, "search_path": list(spec.search_path)},
            "input_names": list(pattern.inputs), "output_names": list(pattern.outputs), "task": task,
            "timeout_s": timeout_s, "run_timeout_s": run_timeout_s, "calls": 2, "warmup": 5, "iters": 30}


def _build(source, spec, backend, work_dir, cache_dir, arch, timeout_s):
    tc = toolchain.toolchain()
    arch = arch or get_profile(spec.hardware).arch
    built = build_shared(source, arch=arch, backend=backend, dtype_code=spec.dtype.code, tc=tc, cache_dir=cache_dir,
                         work_dir=work_dir / "so", timeout_s=timeout_s)
    helper = None
    if built.ok and backend == "nccl":
        helper = build_nccl_helper(arch=arch, tc=tc, cache_dir=cache_dir, work_dir=work_dir / "helper")
        if not helper.ok:
            raise InfrastructureError(f"the NCCL host helper does not build: {helper.log[-500:]}",
                                      "check that the NCCL headers match libnccl.so.2 (nvidia-nccl wheel)")
    return built, helper


def run_worker(job: dict, work_dir: Path, candidate_id: str) -> tuple[dict, str]:
    """Run the worker for ``job`` in one sandbox call; (result, log). Checks GPU health after a
    crash or timeout (raises InfrastructureError when the GPU is unhealthy)."""
    run_dir = work_dir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "job.json").write_text(json.dumps(job))
    res = sandbox.run([sys.executable, "-m", "evaluator.gpu.worker", str(run_dir / "job.json")], workdir=run_dir,
                      limits=health.gpu_limits(job["timeout_s"] + 30), env=health.gpu_env(),
                      isolate_network=True)
    path = run_dir / "result.json"
    result = json.loads(path.read_text()) if path.is_file() else {
        "status": "timeout" if res.timed_out else "crashed", "checks": [], "timings": [], "log": [],
        "reason": ("the GPU run exceeded its time limit and was killed with its process group" if res.timed_out else
                   f"the GPU worker died ({res.signal_name or f'exit code {res.returncode}'}) without a result")}
    log = trim_log("\n".join([res.output, *result.get("log", [])]))
    if result["status"] == "error":
        raise InfrastructureError(f"GPU harness failure for candidate {candidate_id}: {result['reason']}",
                                  "report this as a cuco bug with the log")
    if result["status"] in ("timeout", "crashed"):
        health.require_healthy(candidate_id, work_dir / "health")
    return result, log


def verify(source: str, spec: KernelSpec, pattern: Pattern, point: Optional[DesignPoint] = None, *,
           mode: str = "virtual", backend: str = "symm", world: int = 2, shapes: Optional[Sequence[ShapeCase]] = None,
           trials: int = 2, work_dir: Path, cache_dir: Path, timeout_s: float = 300.0, arch: Optional[str] = None,
           seed: Optional[int] = None, candidate_id: str = "candidate") -> VerifyOutcome:
    """Every rank, fresh non-uniform inputs per trial, poisoned outputs, several shapes and trials.
    ``point`` is informational (the source is what runs). Virtual mode defaults to the spec's
    emulation shapes (its reference runs on CPU); multi mode to the sweep's shapes."""
    if mode == "virtual" and backend != "symm":
        raise ValueError("virtual ranks run the symm backend only (NCCL refuses several ranks on one GPU)")
    built, helper = _build(source, spec, backend, work_dir, cache_dir, arch, timeout_s)
    if not built.ok:
        return VerifyOutcome(Status.BUILD_FAILED, _first_error(built.log), log=built.log)
    chosen = fitting_shapes(pattern, shapes or (spec.emulation_shapes if mode == "virtual" else spec.shapes), world)
    if not chosen:
        return VerifyOutcome(Status.REJECTED, f"no verification shape fits world size {world}")
    fixed = seed is not None
    seed = secrets.randbelow(1 << 20) if seed is None else seed  # fresh inputs unless asked to repeat
    if mode == "virtual":
        ref_root = cache_dir / "reference" if fixed else work_dir / "reference"  # fresh seeds are not cached
        cases = _virtual_cases(spec, pattern, world, chosen, trials, seed, ref_root)
    else:
        cases = [_case(pattern, spec, s, world) for s in chosen]
    job = _job(spec, pattern, mode=mode, backend=backend, world=world, cases=cases, trials=trials, seed=seed,
               task="verify", timeout_s=timeout_s, run_timeout_s=min(60.0, timeout_s / 2))
    job.update(lib=str(built.path), nccl_helper=str(helper.path) if helper else None)
    result, log = run_worker(job, work_dir, candidate_id)
    checks = tuple(RankCheck(tier=Tier.VERIFIED, **c) for c in result["checks"])
    return VerifyOutcome(_STATUS[result["status"]], result.get("reason", ""), checks, log, result.get("env", {}))


def bound_seconds(spec: KernelSpec, pattern: Pattern, shape: ShapeCase, world: int, hardware: Optional[str]) -> float:
    hw = get_profile(hardware or spec.hardware)
    cost = pattern.cost(shape.at(world), world, spec.dtype)
    return max(t_comp(cost, hw, spec.dtype.value), t_comm_ideal(cost, world, hw))


def bench(source: str, spec: KernelSpec, pattern: Pattern, point: Optional[DesignPoint] = None, *,
          mode: str = "multi", backend: str = "nccl", world: int = 2, shapes: Optional[Sequence[ShapeCase]] = None,
          work_dir: Path, cache_dir: Path, timeout_s: float = 600.0, warmup: int = 5, iters: int = 30,
          hardware: Optional[str] = None, arch: Optional[str] = None, candidate_id: str = "candidate") -> BenchOutcome:
    """Measured time per shape (median over iterations of the max over ranks) with the host-driven
    baseline measured right before in the same process group (multi mode only)."""
    built, helper = _build(source, spec, backend, work_dir, cache_dir, arch, timeout_s)
    if not built.ok:
        return BenchOutcome(Status.BUILD_FAILED, _first_error(built.log), log=built.log)
    chosen = fitting_shapes(pattern, shapes or spec.shapes, world)
    seed = secrets.randbelow(1 << 20)
    cases = (_virtual_cases(spec, pattern, world, chosen, 1, seed, work_dir / "reference") if mode == "virtual"
             else [_case(pattern, spec, s, world) for s in chosen])
    job = _job(spec, pattern, mode=mode, backend=backend, world=world, cases=cases, trials=1, seed=seed, task="bench",
               timeout_s=timeout_s, run_timeout_s=min(60.0, timeout_s / 2))
    job.update(lib=str(built.path), nccl_helper=str(helper.path) if helper else None, warmup=warmup, iters=iters)
    result, log = run_worker(job, work_dir, candidate_id)
    if result["status"] != "ok":
        return BenchOutcome(_STATUS[result["status"]], result.get("reason", ""), log=log)
    return _bench_outcome(result, spec, pattern, chosen, world, mode, hardware, log)


def _bench_outcome(result, spec, pattern, chosen, world, mode, hardware, log) -> BenchOutcome:
    timings, flags = [], []
    by_name = {s.name: s for s in chosen}
    for t in result["timings"]:
        bound = bound_seconds(spec, pattern, by_name[t["shape"]], world, hardware)
        timings.append(Timing(shape=t["shape"], world=world, source=TimingSource.MEASURED, seconds=t["seconds"],
                              bound_seconds=bound, baseline_seconds=t["baseline_seconds"]))
        summary = bench_stats.TimeSummary(t["seconds"], t["p10"], t["p90"], t["iqr"], t["n"])
        flags += [f"{t['shape']}: {f}" for f in bench_stats.bench_flags(bench_stats.sol_fraction(bound, t["seconds"]),
                                                                        summary)]
    if mode == "virtual":
        flags.append("virtual_ranks: one GPU shared by every rank; not a multi-GPU time, no baseline")
    return BenchOutcome(Status.OK, "", tuple(timings), tuple(flags), log, tuple(result["timings"]))


def _first_error(log: str) -> str:
    return next((ln.strip() for ln in log.splitlines() if "error" in ln), "nvcc failed")[:300]


def prepare_virtual_job(source: str, spec: KernelSpec, pattern: Pattern, *, world: int, shapes: Sequence[ShapeCase],
                        trials: int, seed: int, task: str, work_dir: Path, cache_dir: Path,
                        arch: Optional[str] = None, timeout_s: float = 120.0,
                        lib: Optional[Path] = None) -> tuple[Optional[dict], str]:
    """(job, '') for one virtual-rank run, or (None, build log) when the candidate does not build.
    Builds and reference data land in ``cache_dir`` (``seed`` is fixed), so a CPU machine can
    prepare what a GPU machine runs (scripts/gpu_check.py batches such jobs in one process)."""
    if lib is None:  # ``lib``: a library built beforehand (a prepared dir), used as is
        built, _ = _build(source, spec, "symm", work_dir, cache_dir, arch, timeout_s)
        if not built.ok:
            return None, built.log
        lib = built.path
    chosen = fitting_shapes(pattern, shapes, world)
    cases = _virtual_cases(spec, pattern, world, chosen, trials, seed, cache_dir / "reference")
    job = _job(spec, pattern, mode="virtual", backend="symm", world=world, cases=cases, trials=trials, seed=seed,
               task=task, timeout_s=timeout_s, run_timeout_s=min(30.0, timeout_s / 2))
    job["lib"] = str(lib)
    return job, ""
