#!/usr/bin/env python3
"""Bringing workloads in: the time from a user's reference file to the first `ok` candidate, and
each family's cost traced from its reference against its hand-written one.

    .venv/bin/python benchmarks/user_workloads.py [--part first_ok,costs] [--only NAME,...] [--warm]

- first_ok: for every workload `tests/user_workloads` expects to match a family (its test modules'
  ``MATCHING`` tables), in a fresh folder: `cuco init --from-reference` (the semantic check against
  every family on gloo), then `cuco evolve` of the written spec (1 generation x 2, 2 workers) with a
  cold build cache unless --warm; prints the init wall, the seconds from the start of `init` to the
  first stored `ok` evaluation, and the run's status counts.
- costs: per family with an example, the cost traced from its canonical reference
  (cuco/cost_trace.py) at its first full emulation shape on 4 ranks against `Pattern.cost`:
  FLOPs, the collective and its S, HBM bytes, as traced / hand-written ratios.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CUCO = str(Path(sys.executable).parent / "cuco")
WORKLOADS = ROOT / "tests" / "user_workloads"


def matching_workloads() -> dict[str, tuple]:
    """file stem -> (extra init args, family) from every test module's MATCHING table."""
    found: dict[str, tuple] = {}
    for test in sorted(WORKLOADS.glob("test_*.py")):
        module = importlib.import_module(f"tests.user_workloads.{test.stem}")
        for name, entry in getattr(module, "MATCHING", {}).items():
            found[name] = (tuple(entry[0]), entry[1])
    return found


def _first_ok_at(db: Path) -> float | None:
    con = sqlite3.connect(db)
    row = con.execute("select min(created_at) from evaluations where status = 'ok'").fetchone()
    con.close()
    if not row or row[0] is None:
        return None
    stamp = datetime.fromisoformat(str(row[0]))
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)).timestamp()


def first_ok_part(only: set[str], warm: bool) -> list[str]:
    rows = [f"{'workload':<36} {'family':<22} {'init s':>7} {'first ok s':>10}  status counts"]
    shared = Path(tempfile.mkdtemp(prefix="cuco-bench-cache-"))
    for name, (extra, family) in matching_workloads().items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            cache = shared if warm else Path(tmp) / "cache"
            env = {**os.environ, "CUCO_CACHE_DIR": str(cache)}
            start = time.time()
            init = subprocess.run([CUCO, "init", "--from-reference", str(WORKLOADS / f"{name}.py"), "--out", "spec",
                                   *extra], cwd=tmp, env=env, capture_output=True, text=True)
            init_s = time.time() - start
            if init.returncode:
                rows.append(f"{name:<36} {family:<22} {init_s:>7.1f} {'-':>10}  init failed: {init.stderr.strip()[:80]}")
                continue
            run = subprocess.run([CUCO, "evolve", "spec", "--run-dir", "run", "--generations", "1", "--population",
                                  "2", "--workers", "2", "--json"], cwd=tmp, env=env, capture_output=True, text=True)
            counts = json.loads(run.stdout)["status_counts"] if run.stdout.strip().startswith("{") else run.stderr[-80:]
            first = _first_ok_at(Path(tmp) / "run" / "cuco.db")
            shown = f"{first - start:>10.1f}" if first else f"{'none':>10}"
            rows.append(f"{name:<36} {family:<22} {init_s:>7.1f} {shown}  {counts}")
    return rows


def costs_part(only: set[str]) -> list[str]:
    import design_space as ds
    from cuco.cost_trace import traced_cost
    from cuco.spec_loader import load_spec

    rows = [f"{'family':<22} {'shape':<14} {'collective traced/hand':<28} {'FLOPs':>7} {'S':>7} {'HBM':>7} "
            f"{'imbalance t/h':>14}"]
    for folder in sorted(p.parent for p in (ROOT / "examples").glob("*/spec.py")):
        if only and folder.name not in only:
            continue
        spec = load_spec(folder)
        full = [s for s in spec.emulation_shapes if s.dims.get("mask", 1) == 1] or list(spec.emulation_shapes)
        shape = full[0]
        dims = shape.at(4)
        traced = traced_cost(spec, dims, 4)
        hand = ds.get_pattern(spec.pattern).cost(dims, 4, spec.dtype)

        def ratio(a: float, b: float) -> str:
            return f"{a / b:>7.3f}" if b else (f"{'=0':>7}" if not a else f"{'inf':>7}")
        rows.append(f"{spec.pattern:<22} {shape.name:<14} {traced.collective + '/' + hand.collective:<28} "
                    f"{ratio(traced.flops, hand.flops)} {ratio(traced.comm_bytes, hand.comm_bytes)} "
                    f"{ratio(traced.hbm_bytes, hand.hbm_bytes)} {traced.imbalance:>6.2f}/{hand.imbalance:<6.2f}")
    rows.append("(traced / hand-written at world 4; FLOPs and HBM bytes of the mean rank as traced, of the rank the "
                "model describes as written: kv_cache_transfer's is the busiest, prefill rank)")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="first_ok,costs")
    ap.add_argument("--only", default="", help="workload file stems or family names (comma list)")
    ap.add_argument("--warm", action="store_true", help="share one build cache across workloads")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    parts = {"first_ok": lambda: first_ok_part(only, args.warm), "costs": lambda: costs_part(only)}
    for part in args.part.split(","):
        print(f"\n== {part}")
        print("\n".join(parts[part]()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
