#!/usr/bin/env python3
"""Latency of the web leaderboard (`cuco serve`) over a run of 10,000 candidates, on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/web_leaderboard.py [--candidates 10000] [--requests 50] [--no-postgres]

Writes one realistic run through the real ``Store`` API (25 generations over 4 islands, ~70% ok with
timings, the rest failures with a reason and a log of a few KB, ~8 KB rendered template sources, a
few LLM calls) into a SQLite file and into a throwaway PostgreSQL server (tests/postgres_server.py),
serves each with uvicorn on 127.0.0.1 in a child process (as `cuco serve` does), and times with httpx
the runs list, the leaderboard page ``/runs/{run}`` and its JSON ``/api/runs/{run}`` (default sort,
a filtered query, a sorted query, page 50) and a candidate page, after a warm-up. Prints p50 / p95 /
max per backend and endpoint against the target (p95 < 200 ms), the insertion time, then a table.
"""

from __future__ import annotations

import argparse
import math
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Optional
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kernels  # noqa: E402,F401  (registers the templates the sources are rendered from)
import design_space as ds  # noqa: E402
from candidates_db import Store  # noqa: E402
from cuco.loop import spec_hash  # noqa: E402
from cuco.spec_loader import load_spec  # noqa: E402
from design_space.evaluation import (  # noqa: E402
    BuildStats, Evaluation, KernelStats, RankCheck, Stage, Status, Tier, Timing, TimingSource,
)
from design_space.llm import LLMCall  # noqa: E402

TARGET_P95_MS = 200.0
RUN = "allgather_gemm"
ISLANDS = 4
GENERATIONS = 25
FAILED_AT = {Status.REJECTED: Stage.GUARD, Status.BUILD_FAILED: Stage.BUILD, Status.EMULATION_FAILED: Stage.EMULATE,
             Status.WRONG_RESULT: Stage.EMULATE, Status.TIMEOUT: Stage.EMULATE, Status.CRASHED: Stage.EMULATE}
LOG_LINE = "emulate rank {r}: tile {t} chunk {c}: max_abs_err 3.2e-01 at (17, 41), expected 0.5 got nan\n"


# --- the run ---------------------------------------------------------------------------------

def _sources(spec, n: int, rng: random.Random) -> list[tuple[ds.DesignPoint, str]]:
    """``n`` real renderings of the spec's template (about 8 KB each) at random valid points."""
    pattern = ds.get_pattern(spec.pattern)
    points = rng.sample(ds.valid_points(pattern, ds.get_profile(spec.hardware)), n)
    return [(p, pattern.render(p)) for p in points]


def _log(rng: random.Random, status: Status) -> str:
    lines = [LOG_LINE.format(r=rng.randrange(8), t=rng.randrange(64), c=rng.randrange(16))
             for _ in range(rng.randint(25, 45))]
    return f"{status.value}: first failing rank below\n" + "".join(lines)


def _ok_evaluation(spec, cid: str, point: ds.DesignPoint, rng: random.Random) -> Evaluation:
    source = TimingSource.MEASURED if rng.random() < 0.1 else TimingSource.SIMULATED
    speedup = math.exp(rng.gauss(0.1, 0.35))
    timings = tuple(Timing(shape=s.name, world=spec.target_world, source=source, seconds=1e-3,
                           bound_seconds=1e-3 * rng.uniform(0.2, 0.9),
                           baseline_seconds=1e-3 * speedup * rng.uniform(0.9, 1.1)) for s in spec.shapes)
    checks = tuple(RankCheck(tier=Tier.EMULATED, world=w, shape=s.name, rank=r, ok=True, max_abs_err=1e-3)
                   for w in spec.emulation_world_sizes for s in spec.emulation_shapes for r in range(w))
    build = BuildStats(arch="sm_90a", comm_backend=point.backend.value, seconds=rng.uniform(1, 4),
                       kernels=(KernelStats(name="cuco_fused", registers=rng.randrange(64, 200),
                                            mma=rng.choice((0, 64))),))
    return Evaluation(candidate_id=cid, status=Status.OK, stage=Stage.SCORE, reason="all ranks match", build=build,
                      checks=checks, timings=timings,
                      stage_seconds={"guard": 0.01, "build": build.seconds, "emulate": 1.3},
                      logs="nvcc: ok\nemulate: all ranks passed\n", observed_point=point.key())


def _failed_evaluation(cid: str, rng: random.Random) -> Evaluation:
    status = rng.choice(list(FAILED_AT))
    stage = FAILED_AT[status]
    return Evaluation(candidate_id=cid, status=status, stage=stage,
                      reason=f"{status.value} at {stage.value}: rank {rng.randrange(8)} "
                             f"tile {rng.randrange(64)} differs",
                      stage_seconds={"guard": 0.01, stage.value: rng.uniform(0.1, 5)}, logs=_log(rng, status))


def _llm_call(cid: Optional[str], n: int, rng: random.Random, t0: datetime) -> LLMCall:
    prompt = "You write CUDA kernels. Improve this one:\n" + "x" * rng.randrange(6000, 12000)
    return LLMCall(purpose="slow_path.mutate", candidate_id=cid, agent_step=f"slow_path:call{n}", provider="anthropic",
                   model="claude-bench", prompt=prompt, response="<<<SEARCH\n" + "y" * rng.randrange(2000, 8000),
                   prompt_chars=len(prompt), tokens_in=len(prompt) // 4, tokens_out=1500, latency_s=rng.uniform(5, 40),
                   cost_usd=rng.uniform(0.01, 0.08), created_at=t0 + timedelta(minutes=n))


def _candidate(i: int, per_gen: int, sources, pool: dict[tuple[int, int], list[str]],
               rng: random.Random) -> ds.Candidate:
    """The ``i``-th candidate: parents from the previous generation of its island, 1 in 200 by an LLM."""
    gen, island = i // per_gen, i % ISLANDS
    point, text = sources[rng.randrange(len(sources))]
    before = pool.get((gen - 1, island), [])
    parents = tuple(rng.sample(before, min(len(before), rng.choice((1, 1, 2)))))
    origin = (ds.Origin(kind="llm", model="claude-bench", patch_type="diff") if i % 200 == 7
              else ds.Origin(kind="template", patch_type=rng.choice(("mutate", "crossover"))))
    return ds.Candidate(parent_ids=parents, generation=gen, island=island, origin=origin, point=point,
                        source=text + f"\n// variant {i}: generation {gen}, island {island}\n")


def populate(store: Store, spec, n: int, seed: int = 0) -> str:
    """Write the run (candidates, evaluations, LLM calls); returns the id of a mid-run ok candidate."""
    rng, now = random.Random(seed), datetime.now(timezone.utc)
    store.create_run(ds.RunInfo(name=RUN, spec_name=spec.name, pattern=spec.pattern, spec_hash=spec_hash(spec),
                                spec_json=spec.model_dump_json(),
                                config={"generations": GENERATIONS, "islands": ISLANDS},
                                status=ds.RunStatus.COMPLETE, created_at=now, updated_at=now))
    sources, per_gen = _sources(spec, 60, rng), max(1, math.ceil(n / GENERATIONS))
    pool: dict[tuple[int, int], list[str]] = {}
    shown = ""
    for i in range(n):
        cand = _candidate(i, per_gen, sources, pool, rng)
        store.add_candidate(RUN, cand)
        ok = rng.random() < 0.7
        store.add_evaluation(_ok_evaluation(spec, cand.id, cand.point, rng) if ok else _failed_evaluation(cand.id, rng))
        if cand.origin.kind.value == "llm":
            store.add_llm_call(RUN, _llm_call(cand.id, i, rng, now))
        pool.setdefault((cand.generation, cand.island), []).append(cand.id)
        shown = cand.id if ok and cand.generation <= GENERATIONS // 2 else shown
    return shown


# --- serving and timing ----------------------------------------------------------------------

SERVE = """
import sys, uvicorn
from cuco.web.app import create_app
uvicorn.run(create_app(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """The app over ``db_url`` in a child process on 127.0.0.1 (what `cuco serve` runs); always stopped."""

    def __init__(self, db_url: str) -> None:
        self.db_url, self.port = db_url, _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "Served":
        import httpx
        self.proc = subprocess.Popen([sys.executable, "-c", SERVE, self.db_url, str(self.port)], cwd=ROOT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the web app exited with {self.proc.returncode} before serving")
            try:
                if httpx.get(self.base + "/api/runs", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("the web app did not answer /api/runs within 60 s")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def endpoints(candidate: str) -> dict[str, str]:
    run = quote(RUN, safe="")
    board = {"default": "", "filtered": "?status=ok&backend=lsa&timing=simulated",
             "sorted": "?sort=speedup&order=asc", "sorted by SOL": "?sort=sol&order=desc", "page 50": "?page=50"}
    out = {"runs list": "/", "runs list JSON": "/api/runs"}
    for name, query in board.items():
        out[f"leaderboard {name}"] = f"/runs/{run}{query}"
        out[f"leaderboard {name} JSON"] = f"/api/runs/{run}{query}"
    out["candidate"] = f"/candidates/{candidate}"
    out["candidate JSON"] = f"/api/candidates/{candidate}"
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def time_endpoint(client, path: str, requests: int, warmup: int) -> dict[str, float]:
    """Milliseconds per request (each must answer 200 with a body) after ``warmup`` untimed ones."""
    times = []
    for i in range(warmup + requests):
        start = time.perf_counter()
        r = client.get(path)
        elapsed = (time.perf_counter() - start) * 1e3
        if r.status_code != 200 or not r.content:
            raise RuntimeError(f"GET {path} answered {r.status_code}: {r.text[:300]}")
        if i >= warmup:
            times.append(elapsed)
    return {"p50": _percentile(times, 0.5), "p95": _percentile(times, 0.95), "max": max(times),
            "kb": len(r.content) / 1024}


# --- per backend, and the report -------------------------------------------------------------

Result = tuple[str, str, dict[str, float]]  # backend, endpoint, figures


def bench_backend(backend: str, db_url: str, spec, args: argparse.Namespace) -> tuple[list[Result], float]:
    import httpx
    start = time.monotonic()
    with Store.open(db_url) as store:
        candidate = populate(store, spec, args.candidates)
    insert_s = time.monotonic() - start
    print(f"\n{backend}: wrote {args.candidates} candidates (+ evaluations, LLM calls) through Store in "
          f"{insert_s:.1f} s ({args.candidates / insert_s:.0f} candidates/s)", flush=True)
    results: list[Result] = []
    with Served(db_url) as served, httpx.Client(base_url=served.base, timeout=60) as client:
        total = client.get(f"/api/runs/{quote(RUN, safe='')}").json().get("total")
        if total != args.candidates:
            raise RuntimeError(f"the leaderboard JSON says total={total}, the run has {args.candidates}")
        for label, path in endpoints(candidate).items():
            figures = time_endpoint(client, path, args.requests, args.warmup)
            results.append((backend, label, figures))
            print(f"  {label:<31} p50 {figures['p50']:7.1f} ms  p95 {figures['p95']:7.1f} ms  "
                  f"max {figures['max']:7.1f} ms  {figures['kb']:7.1f} KB  {_verdict(figures)}", flush=True)
    return results, insert_s


def _verdict(figures: dict[str, float]) -> str:
    return "ok" if figures["p95"] < TARGET_P95_MS else f"OVER {TARGET_P95_MS:.0f} ms"


def _postgres(stack) -> str:
    """A database on a throwaway server, stopped when ``stack`` closes."""
    from sqlalchemy.engine import make_url
    from tests import postgres_server
    bindir = postgres_server.pg_bindir()
    if bindir is None:
        raise SystemExit("PostgreSQL binaries (initdb, pg_ctl) not found: install postgresql or pass --no-postgres")
    admin, stop = postgres_server.start_server(bindir)
    stack.callback(stop)
    postgres_server.admin_exec(admin, 'CREATE DATABASE "cuco_bench"')
    return make_url(admin).set(database="cuco_bench").render_as_string(hide_password=False)


def print_table(results: list[Result], inserts: dict[str, float], args: argparse.Namespace) -> None:
    print(f"\n{args.candidates} candidates, {args.requests} timed requests per endpoint after {args.warmup} "
          f"warm-up; target p95 < {TARGET_P95_MS:.0f} ms for the leaderboard and its JSON")
    print(f"{'backend':<10} {'endpoint':<31} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'KB':>7}  target")
    for backend, label, f in results:
        print(f"{backend:<10} {label:<31} {f['p50']:8.1f} {f['p95']:8.1f} {f['max']:8.1f} {f['kb']:7.1f}  "
              f"{_verdict(f)}")
    for backend, seconds in inserts.items():
        print(f"{backend:<10} {'insert (Store API)':<31} {seconds:8.1f} s total, "
              f"{seconds / args.candidates * 1e3:.1f} ms per candidate")


def main() -> int:
    import contextlib
    import shutil
    import signal
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=50, help="timed requests per endpoint")
    ap.add_argument("--warmup", type=int, default=5, help="untimed requests per endpoint first")
    ap.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = ap.parse_args()
    # a kill (not only Ctrl-C) still stops the servers and removes the files
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    spec = load_spec(ROOT / "examples" / "allgather_gemm")
    results: list[Result] = []
    inserts: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(tempfile.mkdtemp(prefix="cuco-web-bench-"))
        stack.callback(shutil.rmtree, tmp, True)
        backends = {"sqlite": str(tmp / "cuco.db")}
        if not args.no_postgres:
            backends["postgresql"] = _postgres(stack)
        for backend, url in backends.items():
            got, inserts[backend] = bench_backend(backend, url, spec, args)
            results += got
    print_table(results, inserts, args)
    return 0 if all(f["p95"] < TARGET_P95_MS for _, label, f in results if label.startswith("leaderboard")) else 1


if __name__ == "__main__":
    raise SystemExit(main())
