#!/usr/bin/env python3
"""Scaling out: candidates per minute by worker count, Ray's per-candidate overhead over the local
pool, database write latency under 4 concurrent writers, and a Ray scheduling simulation.

    .venv/bin/python benchmarks/scale_out.py [--part workers,ray,db,schedule] [--no-postgres]

- workers: `cuco.evolve` of examples/allgather_gemm (2 generations x 4) with 1, 2 and 4 workers,
  each with a cold cache of its own (builds are cached by content: a warm one would flatter the
  later runs); candidates per minute of evaluation wall time.
- ray: the same 6 candidates (warm cache) through the local launcher and through a local Ray
  (tasks of one CPU); the wall per candidate of each and the difference.
- db: 4 processes each storing 50 candidates and their evaluations into one SQLite file and one
  PostgreSQL database (a throwaway server, tests/postgres_server.py); p50 / p95 of one write.
- schedule: a local Ray with 64 stand-in GPUs (a custom resource); 96 evaluations needing 8, 4 or 2
  GPUs (world sizes 8, 4, 2; 1:1:1) that hold them for a stated GPU time (verify + bench: 8 s at
  world 8, 6 s at 4, 4 s at 2), submitted all at once to a cluster whose worker
  processes are already started; each stand-in GPU's busy share over the makespan (target >= 90%)
  and what limits it.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def workers_part() -> list[str]:
    import cuco

    out = []
    for w in (1, 2, 4):
        with tempfile.TemporaryDirectory() as tmp:
            import os
            os.environ["CUCO_CACHE_DIR"] = str(Path(tmp) / "cache")
            s = cuco.evolve(str(ROOT / "examples" / "allgather_gemm"), run_dir=Path(tmp) / "run", generations=2,
                            population=4, workers=w, progress=False)
            evaluate = s.seconds.get("evaluate", s.wall_s)
            out.append(f"workers {w}: {s.evaluated_now} candidates, evaluation wall {evaluate:.1f} s -> "
                       f"{60 * s.evaluated_now / evaluate:.1f} candidates/min (whole run {s.wall_s:.1f} s)")
    return out


def _candidates(ev, n: int):
    import design_space as ds
    from design_space.space import valid_points

    points = [p for p in valid_points(ev.pattern, ev.hardware) if p.backend.value == "lsa"][:n]
    return [ds.Candidate(origin=ds.Origin(kind="template"), source=ev.pattern.render(p), point=p) for p in points]


def ray_part() -> list[str]:
    import ray

    from cuco.spec_loader import load_spec
    from evaluator import launchers
    from evaluator.cascade import Evaluator, EvaluatorConfig

    cache = Path(tempfile.mkdtemp()) / "cache"
    ev = Evaluator(load_spec(ROOT / "examples" / "allgather_gemm"), EvaluatorConfig(cache_dir=cache))
    ev.prepare()
    cands = _candidates(ev, 6)
    for c in cands:  # warm the build cache: both launchers then do the same work
        ev.evaluate(c)
    rows = []
    for name, make in (("local", lambda: launchers.LocalLauncher(2)),
                       ("ray", lambda: launchers.RayLauncher(init_kwargs={"num_cpus": 2}))):
        launcher = make()
        start = time.monotonic()
        futures = [launcher.submit(launchers.job_for(ev, c, None, None)) for c in cands]
        assert all(f.result(timeout=900).status.value == "ok" for f in futures)
        rows.append((name, (time.monotonic() - start) / len(cands)))
        launcher.close()
    ray.shutdown()
    (_, local), (_, remote) = rows
    return [f"{name}: {per:.2f} s per candidate (2 slots, warm build cache)" for name, per in rows] + \
        [f"Ray's overhead: {remote - local:+.2f} s per candidate ({remote / local:.2f}x the local pool)"]


def _writer(url: str, writer: int, n: int, out) -> None:
    from candidates_db import Store
    from tests.candidates_db.test_store import make_candidate, make_evaluation

    times = []
    with Store.open(url) as s:
        for i in range(n):
            c = make_candidate(f"b{writer}c{i:08d}", source=f"// {writer} {i}" + "x" * 8000)
            t = time.perf_counter()
            s.add_candidate("r1", c)
            s.add_evaluation(make_evaluation(c.id))
            times.append(time.perf_counter() - t)
    out.put(times)


def db_part(postgres: bool) -> list[str]:
    from candidates_db import Store
    from tests.candidates_db.test_store import make_run

    urls = [("SQLite", str(Path(tempfile.mkdtemp()) / "cuco.db"))]
    stop = None
    if postgres:
        from tests import postgres_server
        admin, stop = postgres_server.start_server(postgres_server.pg_bindir())
        postgres_server.admin_exec(admin, 'CREATE DATABASE "bench"')
        from sqlalchemy.engine import make_url
        urls.append(("PostgreSQL", make_url(admin).set(database="bench").render_as_string(hide_password=False)))
    rows = []
    try:
        for name, url in urls:
            with Store.open(url) as s:
                s.create_run(make_run())
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            procs = [ctx.Process(target=_writer, args=(url, w, 50, q)) for w in range(4)]
            for p in procs:
                p.start()
            times = sorted(t for _ in procs for t in q.get(timeout=600))
            for p in procs:
                p.join()
            rows.append(f"{name}, 4 writers: one candidate + its evaluation p50 {1000 * statistics.median(times):.1f} ms, "
                        f"p95 {1000 * times[int(0.95 * len(times))]:.1f} ms ({len(times)} writes)")
    finally:
        if stop:
            stop()
    return rows


def schedule_part() -> list[str]:
    import ray

    gpus, scale = 64, 1.0
    # keep idle workers alive (Ray kills those beyond num_cpus after 1 s by default): on a real
    # cluster each GPU slot's worker is long-lived
    ray.init(num_cpus=2, resources={"stand_in_gpu": gpus}, log_to_driver=False,
             _system_config={"idle_worker_killing_time_threshold_ms": 600_000, "num_workers_soft_limit": gpus})

    @ray.remote(num_cpus=0)
    def evaluation(seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    jobs = [(8, 8.0), (4, 6.0), (2, 4.0)] * 32
    # a long-lived cluster keeps its worker processes: start them first (one per concurrent task)
    ray.get([evaluation.options(resources={"stand_in_gpu": 2}).remote(0.5) for _ in range(gpus // 2)])
    start = time.monotonic()
    refs = [evaluation.options(resources={"stand_in_gpu": g}).remote(t * scale) for g, t in jobs]
    ray.get(refs)
    makespan = time.monotonic() - start
    ray.shutdown()
    busy = sum(g * t * scale for g, t in jobs)
    ideal = busy / gpus
    return [f"{len(jobs)} evaluations on {gpus} stand-in GPUs: makespan {makespan:.2f} s, ideal {ideal:.2f} s, "
            f"busy share {busy / (gpus * makespan):.1%}",
            "what limits it: Ray's per-task scheduling latency (a few ms, against the 4-8 s GPU times "
            "here), worker processes a cold cluster must start first, and the last wave, "
            "when fewer evaluations are left than GPUs"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="workers,ray,db,schedule")
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    parts = {"workers": workers_part, "ray": ray_part, "db": lambda: db_part(not args.no_postgres),
             "schedule": schedule_part}
    for name in args.part.split(","):
        print(f"== {name}", flush=True)
        for line in parts[name]():
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
