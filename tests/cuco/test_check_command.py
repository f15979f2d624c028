"""`cuco check SPEC FILE.cu`: a hand-written source through the evaluator cascade, its verdict as the
exit code (0 ok, 1 failed, 2 usage), the evaluation as JSON, and `--run` storing it in a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import design_space as ds
from candidates_db import Store
from cuco.cli import app

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE = str(ROOT / "examples" / "allgather_gemm")
KEY = "lsa/fused_persistent/per_tile_signal/cta/16K/2"
GOOD = ds.get_pattern("allgather_gemm").render(ds.DesignPoint.parse_key(KEY))


def _check(*args: str):
    return CliRunner().invoke(app, ["check", EXAMPLE, *args])


def _write(tmp_path: Path, source: str, name: str = "mine.cu") -> str:
    path = tmp_path / name
    path.write_text(source)
    return str(path)


def test_an_honest_kernel_is_ok_with_its_build_checks_and_simulated_score(tmp_path):
    result = _check(_write(tmp_path, GOOD), "--point", KEY)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "verdict: ok" in text and "registers" in text and "fused_kernel" in text
    assert "checks against the reference" in text and "emulated" in text
    assert "geomean speedup over the host-driven baseline" in text and "simulated" in text and "SIMULATED" in text


def test_a_kernel_that_does_not_compile_fails_with_exit_1_and_its_status(tmp_path):
    broken = GOOD.replace("const Problem p = problem(c);", "const Problem p = problem(c) +;", 1)
    assert broken != GOOD
    result = _check(_write(tmp_path, broken), "--point", KEY)
    assert result.exit_code == 1, result.output
    assert "verdict: build_failed" in result.stdout and "expected an expression" in result.stdout
    assert "score: none" in result.stdout


def test_json_is_the_evaluation_and_run_stores_the_candidate_in_the_specs_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _check(_write(tmp_path, GOOD), "--json", "--run", "hand")
    assert result.exit_code == 0, result.output
    ev = ds.Evaluation.model_validate_json(result.stdout)
    assert ev.status is ds.Status.OK and ev.checked_worlds() == (2, 4)
    # no --point: the score follows the point the code was observed to implement (at the emulation
    # shapes each peer sends one chunk, so per-tile signalling reads as per-peer without a declaration)
    assert ev.timings and ev.features is not None and ev.features.tensor_core
    assert ev.observed_point in (KEY, KEY.replace("per_tile_signal", "per_peer_signal"))
    db = tmp_path / "runs" / "allgather_gemm" / "cuco.db"  # where `cuco evolve` keeps the spec's run
    with Store.open(db) as store:
        (cand,) = store.candidates("hand")
        assert cand.id == ev.candidate_id and cand.source == GOOD and cand.origin.label() == "manual/check"
        assert store.evaluation(cand.id).status is ds.Status.OK
    shown = CliRunner().invoke(app, ["show", cand.id, "--db", str(db), "--json"])
    assert json.loads(shown.stdout)["candidate"]["id"] == cand.id
    again = _check(_write(tmp_path, GOOD, "copy.cu"), "--run", "hand", "--hardware", "A100")
    assert again.exit_code == 2 and "different spec" in again.output  # refused before any evaluation


def _cuco(*args: str, cwd: Path) -> tuple[int, str]:
    res = subprocess.run([CUCO, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    return res.returncode, res.stderr


@pytest.mark.parametrize("args,needle", [
    (["check", EXAMPLE, "missing.cu"], "no file at missing.cu"),
    (["check", EXAMPLE, "{good}", "--point", "lsa/nowhere"], "cannot parse design point"),
    (["check", EXAMPLE, "{good}", "--point", "multimem/sequential/global_barrier/cta/64K/8", "--hardware", "A100"],
     "multimem_needs_hopper_and_nvswitch"),
    (["check", "no/such/spec", "{good}"], "no spec at"),
    (["check", EXAMPLE, "{good}", "--run", "runs/allgather_gemm"], "--run takes a run name"),
])
def test_usage_errors_are_one_line_naming_the_fix_with_exit_2(tmp_path, args, needle):
    good = _write(tmp_path, GOOD)
    rc, err = _cuco(*(a.replace("{good}", good) for a in args), cwd=tmp_path)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: ") and "-- fix: " in lines[0] and needle in lines[0]
    assert not (tmp_path / "runs").exists()  # nothing written
