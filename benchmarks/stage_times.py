#!/usr/bin/env python3
"""Per-candidate time by stage, and end-to-end candidates per minute of `cuco evolve`.

    .venv/bin/python benchmarks/stage_times.py [--points 8] [--generations 3] [--population 8]

Everything runs in fresh temporary caches, so "cold" numbers are really cold. Stages:
guard, build cold / cached (nvcc -cubin sm_90, nccl backend), emulate compile (g++ + shim),
emulate at 2 and 4 ranks, simulate, store (SQLite). The build runs beside the emulation, so the
stage rows add up to more than the wall-time totals. The loop overhead is the share of a
single-worker run's wall time (after the one-off reference run) not spent in nvcc, g++ or the
emulator (per candidate, the longer of the build and the emulation).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cuco  # noqa: E402
import design_space as ds  # noqa: E402
from candidates_db import Store  # noqa: E402
from cuco.loop import spec_hash  # noqa: E402
from cuco.spec_loader import load_spec  # noqa: E402
from evaluator.cascade import Evaluator, EvaluatorConfig  # noqa: E402



def _row(name: str, values: list[float]) -> str:
    return f"  {name:<22} median {statistics.median(values) * 1e3:9.1f} ms   min {min(values) * 1e3:9.1f}   " \
           f"max {max(values) * 1e3:9.1f}   (n={len(values)})"


def stage_times(spec: ds.KernelSpec, n: int, tmp: Path) -> None:
    evaluator = Evaluator(spec, EvaluatorConfig(cache_dir=tmp / "cache"))
    t = time.monotonic()
    evaluator.prepare()
    print(f"one-off: reference on gloo (worlds {spec.emulation_world_sizes}) + emulator runtime: "
          f"{time.monotonic() - t:.1f} s")
    pattern = ds.get_pattern(spec.pattern)
    points = random.Random(0).sample(ds.valid_points(pattern, ds.get_profile(spec.hardware)), n)
    stages: dict[str, list[float]] = {}
    store = Store.open(tmp / "bench.db")
    now = datetime.now(timezone.utc)
    store.create_run(ds.RunInfo(name="bench", spec_name=spec.name, pattern=spec.pattern, spec_hash=spec_hash(spec),
                                spec_json=spec.model_dump_json(), created_at=now, updated_at=now))
    for p in points:
        cand = ds.Candidate(origin=ds.Origin(kind="template"), source=pattern.render(p), point=p)
        for attempt in (0, 1):  # the second evaluation hits the build cache
            t = time.monotonic()
            ev = evaluator.evaluate(cand)
            stages.setdefault("evaluate (total)" if attempt == 0 else "evaluate cached (total)", []).append(
                time.monotonic() - t)
            assert ev.status is ds.Status.OK, (p.key(), ev.reason)
            for k, v in ev.stage_seconds.items():
                if attempt == 0 or k == "build_cached":
                    stages.setdefault(k, []).append(v)
        t = time.monotonic()
        store.add_candidate("bench", cand)
        store.add_evaluation(ev)
        stages.setdefault("store", []).append(time.monotonic() - t)
    store.close()
    print(f"per-candidate stage times over {n} sampled design points (build runs beside emulate_*: the stage rows "
          f"are each stage's own time, the totals are wall time):")
    named = ("guard", "build", "build_cached", "emulate_compile", "emulate_w2", "emulate_w4", "score", "simulate",
             "store", "evaluate (total)", "evaluate cached (total)")
    for k in (*named, *sorted(set(stages) - set(named))):
        if k in stages:
            print(_row(k, stages[k]))


def _critical_path(stage_seconds: dict) -> float:
    """An evaluation's time in the toolchain and emulator: the build runs beside the emulation."""
    emulation = sum(v for k, v in stage_seconds.items() if k.startswith("emulate"))
    built = max(stage_seconds.get("build", 0.0), stage_seconds.get("build_cached", 0.0))
    return max(built, emulation)


def end_to_end(spec: ds.KernelSpec, generations: int, population: int, workers: int, tmp: Path) -> None:
    run_dir = tmp / f"run-w{workers}"
    cache = tmp / f"cache-w{workers}"
    evaluator = Evaluator(spec, EvaluatorConfig(cache_dir=cache))
    t = time.monotonic()
    evaluator.prepare()  # one-off, reported apart from the loop
    prep = time.monotonic() - t
    summary = cuco.evolve(spec, run_dir=run_dir, generations=generations, population=population, workers=workers,
                          cache_dir=cache)
    with Store.open(run_dir / "cuco.db") as store:
        evals = [store.evaluation(c.id) for c in store.candidates(summary.run.name)]
    busy = sum(_critical_path(e.stage_seconds) for e in evals)
    n = len(evals)
    wall = summary.wall_s
    print(f"cuco evolve, {generations} generations x {population}, {workers} worker(s): {n} candidates in {wall:.1f} s "
          f"-> {n / wall * 60:.1f} candidates/min (reference run beforehand: {prep:.1f} s)")
    if workers == 1:
        print(f"  time in nvcc/g++/emulator (build beside emulation): {busy:.1f} s; loop overhead: {wall - busy:.2f} s "
              f"= {(wall - busy) / wall * 100:.1f}% of the wall time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="examples/allgather_gemm")
    ap.add_argument("--points", type=int, default=8)
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--population", type=int, default=8)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    with tempfile.TemporaryDirectory(prefix="cuco-bench-") as tmp:
        stage_times(spec, args.points, Path(tmp))
        end_to_end(spec, args.generations, args.population, 1, Path(tmp))
        end_to_end(spec, args.generations, args.population, 2, Path(tmp))


if __name__ == "__main__":
    main()
