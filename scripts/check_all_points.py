#!/usr/bin/env python3
"""Build and emulate every valid design point of each workload's template family; print a table of
counts and per-candidate times per workload and hardware profile.

    .venv/bin/python scripts/check_all_points.py --all                                    # everything
    .venv/bin/python scripts/check_all_points.py examples/allgather_gemm --sample 40 --seed 1
    .venv/bin/python scripts/check_all_points.py --all --sample 6 --hardware H100          # what CI samples

Each profile's valid points pass the guard, build with nvcc for its arch (H100: sm_90, A100: sm_80,
nccl comm backend) and are emulated on the CPU at the spec's emulation world sizes (2 and 4 ranks)
against the reference on gloo (cuco/point_sweep.py). Verdicts are kept in a ledger under --cache, so
a stopped sweep resumes where it was (--fresh ignores it; --status only counts what it holds). Exit
status 1 when any point fails.

By default the emulation shapes are drawn with the cache's secret seed, so the ledger holds for that
cache only. --shape-seed N declares the seed instead, and --ledger puts the ledger where it can be
committed: another checkout (or a fresh clone) resumes from it.

    .venv/bin/python scripts/check_all_points.py --all --shape-seed 14 --ledger docs/all_points_ledger.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cuco.point_sweep import WorkloadSweep, sweep_workload  # noqa: E402
from cuco.spec_loader import load_spec  # noqa: E402
from cuco.sweep_ledger import Ledger  # noqa: E402


def _rows(result: WorkloadSweep) -> list[str]:
    return [f"{result.workload:<22} {row.hardware:<6} {row.valid:>6} {row.checked:>7} {row.passed:>6} "
            f"{row.median('build_s'):>8.2f} {row.median('emulate_s'):>8.2f} {result.wall_s:>8.0f}"
            for row in result.rows]


def _summary(result: WorkloadSweep) -> dict:
    return {"workload": result.workload, "wall_s": round(result.wall_s, 1), "reused_checks": result.reused,
            "profiles": [{"hardware": row.hardware, "valid": row.valid, "checked": row.checked,
                          "passed": row.passed, "median_build_s": round(row.median("build_s"), 3),
                          "median_emulate_s": round(row.median("emulate_s"), 3),
                          "failures": [{"point": v.point.key(), "status": v.status, "reason": v.reason}
                                       for v in row.failures]} for row in result.rows]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", help="spec folders (default with --all: every examples/*/spec.py)")
    ap.add_argument("--all", action="store_true", help="every workload under examples/")
    ap.add_argument("--hardware", default="H100,A100", help="profiles whose valid points to check (comma list)")
    ap.add_argument("--sample", type=int, default=None, help="check a seeded sample of this many points per profile")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=8, help="sources per nvcc call (1: one build per point)")
    ap.add_argument("--cache", default=".cuco-cache/check")
    ap.add_argument("--fresh", action="store_true", help="ignore verdicts already in the cache's ledger")
    ap.add_argument("--ledger", help="the ledger file (default: <cache>/sweep-ledger.jsonl)")
    ap.add_argument("--shape-seed", type=int, default=None,
                    help="draw the emulation shapes with this declared seed (default: the cache's secret one); "
                         "a ledger written with it resumes in any checkout")
    ap.add_argument("--out", help="also write the counts, times and failures as JSON here")
    ap.add_argument("--status", action="store_true", help="run nothing: count what the ledger already holds")
    args = ap.parse_args()
    specs = list(args.specs) or ([str(p.parent) for p in sorted((ROOT / "examples").glob("*/spec.py"))]
                                 if args.all else [])
    if not specs:
        ap.error("name spec folders or pass --all")
    cache = Path(args.cache).resolve()
    ledger_path = Path(args.ledger).resolve() if args.ledger else cache / "sweep-ledger.jsonl"
    ledger = Ledger(None if args.fresh else ledger_path)
    rows, failures, summaries = [], [], []
    for folder in specs:
        result = sweep_workload(load_spec(folder), cache, hardware=args.hardware.split(","), sample=args.sample,
                                seed=args.seed, workers=args.workers, batch_size=max(1, args.batch), ledger=ledger,
                                progress=lambda line: print(line, flush=True), run=not args.status,
                                shape_seed=args.shape_seed)
        rows += _rows(result)
        summaries.append(_summary(result))
        failures += [f"{result.workload} {v.hardware} {v.point.key()}: {v.status}: {v.reason}"
                     for row in result.rows for v in row.failures]
    if args.out:
        Path(args.out).write_text(json.dumps(summaries, indent=1) + "\n")
    print(f"\n{'workload':<22} {'hw':<6} {'valid':>6} {'checked':>7} {'passed':>6} {'build s':>8} {'emu s':>8} "
          f"{'wall s':>8}   (median seconds per point; build s is its share of a batched nvcc call)")
    print("\n".join(rows))
    for line in failures:
        print("FAILED", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
