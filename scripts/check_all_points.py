#!/usr/bin/env python3
"""Build and emulate every valid design point of a spec's template family; print the counts.

    .venv/bin/python scripts/check_all_points.py examples/allgather_gemm            # all points
    .venv/bin/python scripts/check_all_points.py examples/allgather_gemm --sample 40 --seed 1

Exit status 1 when any point fails. Builds are cached under --cache (default .cuco-cache/check).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuco.family_check import check_family  # noqa: E402
from cuco.spec_loader import load_spec  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--sample", type=int, default=None, help="check a seeded sample of this many points")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--arch", default=None, help="nvcc arch (default: the spec's hardware, e.g. sm_90)")
    ap.add_argument("--cache", default=".cuco-cache/check")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    done = 0

    def progress(r) -> None:
        nonlocal done
        done += 1
        mark = "ok  " if r.status.value == "ok" else "FAIL"
        print(f"[{done:4d}] {mark} {r.point.key():<52} {r.status.value} {r.reason[:80]}", flush=True)

    report = check_family(spec, Path(args.cache), sample=args.sample, seed=args.seed, workers=args.workers,
                          arch=args.arch, on_result=progress)
    stages = {}
    for r in report.results:
        for k, v in r.seconds.items():
            stages.setdefault(k, []).append(v)
    print(f"\n{spec.name}: {report.passed}/{len(report.results)} checked points passed "
          f"({report.total_valid} valid points in the family) in {report.wall_s:.0f} s with {args.workers} workers")
    for k, v in sorted(stages.items()):
        print(f"  {k:<18} median {statistics.median(v):6.2f} s   max {max(v):6.2f} s   (n={len(v)})")
    for r in report.failures:
        print(f"FAILED {r.point.key()}: {r.status.value}: {r.reason}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
