#!/usr/bin/env python3
"""Build and emulate every valid design point of each workload's template family; print a table of
counts and per-candidate times per workload and hardware profile.

    .venv/bin/python scripts/check_all_points.py --all                                    # everything
    .venv/bin/python scripts/check_all_points.py examples/allgather_gemm --sample 40 --seed 1
    .venv/bin/python scripts/check_all_points.py --all --sample 6 --hardware H100          # what CI samples

Each profile's valid points are built with nvcc for its arch (H100: sm_90, A100: sm_80, nccl comm
backend) and emulated on the CPU at the spec's emulation world sizes (2 and 4 ranks) against the
reference on gloo. Exit status 1 when any point fails. Builds are cached under --cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cuco.family_check import FamilyReport, check_family  # noqa: E402
from cuco.spec_loader import load_spec  # noqa: E402


def _median(report: FamilyReport, *prefixes: str) -> float:
    values = [sum(v for k, v in r.seconds.items() if k.startswith(prefixes)) for r in report.results]
    values = [v for v in values if v > 0]
    return statistics.median(values) if values else 0.0


def _row(name: str, hardware: str, report: FamilyReport) -> str:
    return (f"{name:<22} {hardware:<6} {report.total_valid:>6} {len(report.results):>7} {report.passed:>6} "
            f"{_median(report, 'build'):>8.2f} {_median(report, 'emulate'):>8.2f} {report.wall_s:>8.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", help="spec folders (default with --all: every examples/*/spec.py)")
    ap.add_argument("--all", action="store_true", help="every workload under examples/")
    ap.add_argument("--hardware", default="H100,A100", help="profiles whose valid points to check (comma list)")
    ap.add_argument("--sample", type=int, default=None, help="check a seeded sample of this many points per family")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--cache", default=".cuco-cache/check")
    args = ap.parse_args()
    specs = list(args.specs) or ([str(p.parent) for p in sorted((ROOT / "examples").glob("*/spec.py"))]
                                 if args.all else [])
    if not specs:
        ap.error("name spec folders or pass --all")
    rows, failures = [], []
    for folder in specs:
        spec = load_spec(folder)
        for hardware in args.hardware.split(","):
            def progress(r, hw=hardware) -> None:
                mark = "ok  " if r.status.value == "ok" else "FAIL"
                print(f"{spec.name:<20} {hw:<5} {mark} {r.point.key():<56} {r.status.value} {r.reason[:80]}",
                      flush=True)
            report = check_family(spec, Path(args.cache), sample=args.sample, seed=args.seed, workers=args.workers,
                                  hardware=hardware, on_result=progress)
            rows.append(_row(spec.name, hardware, report))
            failures += [f"{spec.name} {hardware} {r.point.key()}: {r.status.value}: {r.reason}" for r in report.failures]
    print(f"\n{'workload':<22} {'hw':<6} {'valid':>6} {'checked':>7} {'passed':>6} {'build s':>8} {'emu s':>8} "
          f"{'wall s':>8}   (median seconds per candidate; build 0 = cached)")
    print("\n".join(rows))
    for line in failures:
        print("FAILED", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
