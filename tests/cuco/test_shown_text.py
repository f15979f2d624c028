"""Stored text is data: hostile text in a candidate, its evaluation and its LLM calls reaches the
terminal as visible characters (no markup, no control sequences), and ``--json`` returns it exactly."""

from __future__ import annotations

import io
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from candidates_db import Store
from cuco.cli import app
from cuco.errors import one_line
from cuco.evolve_command import _Progress
from cuco.loop import Event
from cuco.shown_text import shown, visible
from cuco.spec_loader import load_spec
from design_space import StoreError
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.evaluation import BuildStats, Evaluation, KernelStats, Stage, Status, Timing, TimingSource
from design_space.llm import LLMCall
from design_space.point import DesignPoint
from design_space.run import RunInfo, RunStatus

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
# markup, emoji codes, CSI colour and cursor moves, a screen clear, an OSC 8 hyperlink, BEL,
# backspace, a carriage return that overwrites, bidi overrides and isolates, zero-width, C1
HOSTILE = ("closing [/] then [bold red]x[/] and [link=http://evil]click[/link] :warning: "
           "\x1b[31mred\x1b[0m\x1b[2J\x1b[10;1H \x1b]8;;http://evil\x07link\x1b]8;;\x07 bell\x07 back\x08 "
           "safe\roverwritten \u202egnp.exe\u202c \u2066iso\u2069 zero\u200bwidth c1\x9b31m")
ONE_LINE = " ".join(HOSTILE.split())  # what a stored reason keeps (Evaluation.reason is one line)
RAW_CONTROLS = ("\x1b", "\x07", "\x08", "\r", "\x9b", "\u202e", "\u202c", "\u2066", "\u2069", "\u200b")
LITERALS = ("[/]", "[bold", "[link=http://evil]click[/link]", ":warning:", "\\x1b[31mred\\x1b[0m",
            "\\x1b]8;;http://evil\\x07link", "safe\\roverwritten", "\\u202egnp.exe\\u202c", "zero\\u200bwidth")
SOURCE = ("// EVOLVE-BLOCK-START\n\tint y = 0;  " + HOSTILE + "\n// " + "x" * 300 + "\n// EVOLVE-BLOCK-END\n")
POINT = DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/warp/64K/8")
RUN = "ag[/]\x1b[31m"
CAND = Candidate(id="hh0000000001", origin=Origin(kind=OriginKind.LLM, model="m[/]\x1b[31m", patch_type="diff"),
                 source=SOURCE, point=POINT)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    spec = load_spec(ROOT / "examples" / "allgather_gemm")
    folder = tmp_path_factory.mktemp("hostile") / "run"
    with Store.open(folder / "cuco.db") as s:
        s.create_run(RunInfo(name=RUN, spec_name=spec.name, pattern=spec.pattern, spec_hash="h", note=HOSTILE,
                             spec_json=spec.model_dump_json(), status=RunStatus.COMPLETE, created_at=T0, updated_at=T0))
        s.add_candidate(RUN, CAND)
        s.add_evaluation(Evaluation(
            candidate_id=CAND.id, status=Status.OK, stage=Stage.SIMULATE, reason=HOSTILE, logs=HOSTILE,
            flags=(HOSTILE,), build=BuildStats(arch="sm_90", comm_backend="nccl", kernels=(KernelStats(name=HOSTILE),)),
            timings=(Timing(shape=spec.headline.name, world=8, source=TimingSource.SIMULATED, seconds=1e-3,
                            bound_seconds=5e-4, baseline_seconds=1.5e-3),)))
        s.add_llm_call(RUN, LLMCall(id="call00000001", purpose=HOSTILE, candidate_id=CAND.id, provider="openai",
                                    model="gpt[/]\x1b[31m", prompt=HOSTILE, response=HOSTILE, error=HOSTILE,
                                    prompt_chars=len(HOSTILE), created_at=T0))
        s.add_agent_steps(RUN, "fast_path", [{"node": HOSTILE, "summary": HOSTILE, "reason": HOSTILE}])
    return folder


def _cuco(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, result.output
    return result.stdout


def _assert_shown_as_data(text: str, literals=LITERALS) -> None:
    for raw in RAW_CONTROLS:
        assert raw not in text, f"raw {raw!r} reached the output"
    for literal in literals:
        assert literal in text, f"{literal!r} is not visible"


@pytest.mark.parametrize("command", ["show", "show --prompts", "llm --prompts"])
def test_reports_show_hostile_text_literally_and_no_control_characters(run_dir, command):
    name, *options = command.split()
    where = [CAND.id, "--run", str(run_dir)] if name == "show" else [str(run_dir)]
    _assert_shown_as_data(_cuco(name, *where, *options))


def test_leaderboard_shows_the_origin_and_run_name_as_data(run_dir):
    text = _cuco("leaderboard", str(run_dir))
    _assert_shown_as_data(text, literals=("ag[/]\\x1b[31m", "gpt[/]\\x1b[31m"))
    wide = _cuco("leaderboard", str(run_dir), "--wide")  # the origin column
    _assert_shown_as_data(wide, literals=("m[/]\\x1b[31m", "ag[/]\\x1b[31m", "gpt[/]\\x1b[31m"))


def test_show_source_prints_the_source_as_it_is_with_controls_made_visible(run_dir):
    text = _cuco("show", CAND.id, "--run", str(run_dir), "--source")
    _assert_shown_as_data(text)
    assert visible(SOURCE) in text  # not padded, wrapped or numbered; the tab and the 300-char line intact
    assert "\tint y = 0;" in text and "// " + "x" * 300 + "\n" in text


def test_json_output_is_the_stored_text_exactly(run_dir):
    report = json.loads(_cuco("show", CAND.id, "--run", str(run_dir), "--json", "--prompts"))
    assert report["candidate"]["source"] == SOURCE and report["run"] == RUN
    ev = report["evaluation"]
    # a reason is stored as one line (Evaluation keeps reasons single-line); the JSON shows it as stored
    assert ev["reason"] == ONE_LINE and ev["logs"] == HOSTILE and ev["flags"] == [HOSTILE]
    assert ev["build"]["kernels"][0]["name"] == HOSTILE
    assert report["llm_calls"][0]["prompt"] == HOSTILE and report["llm_calls"][0]["response"] == HOSTILE
    board = json.loads(_cuco("leaderboard", str(run_dir), "--json"))
    assert board["run"] == RUN and board["leaderboard"][0]["reason"] == ONE_LINE
    assert board["leaderboard"][0]["origin"] == "llm/m[/]\x1b[31m/diff"
    calls = json.loads(_cuco("llm", str(run_dir), "--json", "--prompts"))
    assert calls["calls"][0]["purpose"] == HOSTILE and calls["calls"][0]["error"] == HOSTILE
    assert calls["agent_steps"][0]["summary"] == HOSTILE


def _progress_output(terminal: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120)
    progress = _Progress(console, quiet=False)
    failed = Evaluation(candidate_id=CAND.id, status=Status.WRONG_RESULT, stage=Stage.EMULATE, reason=HOSTILE)
    progress(Event("generation", "generation 0: 1 to evaluate", generation=0, total=1))
    progress(Event("evaluated", "wrong_result", candidate=CAND, evaluation=failed, generation=0))
    progress(Event("llm_rejected", f"gpt-x: {HOSTILE}"))
    progress.stop()
    return out.getvalue()


def test_evolve_progress_prints_hostile_reasons_and_messages_as_data():
    text = _progress_output(terminal=False)
    _assert_shown_as_data(text, literals=("[/]", "[bold", ":warning:", "\\x1b[31mred", "\\u202egnp.exe"))


def test_on_a_terminal_only_our_own_styles_reach_it():
    text = _progress_output(terminal=True)
    for raw in ("\x1b]8;;http://evil", "\x1b[2J", "\x1b[10;1H", "\x1b[31mred", "\x07", "\x08", "\u202e", "\u200b",
                "\x9b"):
        assert raw not in text
    ours = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\r")  # rich's own colours, cursor moves and live-display returns
    _assert_shown_as_data(ours.sub("", text), literals=("[/]", "[link=http://evil]", "\\x1b[2J", "\\u202egnp.exe"))


def test_error_lines_show_control_characters_as_escapes():
    line = one_line(StoreError(f"no run named {HOSTILE}", "pass an existing run"))
    assert "\x1b" not in line and "\u202e" not in line and "\\x1b[31m" in line and len(line.splitlines()) == 1


def test_newline_and_tab_are_kept_and_printable_unicode_is_untouched():
    assert visible("a\tb\nc — ünïcode µs ✓") == "a\tb\nc — ünïcode µs ✓"
    assert visible("\x00\x7f\x85\ufeff\U000e0041") == "\\x00\\x7f\\x85\\ufeff\\U000e0041"
    assert shown("[b]x[/b]").plain == "[b]x[/b]"
