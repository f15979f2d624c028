"""The all-points sweep: every valid design point of a workload (or a seeded sample) on each chosen
hardware profile passes the guard, builds with nvcc for that profile's arch (nccl backend) and passes
CPU emulation at the spec's emulation world sizes against the reference on gloo.

The checks are the evaluator's own stages, with two economies that change no verdict: a rendered
source shared by several profiles is guarded and emulated once (emulation does not depend on the
GPU), and builds go through ``evaluator.build_batch`` (several sources per nvcc call; a failing batch
is rebuilt one source at a time). Verdicts go to a ``Ledger`` as they finish, so a stopped sweep
resumes where it was. ``scripts/check_all_points.py`` drives it.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from cuco.sweep_ledger import Ledger, Verdict, verdict_key
from design_space import DesignPoint, KernelSpec, get_pattern, get_profile, valid_points
from evaluator import build, build_batch, guard, shim_build
from evaluator.cascade import Evaluator, EvaluatorConfig


@dataclass(frozen=True)
class PointVerdict:
    point: DesignPoint
    hardware: str
    status: str  # the first failing check's status, "ok" when all passed
    reason: str
    build_s: float
    emulate_s: float


@dataclass(frozen=True)
class HardwareRow:
    hardware: str
    valid: int
    verdicts: tuple[PointVerdict, ...]

    @property
    def passed(self) -> int:
        return sum(v.status == "ok" for v in self.verdicts)

    @property
    def failures(self) -> list[PointVerdict]:
        return [v for v in self.verdicts if v.status not in ("ok", "not_run")]

    @property
    def checked(self) -> int:
        """Points with every verdict in (fewer than ``len(verdicts)`` only for a ``run=False`` report)."""
        return sum(v.status != "not_run" for v in self.verdicts)

    def median(self, attr: str) -> float:
        values = [getattr(v, attr) for v in self.verdicts if getattr(v, attr) > 0]
        return statistics.median(values) if values else 0.0


@dataclass(frozen=True)
class WorkloadSweep:
    workload: str
    rows: tuple[HardwareRow, ...]
    wall_s: float
    reused: int  # verdicts taken from the ledger instead of run again


@dataclass(frozen=True)
class _Item:
    source: str
    point: DesignPoint
    digest: str


def choose_points(points: Sequence[DesignPoint], sample: Optional[int], seed: int) -> list[DesignPoint]:
    """All points, or a seeded sample of them (the same sample for the same seed)."""
    return list(points) if sample is None or sample >= len(points) else random.Random(seed).sample(list(points), sample)


def sweep_workload(spec: KernelSpec, cache_dir: Path, *, hardware: Sequence[str] = ("H100", "A100"),
                   sample: Optional[int] = None, seed: int = 0, workers: int = 2, batch_size: int = 8,
                   ledger: Optional[Ledger] = None, progress: Callable[[str], None] = lambda line: None,
                   run: bool = True, shape_seed: Optional[int] = None) -> WorkloadSweep:
    """Verdicts for every chosen point; ``run=False`` only reads the ledger (unchecked points: ``not_run``).

    ``shape_seed`` draws the emulation shapes; None: the cache's secret seed, so the ledger's emulation
    verdicts hold for that cache only. A declared seed makes the whole ledger valid in any checkout
    (the sweep checks cuco's own templates, never a candidate, so its shapes need not be secret)."""
    start = time.monotonic()
    ledger = ledger if ledger is not None else Ledger(None)
    pattern = get_pattern(spec.pattern)
    evaluator = Evaluator(spec, EvaluatorConfig(cache_dir=cache_dir, gpu="off", seed=shape_seed))
    keys = _Keys(spec, evaluator)
    totals, chosen, items = {}, {}, {}
    for hw in hardware:
        points = valid_points(pattern, get_profile(hw), spec.restrictions)
        totals[hw], chosen[hw] = len(points), []
        for p in choose_points(points, sample, seed):
            src = pattern.render(p)
            digest = hashlib.sha256(src.encode()).hexdigest()
            items.setdefault(digest, _Item(src, p, digest))
            chosen[hw].append(digest)
    runner = _Runner(spec, evaluator, keys, ledger, progress, cache_dir)
    if run:
        _run_checks(runner, items, chosen, hardware, workers, batch_size)
    return _report(spec.name, hardware, totals, chosen, items, runner, start)


def _run_checks(runner: "_Runner", items: dict, chosen: dict, hardware: Sequence[str], workers: int,
                batch_size: int) -> None:
    """Guard every distinct source, then batched builds per arch and one emulation per source."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(runner.guard, items.values()))
        passing = {d for d, it in items.items() if runner.verdict("guard", it).ok}
        jobs = []
        for arch in dict.fromkeys(get_profile(hw).arch for hw in hardware):
            needed = dict.fromkeys(d for hw in hardware if get_profile(hw).arch == arch for d in chosen[hw]
                                   if d in passing)
            todo = [items[d] for d in needed if runner.unseen(runner.keys.build(items[d], arch))]
            jobs += [pool.submit(runner.build, todo[i:i + batch_size], arch) for i in range(0, len(todo), batch_size)]
        jobs += [pool.submit(runner.emulate, items[d]) for d in passing]
        for job in jobs:
            job.result()


def _report(name: str, hardware: Sequence[str], totals: dict, chosen: dict, items: dict, runner: "_Runner",
            start: float) -> WorkloadSweep:
    rows = tuple(HardwareRow(hw, totals[hw], tuple(runner.point_verdict(items[d], hw) for d in chosen[hw]))
                 for hw in hardware)
    return WorkloadSweep(name, rows, time.monotonic() - start, reused=runner.reused)


class _Keys:
    """Ledger keys: a verdict is reused only while everything it depends on is unchanged."""

    def __init__(self, spec: KernelSpec, evaluator: Evaluator) -> None:
        self.tc = evaluator.tc
        self.spec = spec
        root = Path(guard.__file__).parents[1]
        guard_files = (guard.__file__, root / "kernels" / "cuda_scan.py", root / "kernels" / "evolve_blocks.py")
        self.guard_digest = verdict_key(*(Path(f).read_text() for f in guard_files))
        cases = evaluator.reference_cases
        emulate_files = [root / "evaluator" / n for n in ("emulate.py", "emulator_io.py", "shape_draws.py",
                                                          "candidate_object.py", "allowed_symbols.txt")]
        self.emulate_digest = verdict_key(shim_build.emulator_digest(), repr(evaluator.config.emulation),
                                          repr(evaluator.config.shape_variants), repr(evaluator.config.seed),
                                          *(f.read_text() for f in emulate_files),
                                          # the reference folders under the cache (named by content
                                          # fingerprints): where the cache lies is no part of a verdict
                                          *sorted({tf.path.parent.relative_to(evaluator.config.cache_dir).as_posix()
                                                   for c in cases for r in c.ranks for tf in r.inputs}))

    def guard(self, item: _Item) -> str:
        return verdict_key("guard", item.source, item.point.key(), self.guard_digest)

    def build(self, item: _Item, arch: str) -> str:
        flags = build.build_flags(arch, "nccl", self.spec.dtype.code, self.tc)[:-2]
        return verdict_key("build", item.source, json.dumps(flags), self.tc.nvcc_version, self.tc.nccl_version,
                           build.runtime_digest())

    def emulate(self, item: _Item) -> str:
        return verdict_key("emulate", item.source, self.emulate_digest)


class _Runner:
    def __init__(self, spec: KernelSpec, evaluator: Evaluator, keys: _Keys, ledger: Ledger,
                 progress: Callable[[str], None], cache_dir: Path) -> None:
        self.spec, self.evaluator, self.keys, self.ledger, self.progress = spec, evaluator, keys, ledger, progress
        self.cache_dir = Path(cache_dir).resolve()
        self.reused = 0  # checks whose verdict was already in the ledger
        self._lock = threading.Lock()

    def verdict(self, kind: str, item: _Item, arch: str = "") -> Verdict:
        key = {"guard": lambda: self.keys.guard(item), "build": lambda: self.keys.build(item, arch),
               "emulate": lambda: self.keys.emulate(item)}[kind]()
        found = self.ledger.get(key)
        return found if found is not None else Verdict(kind, "not_run", "not checked (an earlier check failed)", 0.0)

    def unseen(self, key: str) -> bool:
        """True when the check still has to run; counts the ones the ledger already has."""
        if self.ledger.get(key) is None:
            return True
        with self._lock:
            self.reused += 1
        return False

    def guard(self, item: _Item) -> None:
        key = self.keys.guard(item)
        if self.unseen(key):
            t = time.monotonic()
            findings = guard.check(item.source, point=item.point)
            self.ledger.put(key, Verdict("guard", "rejected" if findings else "ok",
                                         str(findings[0]) if findings else "", time.monotonic() - t))

    def build(self, items: list[_Item], arch: str) -> None:
        with tempfile.TemporaryDirectory(prefix="cuco-sweep-build-") as tmp:
            out = build_batch.build_batch([it.source for it in items], arch=arch, comm_backend="nccl",
                                          dtype_code=self.spec.dtype.code, tc=self.keys.tc, cache_dir=self.cache_dir,
                                          work_dir=Path(tmp))
        for it, res in zip(items, out):
            first = next((ln for ln in res.log.splitlines() if "error" in ln), "nvcc failed")
            self.ledger.put(self.keys.build(it, arch), Verdict(f"build:{arch}", "ok" if res.ok else "build_failed",
                                                               "" if res.ok else first.strip()[:300], res.seconds))
        bad = sum(not r.ok for r in out)
        self.progress(f"{self.spec.name:<20} build {arch} x{len(items)} {'ok' if not bad else f'{bad} FAILED'} "
                      f"({sum(r.seconds for r in out):.1f} s, {'batched' if all(r.batched for r in out) else 'alone'})")

    def emulate(self, item: _Item) -> None:
        key = self.keys.emulate(item)
        if not self.unseen(key):
            return
        out = self.evaluator.emulate_source(item.source, probe=False)  # verdicts only: the probe feeds scores
        self.ledger.put(key, Verdict("emulate", out.status.value, out.reason, sum(out.seconds.values())))
        self.progress(f"{self.spec.name:<20} emulate {item.point.key():<56} {out.status.value} {out.reason[:80]}")

    def point_verdict(self, item: _Item, hardware: str) -> PointVerdict:
        arch = get_profile(hardware).arch
        checks = [self.verdict("guard", item), self.verdict("build", item, arch), self.verdict("emulate", item)]
        first_bad = next((c for c in checks if not c.ok), None)
        return PointVerdict(item.point, hardware, first_bad.status if first_bad else "ok",
                            first_bad.reason if first_bad else "", checks[1].seconds, checks[2].seconds)
