"""What the terminal shows, at 80, 100 and 120 columns and through a pipe: every table fits 100
columns (80 on an 80-column terminal), every candidate id is printed whole and `cuco show` takes it,
the status, SOL and speedup are always there, `--wide` adds what is left out, a pipe gets plain
text, and `cuco show --source` gives the stored file back."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from candidates_db import Store
from cuco.check_command import check_renderables
from cuco.cli import app
from cuco.spec_loader import load_spec
from cuco.terminal import make_console
from design_space import get_pattern, get_profile, valid_points
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.code_features import CodeFeatures
from design_space.evaluation import (
    BuildStats, Evaluation, KernelStats, RankCheck, Stage, Status, Tier, Timing, TimingSource,
)
from design_space.llm import LLMCall
from design_space.run import RunInfo, RunStatus

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
SPEC = load_spec(ROOT / "examples" / "allgather_gemm")
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)")
BOX_DRAWING = re.compile("[\u2500-\u257f]")
# The longest valid points of the spec: the widest design-point cells a real run can print.
POINTS = sorted(valid_points(get_pattern(SPEC.pattern), get_profile(SPEC.hardware)), key=lambda p: -len(p.key()))
LONG_MODEL = "anthropic:claude-sonnet-4-5-20250929"
STATUSES = (Status.OK, Status.OK, Status.OK, Status.EMULATION_FAILED, Status.BUILD_FAILED, Status.WRONG_RESULT)
HONEST = ("// ünïcode µs ✓ — kept as is\n#include <cuda_runtime.h>\n\tint x = 1;   \r\n"
          "// " + "y" * 600 + "\n}  // no newline at the end")


def _candidate(i: int, status: Status, parents: tuple[str, ...]) -> Candidate:
    origin = (Origin(kind=OriginKind.LLM, model=LONG_MODEL, patch_type="diff") if i % 2
              else Origin(kind=OriginKind.TEMPLATE, patch_type="mutate"))
    source = HONEST if i == 0 else f"// candidate {i}\nint y = {i};\n"
    return Candidate(generation=i, point=POINTS[i * 5], source=source, origin=origin, parent_ids=parents)


def _evaluation(cand: Candidate, status: Status, i: int) -> Evaluation:
    ok = status is Status.OK
    timings = tuple(Timing(shape=s.name, world=8, source=TimingSource.SIMULATED, seconds=1e-3 / (1 + i),
                           bound_seconds=2e-4, baseline_seconds=1.3e-3) for s in SPEC.shapes) if ok else ()
    checks = tuple(RankCheck(tier=Tier.EMULATED, world=w, shape=s.name, rank=r, ok=ok or r > 0, max_abs_err=1e-3,
                             note="" if ok or r else "rank 0 left 512 elements unwritten")
                   for w in SPEC.emulation_world_sizes for s in SPEC.emulation_shapes for r in range(w))
    kernels = (KernelStats(name="_Z21fused_allgather_gemmILi128ELi64EEvPK6__halfS2_PS0_iiiPv", registers=168,
                           smem_bytes=98304, mma=512),
               KernelStats(name="comm_kernel", registers=40))
    return Evaluation(candidate_id=cand.id, status=status, stage=Stage.SCORE if ok else Stage.EMULATE,
                      reason="ok" if ok else "rank 0 left 512 elements unwritten in emu-ragged at world 4",
                      build=BuildStats(arch="sm_90", comm_backend="nccl", kernels=kernels), checks=checks,
                      timings=timings, flags=("comm CTAs spin on a flag without backoff",),
                      logs="ptxas info: " + "z" * 300 + "\nsecond line",
                      observed_point=cand.point.key(), observed=("every rank signals per tile",),
                      features=CodeFeatures(tensor_core=True, tensor_core_flop_share=0.9, vector_width_bytes=16,
                                            registers=168, source="ptxas + SASS + emulator counts"))


def _call(i: int, cid) -> LLMCall:
    return LLMCall(id=f"call{i:012d}", purpose="slow_path.mutate" if i else "fast_path.write", candidate_id=cid,
                   provider="anthropic", model=LONG_MODEL.split(":")[1], prompt="write a kernel", response="ok",
                   prompt_chars=123456, tokens_in=31000, tokens_out=4200, latency_s=41.5, cost_usd=0.1563,
                   retries=i % 2, error=None if i != 2 else "HTTP 529 overloaded after 3 retries: " + "w" * 120,
                   created_at=T0 + timedelta(seconds=i))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, list[Candidate]]:
    folder = tmp_path_factory.mktemp("width") / "run"
    cands: list[Candidate] = []
    with Store.open(folder / "cuco.db") as s:
        s.create_run(RunInfo(name="allgather_gemm", spec_name=SPEC.name, pattern=SPEC.pattern, spec_hash="h",
                             spec_json=SPEC.model_dump_json(), status=RunStatus.COMPLETE, created_at=T0,
                             updated_at=T0))
        for i, status in enumerate(STATUSES):
            cand = _candidate(i, status, tuple(c.id for c in cands[-2:]))
            s.add_candidate("allgather_gemm", cand)
            s.add_evaluation(_evaluation(cand, status, i))
            cands.append(cand)
        for i, cand in enumerate(cands[:3]):
            s.add_llm_call("allgather_gemm", _call(i, cand.id if i else None))
        s.add_agent_steps("allgather_gemm", "fast_path", [
            {"node": "write", "iteration": 0, "summary": "first device-initiated version " * 4},
            {"node": "build", "iteration": 0, "status": "ok", "candidate_id": cands[0].id}])
    return folder, cands


def _cuco(*args: str, columns: int | None = None) -> str:
    """The command's stdout: on a terminal `columns` wide (ANSI codes removed), else through a pipe."""
    env = {"COLUMNS": str(columns), "FORCE_COLOR": "1"} if columns else {"COLUMNS": None, "FORCE_COLOR": None}
    result = CliRunner().invoke(app, list(args), env={**env, "TTY_COMPATIBLE": None, "NO_COLOR": None})
    assert result.exit_code == 0, result.output
    return result.stdout


def _plain(text: str) -> str:
    return ANSI.sub("", text)


def _assert_fits(text: str, width: int) -> None:
    for line in _plain(text).splitlines():
        assert cell_len(line.rstrip()) <= width, f"{cell_len(line)} columns: {line!r}"
    assert "…" not in text, "something was cut short"


def _rows(run_dir: Path) -> list[dict]:
    return json.loads(_cuco("leaderboard", str(run_dir), "--json"))["leaderboard"]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_leaderboard_fits_with_whole_ids_status_sol_and_speedup_on_each_row(run, columns):
    run_dir, cands = run
    text = _plain(_cuco("leaderboard", str(run_dir), columns=columns))
    _assert_fits(text, min(columns, 100))
    lines = text.splitlines()
    for row in _rows(run_dir):
        line = next((ln for ln in lines if row["id"] in ln), None)
        assert line is not None, f"{row['id']} is not printed whole"
        assert row["status"] in line.split()
        if row["speedup"] is not None:
            assert f"{row['speedup']:.3g}x" in line and f"{row['sol']:.3g}" in line
    assert "speedup" in text and "SOL" in text and "status" in text


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_every_id_the_leaderboard_prints_is_one_cuco_show_takes(run, columns):
    run_dir, cands = run
    printed = re.findall(r"\b[0-9a-f]{12}\b", _plain(_cuco("leaderboard", str(run_dir), columns=columns)))
    assert sorted(set(printed)) == sorted(c.id for c in cands)
    for cid in printed:
        shown = _plain(_cuco("show", cid, "--run", str(run_dir), columns=columns))
        assert f"candidate {cid}" in shown


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_show_fits_and_prints_its_own_and_its_parents_ids_whole(run, columns):
    run_dir, cands = run
    for cand in cands[2:4]:  # an ok candidate with timings, a failed one with a reason
        text = _plain(_cuco("show", cand.id, "--run", str(run_dir), columns=columns))
        _assert_fits(text, min(columns, 100))
        assert cand.id in text and len(cand.parent_ids) == 2 and all(p in text for p in cand.parent_ids)
        assert "registers" in text and "_Z21fused_allgather_gemm" in text
    ok = _plain(_cuco("show", cands[2].id, "--run", str(run_dir), columns=columns))
    assert "timings per shape" in ok and "speedup" in ok and "3.900x" in ok


def test_a_terminal_wider_than_100_columns_gets_the_100_column_output(run):
    run_dir, cands = run
    for args in (("leaderboard", str(run_dir)), ("show", cands[1].id, "--run", str(run_dir)), ("llm", str(run_dir))):
        assert _cuco(*args, columns=200) == _cuco(*args, columns=100)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_llm_tables_fit_and_print_candidate_ids_whole(run, columns):
    run_dir, cands = run
    text = _plain(_cuco("llm", str(run_dir), columns=columns))
    _assert_fits(text, min(columns, 100))
    for cand in cands[:3]:
        assert cand.id in text
    assert "31000" in text and "0.1563" in text and "HTTP 529" in text
    calls = text[text.index("LLM calls"):]
    assert "latency" not in calls and "41.50" not in calls  # the prompt size, latency, retries: --wide


def test_show_llm_calls_fit_with_the_candidate_id(run):
    run_dir, cands = run
    text = _plain(_cuco("show", cands[1].id, "--run", str(run_dir), columns=80))
    _assert_fits(text, 80)
    assert "LLM calls for" in text and text.count(cands[1].id) >= 3


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_space_fits(columns):
    text = _cuco("space", str(ROOT / "examples" / "allgather_gemm"), "--top", "5", columns=columns)
    _assert_fits(text, min(columns, 100))
    assert "speedup" in text and "T_comp" in text and "fused_persistent_needs_fine_signals" in _plain(text)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_doctor_fits(columns):
    text = _cuco("doctor", columns=columns)
    _assert_fits(text, min(columns, 100))
    assert "emulate" in text and "LLM keys" in text


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_check_report_fits_with_its_checks_and_score(run, monkeypatch, columns):
    run_dir, cands = run
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = io.StringIO()
    console = make_console(file=out)
    for status, cand in zip(STATUSES[2:4], cands[2:4]):
        for item in check_renderables(Path("kernel.cu"), SPEC, cand, _evaluation(cand, status, 2)):
            console.print(item)
    text = _plain(out.getvalue())
    _assert_fits(text, min(columns, 100))
    assert "checks against the reference" in text and "rank 0 left 512 elements unwritten" in " ".join(text.split())
    assert "score: " in text and "speedup" in text


def test_wide_adds_the_columns_the_default_leaves_out(run):
    run_dir, _ = run
    default, wide = (_cuco("leaderboard", str(run_dir), *more) for more in ((), ("--wide",)))
    for hidden in ("bound µs", "template/mutate", "llm/" + LONG_MODEL + "/diff", "✓ w=2,4"):
        assert hidden in wide and hidden not in default
    assert "--wide adds origin" in default
    lines = wide.splitlines()
    assert max(cell_len(ln.rstrip()) for ln in lines) > 100  # nothing folded: one row, one line
    assert all(sum(c.id in ln for ln in lines) == 1 for c in run[1])
    calls = _cuco("llm", str(run_dir), "--wide")
    assert "latency" in calls[calls.index("LLM calls"):] and "41.50" in calls


def test_wide_works_on_every_command_that_prints_a_table(run):
    run_dir, cands = run
    for args in (("show", cands[0].id, "--run", str(run_dir)), ("llm", str(run_dir)), ("doctor",),
                 ("space", str(ROOT / "examples" / "allgather_gemm"), "--top", "2")):
        text = _cuco(*args, "--wide")
        assert "…" not in text and "\x1b" not in text


@pytest.mark.parametrize("args", [("leaderboard",), ("show",), ("llm",), ("space",), ("doctor",)])
def test_piped_output_is_plain_text_100_columns_wide(run, args):
    run_dir, cands = run
    where = {"leaderboard": [str(run_dir)], "llm": [str(run_dir)], "show": [cands[3].id, "--run", str(run_dir)],
             "space": [str(ROOT / "examples" / "allgather_gemm")], "doctor": []}[args[0]]
    text = _cuco(args[0], *where)
    assert "\x1b" not in text and not BOX_DRAWING.search(text)
    _assert_fits(text, 100)
    assert "-" * 20 in text  # the header rules and panel edges, in ASCII


def test_a_pipe_from_a_real_process_gets_plain_text(run):
    run_dir, cands = run
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS")}
    res = subprocess.run([CUCO, "leaderboard", str(run_dir)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and not BOX_DRAWING.search(res.stdout)
    assert all(c.id in res.stdout for c in cands)
    _assert_fits(res.stdout, 100)


def test_show_source_gives_an_honest_file_back_byte_for_byte(run, tmp_path):
    run_dir, cands = run
    with open(tmp_path / "k.cu", "wb") as out:
        res = subprocess.run([CUCO, "show", cands[0].id, "--run", str(run_dir), "--source"], stdout=out,
                             stderr=subprocess.PIPE, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "k.cu").read_bytes() == HONEST.encode("utf-8")
    result = CliRunner().invoke(app, ["show", cands[0].id, "--run", str(run_dir), "--source"],
                                env={"COLUMNS": "80", "FORCE_COLOR": "1"})
    assert result.exit_code == 0 and result.stdout_bytes == HONEST.encode("utf-8")  # a terminal too: no padding


def test_show_source_makes_a_hostile_control_character_visible(tmp_path):
    hostile = "int a;\x1b[2J\x1b]8;;http://evil\x07x\x1b]8;;\x07 \u202eevil\u202c back\x08 cr\rover\n\tint b;\n"
    db = tmp_path / "run" / "cuco.db"
    cand = Candidate(point=POINTS[0], source=hostile, origin=Origin(kind=OriginKind.LLM, model="m"))
    with Store.open(db) as s:
        s.create_run(RunInfo(name="r", spec_name=SPEC.name, pattern=SPEC.pattern, spec_hash="h",
                             spec_json=SPEC.model_dump_json(), created_at=T0, updated_at=T0))
        s.add_candidate("r", cand)
    text = CliRunner().invoke(app, ["show", cand.id, "--run", str(db.parent), "--source"]).stdout
    assert text == ("int a;\\x1b[2J\\x1b]8;;http://evil\\x07x\\x1b]8;;\\x07 \\u202eevil\\u202c back\\x08 cr\\rover\n"
                    "\tint b;\n")
