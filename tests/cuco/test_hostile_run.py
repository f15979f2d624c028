"""A real `cuco evolve` run whose database holds hostile candidates next to honest ones (as a
proposer or a killed run would leave them: stored, not yet evaluated). The run must complete, store
each hostile one with its failure status and reason, evaluate the honest ones `ok`, and `cuco
leaderboard` / `cuco show` must print what the hostile ones left (markup, terminal control) as text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

import design_space as ds
from candidates_db import Store
from cuco.cli import app
from cuco.loop import spec_hash
from tests.evaluator.adversarial import escape_kernels as X, hostile_kernels as K
from tests.evaluator.adversarial.honest_kernels import ALLGATHER_GEMM

pytestmark = pytest.mark.slow

CUCO = str(Path(sys.executable).parent / "cuco")
ROOT = Path(__file__).resolve().parents[2]


def seed_point(spec: ds.KernelSpec) -> str:
    """A valid point of the spec's family: its template render joins the run through --point."""
    from design_space.space import valid_points
    return valid_points(ds.get_pattern(spec.pattern), ds.get_profile(spec.hardware))[0].key()


def hostile(run_dir: Path) -> dict[str, tuple[str, ds.Status, tuple[str, ...]]]:
    """name -> (source, status, words of the reason)."""
    db = run_dir / "cuco.db"
    return {
        "harness_exit_code": (X.exits_with_the_harness_code(), ds.Status.REJECTED, ("_Exit: ending the process",)),
        "exit_code": (X.exits_with_a_code(3, K.AG), ds.Status.REJECTED, ("exit: ending the process",)),
        "deletes_the_database": (X.deletes_files(str(db), str(db) + "-journal"), ds.Status.REJECTED,
                                 ("remove: file access",)),
        "fills_the_disk": (X.fills_the_disk(), ds.Status.REJECTED, ("fopen: file access",)),
        "floods_stdout": (X.floods_stdout(256), ds.Status.WRONG_RESULT, ("never written",)),
        "prints_emu_ok": (K.prints_emu_ok_and_does_nothing(), ds.Status.WRONG_RESULT, ("never written",)),
        "own_main": (K.own_main(), ds.Status.REJECTED, ("defines main",)),
        "peer_input": (K.peer_input_through_the_symmetric_buffer(), ds.Status.CRASHED,
                       ("touched rank", "'s input 0 of call 1")),  # which rank faults first is the schedule's
        "markup_crash": (X.markup_in_the_crash_reason(), ds.Status.CRASHED, ("[link=file:/etc/passwd]", "\x1b")),
        "markup_deadlock": (X.markup_in_the_deadlock_reason(K.AG), ds.Status.TIMEOUT, ("deadlock", "\u202e")),
        "markup_build": (X.markup_in_the_build_log(K.AG), ds.Status.REJECTED, ("[preprocess]", "[/][bold red]")),
    }


def raw_controls(text: str) -> list[str]:
    return [repr(ch) for ch in X.RAW_CONTROLS if ch in text]


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def _seed(run_dir: Path, spec: ds.KernelSpec) -> dict[str, ds.Candidate]:
    """The run as `cuco evolve` creates it, holding the candidates, none evaluated."""
    now = datetime.now(timezone.utc)
    honest = ds.Candidate(origin=ds.Origin(kind="manual", patch_type="honest"), source=ALLGATHER_GEMM.render())
    cands = {"honest": honest}
    for name, (source, _, _) in hostile(run_dir).items():
        cands[name] = ds.Candidate(origin=ds.Origin(kind="manual", patch_type=name), source=source)
    child, _ = K.frozen_change()  # its parent is the honest kernel, stored in this run
    cands["frozen_child"] = ds.Candidate(parent_ids=(honest.id,), source=child,
                                         origin=ds.Origin(kind="llm", model="m", patch_type="frozen_child"))
    cands["orphan"] = ds.Candidate(parent_ids=("feedfacecafe",), source=K.AG.render(host_top="  // orphan"),
                                   origin=ds.Origin(kind="llm", model="m", patch_type="orphan"))
    with Store.open(run_dir / "cuco.db") as store:
        store.create_run(ds.RunInfo(name=spec.name, spec_name=spec.name, pattern=spec.pattern,
                                    spec_hash=spec_hash(spec), spec_json=spec.model_dump_json(),
                                    created_at=now, updated_at=now))
        for cand in cands.values():
            assert store.add_candidate(spec.name, cand)
    return cands


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("hostile") / "run"
    run_dir.mkdir()
    spec = ALLGATHER_GEMM.spec()
    cands = _seed(run_dir, spec)
    res = subprocess.run([CUCO, "evolve", str(ALLGATHER_GEMM.spec_dir), "--run-dir", str(run_dir), "--generations",
                          "1", "--population", str(len(cands) + 1), "--point", seed_point(spec), "--workers", "2"],
                         capture_output=True, text=True, cwd=ROOT, timeout=1200, env=dict(os.environ))
    with Store.open(run_dir / "cuco.db") as store:
        stored = {c.origin.patch_type or c.origin.kind.value: (c, store.evaluation(c.id))
                  for c in store.candidates(spec.name)}
    return run_dir, res, stored


def test_the_run_completes_with_exit_0(hostile_run):
    run_dir, res, _ = hostile_run
    assert res.returncode == 0, res.stderr[-3000:]
    assert raw_controls(res.stdout) == [], "cuco evolve printed a candidate's control characters raw"
    board = json.loads(_cli("leaderboard", str(run_dir), "--json"))
    assert board["status"] == "complete"


def test_every_hostile_candidate_is_stored_with_its_failure_and_reason(hostile_run):
    run_dir, _, stored = hostile_run
    expected = {name: (status, words) for name, (_, status, words) in hostile(run_dir).items()}
    expected["frozen_child"] = (ds.Status.REJECTED, ("frozen_region_changed",))
    expected["orphan"] = (ds.Status.REJECTED, ("parent_missing",))
    for name, (status, words) in expected.items():
        cand, ev = stored[name]
        assert ev is not None, f"{name} was never evaluated"
        assert ev.status is status and all(w in ev.reason for w in words), (name, ev.status, ev.reason)
    assert (run_dir / "cuco.db").is_file()


def test_every_honest_candidate_is_ok(hostile_run):
    _, _, stored = hostile_run
    honest = {name: ev for name, (c, ev) in stored.items() if name in ("honest", "point")}
    assert set(honest) == {"honest", "point"}, sorted(stored)
    assert all(ev.status is ds.Status.OK for ev in honest.values()), {n: e.reason for n, e in honest.items()}


def test_leaderboard_and_show_print_what_hostile_candidates_left_as_text(hostile_run):
    run_dir, _, stored = hostile_run
    board = _cli("leaderboard", str(run_dir))
    assert raw_controls(board) == []
    for name, (cand, ev) in stored.items():
        if ev.status is ds.Status.OK:
            continue
        text = _cli("show", cand.id, "--run", str(run_dir))
        source = _cli("show", cand.id, "--run", str(run_dir), "--source")  # only the source
        assert raw_controls(text) == [] and raw_controls(source) == [], (name, raw_controls(text + source))
        assert cand.id in text
    shown = _cli("show", stored["markup_crash"][0].id, "--run", str(run_dir))
    assert "[link=file:/etc/passwd]click[/link]" in shown and "\\x1b" in shown and "\\u202e" in shown
