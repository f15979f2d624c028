"""The evaluator cascade, cheapest stage first: guard -> build -> emulate -> [verify -> bench on
GPUs] -> simulate -> score.

A candidate's failure at any stage is data (an ``Evaluation`` with its status and a trimmed
log); only misconfiguration or infrastructure faults raise. Without a GPU (or with one GPU, where
ranks are virtual) timings are ``simulated`` by the analytic model; with several GPUs they are
``measured`` by the bench stage. The two are never mixed in one evaluation.
"""

from __future__ import annotations

import importlib.metadata
import os
import secrets
import platform
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from design_space.candidate import Candidate, content_hash
from design_space.point import DesignPoint
from design_space.evaluation import CUT_BY_MAX_WALL, Evaluation, Provenance, Stage, Status, Timing, trim_log
from design_space.hardware import get_profile
from design_space.calibration import load_calibration
from design_space.patterns import get_pattern
from design_space.spec import KernelSpec
from design_space.errors import ConfigError
from design_space.space import valid_points
from design_space.spec import ShapeCase
from evaluator import build, emulate, guard, reference, score, shape_draws, shim_build, toolchain
from evaluator.gpu import stages as gpu_stages

SOL_SUSPECT = 1.05  # a time this far under the physical bound is a bug or a hack


@dataclass(frozen=True)
class EvaluatorConfig:
    cache_dir: Path
    work_root: Optional[Path] = None  # per-candidate scratch; a temp dir when None
    comm_backend: str = "nccl"  # what the build stage compiles against
    arch: Optional[str] = None  # default: the spec's hardware profile
    emulation: emulate.EmulationSettings = field(default_factory=emulate.EmulationSettings)
    shape_variants: int = 6  # shapes drawn around each emulation shape; each evaluation meets one per shape
    seed: Optional[int] = None  # draws the shape pool and each pick; None: this cache's secret (a run: its own)
    gpu: str = "auto"  # "auto": GPU stages when a GPU is present; "off"; "require": refuse to run without one
    build_timeout_s: float = 180.0
    keep_work: bool = False


def provenance(tc: toolchain.Toolchain) -> Provenance:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return ""
    return Provenance(host=platform.node(), platform=platform.platform(), python=platform.python_version(),
                      torch=version("torch"), nvcc=tc.nvcc_version, gxx=toolchain.gxx_version(),
                      nccl_headers=tc.nccl_version)


class Evaluator:
    """Evaluates candidates of one spec. Construction checks the toolchain (raises when missing)."""

    def __init__(self, spec: KernelSpec, config: EvaluatorConfig) -> None:
        # stages run in their own working directories: a relative cache path would point elsewhere there
        self.spec, self.config = spec, replace(config, cache_dir=Path(config.cache_dir).resolve())
        self.pattern = get_pattern(spec.pattern)
        self.hardware = get_profile(spec.hardware)
        self.arch = config.arch or self.hardware.arch
        self.tc = toolchain.toolchain()
        toolchain.find_gxx()
        self.provenance = provenance(self.tc)
        self._cases: Optional[list[reference.ReferenceCase]] = None
        self._pool: dict[str, tuple[ShapeCase, ...]] = {}
        self.gpu = self._gpu_plan(config.gpu)
        self.calibration = load_calibration()  # None without a file: the model's stated defaults
        if self.config.seed is None:
            self.config = replace(self.config, seed=_cache_secret(self.config.cache_dir))

    def _gpu_plan(self, wanted: str) -> Optional[gpu_stages.GpuPlan]:
        if wanted not in ("auto", "off", "require"):
            raise ConfigError(f"unknown GPU setting {wanted!r}", "pass --gpu auto, off or require")
        found = None if wanted == "off" else gpu_stages.plan(self.spec, self.config.comm_backend)
        if wanted == "require" and found is None:
            raise ConfigError("--gpu require: this machine has no usable CUDA GPU",
                              "run on a GPU machine, or pass --gpu auto to build, emulate and simulate here "
                              "(`cuco doctor` shows what this machine can do)")
        return found

    def prepare(self) -> None:
        """Run (or load) the reference on gloo for every shape of the pool and every call, and build
        the emulator runtime once."""
        if self._cases is None:
            pool = shape_draws.shape_pool(self.pattern, self.spec.emulation_shapes, self.spec.emulation_world_sizes,
                                          self.config.shape_variants, self.config.seed)
            shapes = [s for options in pool.values() for s in options]
            self._cases = reference.prepare(
                self.spec, self.pattern, self.config.cache_dir / "reference",
                worlds=self.spec.emulation_world_sizes, cases=shapes,
                seeds=tuple(range(self.config.emulation.iterations)))
            self._pool = pool
            shim_build.ensure_runtime(self.config.cache_dir / "emulator")

    def use_shape_seed(self, seed: int) -> None:
        """Draw the emulation shapes with ``seed`` (a run's secret) from now on."""
        if seed != self.config.seed:
            self.config = replace(self.config, seed=seed)
            self._cases, self._pool = None, {}

    def shapes_for(self, key: str) -> tuple[ShapeCase, ...]:
        """The emulation shapes an evaluation keyed ``key`` meets (one drawn per spec shape)."""
        self.prepare()
        return shape_draws.pick(self._pool, f"{self.config.seed}:{key}")

    def cases_for(self, key: str) -> list[reference.ReferenceCase]:
        names = {s.name for s in self.shapes_for(key)}
        return [c for c in self._cases or [] if c.shape.name in names]

    def evaluate(self, candidate: Candidate, parent_source: Optional[str] = None,
                 deadline: Optional[float] = None) -> Evaluation:
        """Run the cascade. ``deadline`` (a ``time.monotonic()`` value, e.g. from ``--max-wall``)
        caps every stage's own time limit; a stage cut by it ends as ``timeout`` and says so."""
        self.prepare()
        work = Path(tempfile.mkdtemp(prefix=f"cuco-{candidate.id}-", dir=self.config.work_root))
        try:
            budget = _Budget(deadline)
            return budget.label(self._cascade(candidate, parent_source, work, budget))
        finally:
            if not self.config.keep_work:
                shutil.rmtree(work, ignore_errors=True)

    def _cascade(self, cand: Candidate, parent_source: Optional[str], work: Path, budget: "_Budget") -> Evaluation:
        seconds: dict[str, float] = {}
        base = {"candidate_id": cand.id, "stage_seconds": seconds, "provenance": self.provenance}
        t = time.monotonic()
        findings = guard.check(cand.source, point=cand.point, parent_source=parent_source)
        seconds["guard"] = time.monotonic() - t
        if findings:
            return Evaluation(**base, status=Status.REJECTED, stage=Stage.GUARD, reason=str(findings[0]),
                              logs=trim_log("\n".join(str(f) for f in findings)))
        built, emu = self._build_and_emulate(cand, work, budget, seconds)
        if not built.ok and budget.cut:
            return Evaluation(**base, status=Status.TIMEOUT, stage=Stage.BUILD, build=built.stats,
                              reason=budget.reason("the build", self.config.build_timeout_s), logs=built.log)
        if not built.ok:
            first = next((ln for ln in built.log.splitlines() if "error" in ln), "nvcc failed")
            return Evaluation(**base, status=Status.BUILD_FAILED, stage=Stage.BUILD, build=built.stats,
                              reason=first.strip()[:300], logs=built.log)
        seconds.update(emu.seconds)
        if emu.status is not Status.OK:
            return Evaluation(**base, status=emu.status, stage=Stage.EMULATE, build=built.stats, checks=emu.checks,
                              reason=emu.reason, logs=emu.log)
        return self._after_emulation(cand, work, budget, base, built, emu)

    def _build_and_emulate(self, cand: Candidate, work: Path, budget: "_Budget",
                           seconds: dict) -> tuple[build.BuildOutcome, Optional[emulate.EmulationOutcome]]:
        """The GPU build and the CPU emulation, side by side: they share nothing, and the verdict
        order stays the sequential one (a failed build decides, and its emulation is stopped and
        dropped), so only the wall time changes. The emulation is None when the build failed."""
        cases = self.cases_for(cand.content_hash)
        build_s = budget.cap(self.config.build_timeout_s)  # capped before the emulation's: `label` names the latter
        settings = replace(self.config.emulation, timeout_s=budget.cap(self.config.emulation.timeout_s))
        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cuco-emulate") as pool:
            running = pool.submit(emulate.emulate, cand.source, spec=self.spec, pattern=self.pattern, cases=cases,
                                  work_dir=work / "emulate", cache_dir=self.config.cache_dir / "emulator",
                                  settings=settings, stop=stop,
                                  canary=lambda: self.canary_passes(cases, work / "canary", settings))
            built = None
            try:
                t = time.monotonic()
                built = build.build(cand.source, arch=self.arch, comm_backend=self.config.comm_backend,
                                    dtype_code=self.spec.dtype.code, tc=self.tc, cache_dir=self.config.cache_dir,
                                    work_dir=work / "build", timeout_s=build_s)
                seconds["build_cached" if built.stats.cached else "build"] = time.monotonic() - t
            finally:
                if built is None or not built.ok:
                    stop.set()
        if not built.ok:
            return built, None
        return built, running.result()

    def _after_emulation(self, cand: Candidate, work: Path, budget: "_Budget", base: dict, built: build.BuildOutcome,
                         emu: emulate.EmulationOutcome) -> Evaluation:
        """GPU stages when there is a GPU, then the simulated times unless measured ones exist."""
        seconds = base["stage_seconds"]
        flags = ["network_isolated" if emu.network_isolated else "network_not_isolated (no private namespace)",
                 f"sandbox: {emu.isolation}"]
        checks, logs, stage, timings = emu.checks, emu.log, Stage.EMULATE, ()
        if self.gpu is not None:
            t = time.monotonic()
            gpu = gpu_stages.run(cand, self.spec, self.pattern, self.gpu, work=work / "gpu",
                                 cache_dir=self.config.cache_dir / "gpu", cap=budget.cap)
            seconds["gpu"] = time.monotonic() - t
            checks, logs = (*emu.checks, *gpu.checks), f"{emu.log}\n{gpu.log}"
            if gpu.status is not Status.OK:
                return Evaluation(**base, status=gpu.status, stage=gpu.stage, build=built.stats, checks=checks,
                                  reason=gpu.reason, logs=trim_log(logs), flags=tuple(flags))
            flags += gpu.flags
            stage, timings = gpu.stage, gpu.timings
        else:
            flags.append("memory_ordering_unchecked (CPU emulation)")
        t = time.monotonic()
        scored = score.score(cand, self.spec, self.pattern, self.hardware, built.stats, emu.traces, self.calibration,
                             emu.tile_dependence)
        seconds["score"] = time.monotonic() - t
        observed = {"observed_point": scored.point.key() if scored.point else None, "observed": scored.observed,
                    "features": scored.features}
        if scored.refused:
            return Evaluation(**base, **observed, status=Status.REJECTED, stage=Stage.SCORE, build=built.stats,
                              checks=checks, reason=scored.refused, logs=trim_log(logs), flags=tuple(flags))
        flags += scored.flags
        if not timings:  # measured times, when there are any, are never mixed with simulated ones
            timings = scored.timings
            stage = Stage.SIMULATE if timings else stage
        if any(tm.sol_fraction > SOL_SUSPECT for tm in timings):
            flags.append("beats_physical_bound: suspected hack or bug")
        return Evaluation(**base, **observed, status=Status.OK, stage=stage, build=built.stats, checks=checks,
                          timings=timings, flags=tuple(flags), logs=trim_log(logs))

    def compile_check(self, source: str) -> tuple[bool, str]:
        """The build stage alone (cached): (ok, trimmed log) -- for proposers' repair attempts."""
        work = Path(tempfile.mkdtemp(prefix="cuco-compile-", dir=self.config.work_root))
        try:
            built = build.build(source, arch=self.arch, comm_backend=self.config.comm_backend,
                                dtype_code=self.spec.dtype.code, tc=self.tc, cache_dir=self.config.cache_dir,
                                work_dir=work, timeout_s=self.config.build_timeout_s)
            return built.ok, built.log
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @property
    def reference_cases(self) -> tuple[reference.ReferenceCase, ...]:
        """The prepared reference data (runs the reference on first use)."""
        self.prepare()
        return tuple(self._cases or ())

    def emulate_source(self, source: str, probe: bool = True) -> emulate.EmulationOutcome:
        """The emulate stage alone against the prepared reference: for sweeps that build in batches
        (``probe=False``: without the tile dependence probe, which only feeds the score)."""
        self.prepare()
        work = Path(tempfile.mkdtemp(prefix="cuco-emulate-", dir=self.config.work_root))
        try:
            cases = self.cases_for(content_hash(source))
            return emulate.emulate(source, spec=self.spec, pattern=self.pattern, cases=cases, work_dir=work,
                                   cache_dir=self.config.cache_dir / "emulator", settings=self.config.emulation,
                                   canary=lambda: self.canary_passes(cases, work / "canary", self.config.emulation),
                                   probe=probe)
        finally:
            if not self.config.keep_work:
                shutil.rmtree(work, ignore_errors=True)

    def canary_passes(self, cases: list[reference.ReferenceCase], work: Path,
                      settings: emulate.EmulationSettings) -> bool:
        """A known-good candidate (the family's simplest valid design) through the emulate tier on
        the same cases: when it fails too, the fault is the machine's or cuco's, not the candidate's."""
        points = valid_points(self.pattern, self.hardware)
        point = next((p for p in points if p.placement.value == "sequential"), points[0] if points else None)
        if point is None:
            return False
        out = emulate.emulate(self.pattern.render(point), spec=self.spec, pattern=self.pattern, cases=cases,
                              work_dir=work, cache_dir=self.config.cache_dir / "emulator", settings=settings,
                              probe=False)
        return out.status is Status.OK

    def guard_findings(self, source: str, point: Optional[DesignPoint] = None) -> str:
        """The guard's findings, one per line ('' when the source passes)."""
        return "\n".join(str(f) for f in guard.check(source, point=point))

    def simulate(self, cand: Candidate) -> list[Timing]:
        """Model estimates of the candidate's declared point with unknown code features (for tools
        that have not evaluated it; an evaluation scores the observed point and features)."""
        if cand.point is None:
            return []
        return score.simulate(self.spec, self.pattern, self.hardware, cand.point, None, self.calibration)


def _cache_secret(cache_dir: Path) -> int:
    """A secret seed kept in the cache (no stage can see the cache): the shapes drawn for tools that
    are not a run (``cuco check``, sweeps) stay unknown to candidates yet reuse their references."""
    path = cache_dir / "shape-seed"
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        cache_dir.mkdir(parents=True, exist_ok=True)
        seed = secrets.randbits(62)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(f"{seed}\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        return int(path.read_text().strip())


class _Budget:
    """What is left of a deadline; remembers whether it had to shorten a stage's own limit."""

    MIN_STAGE_S = 1.0  # a stage always gets this much, so a late start still records an outcome

    def __init__(self, deadline: Optional[float]) -> None:
        self.deadline = deadline
        self.capped: Optional[float] = None

    def cap(self, own_limit_s: float) -> float:
        if self.deadline is None:
            return own_limit_s
        left = max(self.MIN_STAGE_S, self.deadline - time.monotonic())
        if left < own_limit_s:
            self.capped = own_limit_s
            return left
        return own_limit_s

    @property
    def cut(self) -> bool:
        """The deadline shortened a stage and has now passed: that stage ended because of it."""
        return self.capped is not None and self.deadline is not None and time.monotonic() >= self.deadline

    def reason(self, what: str, own_limit_s: float) -> str:
        return (f"{what} was still running at the run's deadline (--max-wall) and was killed; its own limit is "
                f"{own_limit_s:.0f} s")

    def label(self, ev: Evaluation) -> Evaluation:
        """A timeout that the deadline caused says so (and is flagged), so nobody mistakes it for the
        candidate's own limit."""
        if ev.status is not Status.TIMEOUT or not self.cut:
            return ev
        flags = ev.flags if CUT_BY_MAX_WALL in ev.flags else (*ev.flags, CUT_BY_MAX_WALL)
        reason = ev.reason if "--max-wall" in ev.reason else f"{ev.reason} [cut by --max-wall; own limit {self.capped:.0f} s]"
        return ev.model_copy(update={"reason": reason, "flags": flags})
