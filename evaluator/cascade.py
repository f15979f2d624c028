"""The evaluator cascade, cheapest stage first: guard -> build -> emulate -> simulate -> score.

A candidate's failure at any stage is data (an ``Evaluation`` with its status and a trimmed
log); only misconfiguration or infrastructure faults raise. GPU stages (verify, bench) are not
part of this CPU cascade: timings here are ``simulated`` by the analytic model and labelled so.
"""

from __future__ import annotations

import importlib.metadata
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from design_space.candidate import Candidate
from design_space.evaluation import Evaluation, Provenance, Stage, Status, Timing, TimingSource, trim_log
from design_space.hardware import get_profile
from design_space.model import estimate
from design_space.patterns import get_pattern
from design_space.spec import KernelSpec
from evaluator import build, emulate, guard, reference, shim_build, toolchain

SOL_SUSPECT = 1.05  # a time this far under the physical bound is a bug or a hack


@dataclass(frozen=True)
class EvaluatorConfig:
    cache_dir: Path
    work_root: Optional[Path] = None  # per-candidate scratch; a temp dir when None
    comm_backend: str = "nccl"  # what the build stage compiles against
    arch: Optional[str] = None  # default: the spec's hardware profile
    emulation: emulate.EmulationSettings = field(default_factory=emulate.EmulationSettings)
    trials: int = 1
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
        self.spec, self.config = spec, config
        self.pattern = get_pattern(spec.pattern)
        self.hardware = get_profile(spec.hardware)
        self.arch = config.arch or self.hardware.arch
        self.tc = toolchain.toolchain()
        toolchain.find_gxx()
        self.provenance = provenance(self.tc)
        self._cases: Optional[list[reference.ReferenceCase]] = None

    def prepare(self) -> None:
        """Run (or load) the reference on gloo and build the emulator runtime once."""
        if self._cases is None:
            self._cases = reference.prepare(
                self.spec, self.pattern, self.config.cache_dir / "reference",
                worlds=self.spec.emulation_world_sizes, cases=self.spec.emulation_shapes,
                seeds=tuple(range(self.config.trials)))
            shim_build.ensure_runtime(self.config.cache_dir / "emulator")

    def evaluate(self, candidate: Candidate, parent_source: Optional[str] = None) -> Evaluation:
        self.prepare()
        work = Path(tempfile.mkdtemp(prefix=f"cuco-{candidate.id}-", dir=self.config.work_root))
        try:
            return self._cascade(candidate, parent_source, work)
        finally:
            if not self.config.keep_work:
                shutil.rmtree(work, ignore_errors=True)

    def _cascade(self, cand: Candidate, parent_source: Optional[str], work: Path) -> Evaluation:
        seconds: dict[str, float] = {}
        base = {"candidate_id": cand.id, "stage_seconds": seconds, "provenance": self.provenance}
        t = time.monotonic()
        findings = guard.check(cand.source, point=cand.point, parent_source=parent_source)
        seconds["guard"] = time.monotonic() - t
        if findings:
            return Evaluation(**base, status=Status.REJECTED, stage=Stage.GUARD, reason=str(findings[0]),
                              logs=trim_log("\n".join(str(f) for f in findings)))
        t = time.monotonic()
        built = build.build(cand.source, arch=self.arch, comm_backend=self.config.comm_backend,
                            dtype_code=self.spec.dtype.code, tc=self.tc, cache_dir=self.config.cache_dir,
                            work_dir=work / "build", timeout_s=self.config.build_timeout_s)
        seconds["build_cached" if built.stats.cached else "build"] = time.monotonic() - t
        if not built.ok:
            first = next((ln for ln in built.log.splitlines() if "error" in ln), "nvcc failed")
            return Evaluation(**base, status=Status.BUILD_FAILED, stage=Stage.BUILD, build=built.stats,
                              reason=first.strip()[:300], logs=built.log)
        emu = emulate.emulate(cand.source, spec=self.spec, pattern=self.pattern, cases=self._cases or [],
                              work_dir=work / "emulate", cache_dir=self.config.cache_dir / "emulator",
                              settings=self.config.emulation)
        seconds.update(emu.seconds)
        if emu.status is not Status.OK:
            return Evaluation(**base, status=emu.status, stage=Stage.EMULATE, build=built.stats, checks=emu.checks,
                              reason=emu.reason, logs=emu.log)
        t = time.monotonic()
        timings = self.simulate(cand)
        seconds["simulate"] = time.monotonic() - t
        flags = ["memory_ordering_unchecked (CPU emulation)",
                 "network_isolated" if emu.network_isolated else "network_not_isolated (no private namespace)"]
        if not timings:
            flags.append("no_declared_point: not simulated")
        if any(tm.sol_fraction > SOL_SUSPECT for tm in timings):
            flags.append("beats_physical_bound: suspected hack or bug")
        return Evaluation(**base, status=Status.OK, stage=Stage.SIMULATE if timings else Stage.EMULATE,
                          build=built.stats, checks=emu.checks, timings=tuple(timings), flags=tuple(flags),
                          logs=emu.log)

    def simulate(self, cand: Candidate) -> list[Timing]:
        """Model estimates for every shape of the sweep at the target world size (``simulated``)."""
        if cand.point is None:
            return []
        world = self.spec.target_world
        out = []
        for shape in self.spec.shapes:
            est = estimate(self.pattern.cost(shape.dims, world, self.spec.dtype), cand.point, world, self.hardware,
                           self.spec.dtype.value)
            out.append(Timing(shape=shape.name, world=world, source=TimingSource.SIMULATED, seconds=est.simulated,
                              bound_seconds=est.bound, baseline_seconds=est.baseline))
        return out
