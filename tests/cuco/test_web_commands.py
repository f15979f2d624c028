"""`cuco serve`, `cuco plot` and `cuco export` from the command line: what they write, and the one-line
errors (never tracebacks) for what a user can get wrong."""

from __future__ import annotations

from typer.testing import CliRunner

from candidates_db import Store
from cuco.cli import app
from design_space.evaluation import Status
from tests.cuco.test_plots import CANDIDATES, RUN, fill


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def make_run(tmp_path):
    folder = tmp_path / "runs" / "ag_gemm"
    with Store.open(folder / "cuco.db") as store:
        ids = fill(store, RUN)
    return folder, ids


def test_plot_writes_every_plot_as_svg_and_png(tmp_path):
    folder, _ = make_run(tmp_path)
    result = invoke("plot", str(folder), "--out", str(tmp_path / "plots"))
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert len(written) == 10 and {p.rsplit(".", 1)[1] for p in written} == {"svg", "png"}


def test_serve_refuses_a_public_address_without_allow_remote(tmp_path):
    folder, _ = make_run(tmp_path)
    line = one_line_error(invoke("serve", str(folder), "--host", "0.0.0.0"))
    assert "--allow-remote" in line


def test_serve_names_the_fix_for_a_folder_without_a_database(tmp_path):
    line = one_line_error(invoke("serve", str(tmp_path / "nowhere")))
    assert "cuco.db" in line and "--db" in line


def test_export_refuses_a_failed_candidate_and_names_force(tmp_path):
    folder, ids = make_run(tmp_path)
    failed = ids[next(i for i, c in enumerate(CANDIDATES) if c[2] is Status.BUILD_FAILED)]
    line = one_line_error(invoke("export", failed, "--run", str(folder), "--out", str(tmp_path / "exp")))
    assert "--force" in line
    assert not (tmp_path / "exp").exists() or not any((tmp_path / "exp").iterdir())
