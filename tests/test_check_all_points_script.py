"""scripts/check_all_points.py, the all-points check, on a seeded sample of one point per
workload: it prints its table with one row per workload and exits 0 when every point passes.

It draws with the family tests' seed, so its point is the first of each family's own sample: after
tests/kernels/families (same session cache) the verdicts come from the ledger, and this checks the
script's resume path and table; run alone, it checks the six points itself."""

import subprocess
import sys
from pathlib import Path

from tests.kernels.families.family_helpers import SEED

ROOT = Path(__file__).resolve().parents[1]


def test_the_sampled_sweep_prints_a_row_per_workload(shared_cache):
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_all_points.py"), "--all", "--sample", "1",
                          "--seed", str(SEED), "--hardware", "H100", "--workers", "2", "--cache", str(shared_cache)],
                         capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    table = res.stdout.split("(median seconds per point")[1].splitlines()[1:]
    rows = {line.split()[0]: line.split() for line in table if line.strip() and not line.startswith("FAILED")}
    examples = {p.parent.name for p in (ROOT / "examples").glob("*/spec.py")}
    assert set(rows) == examples
    for name, cells in rows.items():
        assert cells[1] == "H100" and int(cells[2]) > 0 and cells[3] == cells[4] == "1", (name, cells)


def test_status_reads_the_named_ledger_with_a_declared_shape_seed(shared_cache, tmp_path):
    ledger = tmp_path / "committed-ledger.jsonl"
    ledger.write_text("")
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_all_points.py"), "examples/gemm_allgather",
                          "--status", "--hardware", "H100", "--shape-seed", "14", "--ledger", str(ledger),
                          "--cache", str(shared_cache)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    cells = res.stdout.split("(median seconds per point")[1].splitlines()[1].split()
    assert cells[:2] == ["gemm_allgather", "H100"] and int(cells[2]) > 0 and cells[3] == cells[4] == "0"
