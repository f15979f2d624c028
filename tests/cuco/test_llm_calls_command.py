"""What `cuco leaderboard`, `cuco show` and `cuco llm` tell about LLM calls, on a database written
through the store the way the evolution loop writes it (two candidates, three calls, a trajectory)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from candidates_db import Store
from cuco.cli import app
from cuco.spec_loader import load_spec
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.evaluation import Evaluation, Stage, Status, Timing, TimingSource
from design_space.llm import LLMCall
from design_space.point import DesignPoint
from design_space.run import RunInfo, RunStatus

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
LLM_CAND = Candidate(id="11aa00000001", generation=1, origin=Origin(kind=OriginKind.LLM, model="openai:gpt-x",
                                                                     patch_type="diff"),
                     source="// written by gpt-x", point=DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/warp/64K/8"))
TEMPLATE_CAND = Candidate(id="22bb00000002", origin=Origin(kind=OriginKind.TEMPLATE, patch_type="mutate"),
                          source="// from the template", point=DesignPoint.parse_key("lsa/sequential/global_barrier/cta/1024K/8"))
PROMPT = "You write CUDA. [bold]keep brackets[/] — ünïcode\n<<<EVOLVE-BLOCK-START>>>"


def _call(i: int, **kw) -> LLMCall:
    fields = dict(id=f"call{i:012d}", purpose="slow_path.mutate", candidate_id=LLM_CAND.id, provider="openai",
                  model="gpt-x", prompt=PROMPT, response=f"<<<SEARCH\nold {i}\n>>>REPLACE", prompt_chars=len(PROMPT),
                  tokens_in=1200, tokens_out=300, latency_s=2.5, cost_usd=0.0125, retries=0,
                  created_at=T0 + timedelta(seconds=i))
    return LLMCall(**{**fields, **kw})


def _evaluation(cid: str, headline: str, speedup: float) -> Evaluation:
    return Evaluation(candidate_id=cid, status=Status.OK, stage=Stage.SCORE, reason="ok",
                      timings=(Timing(shape=headline, world=4, source=TimingSource.SIMULATED, seconds=1e-3,
                                      bound_seconds=5e-4, baseline_seconds=1e-3 * speedup),))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    spec = load_spec(ROOT / "examples" / "allgather_gemm")
    folder = tmp_path_factory.mktemp("llm") / "run"
    with Store.open(folder / "cuco.db") as s:
        s.create_run(RunInfo(name="ag", spec_name=spec.name, pattern=spec.pattern, spec_hash="h",
                             spec_json=spec.model_dump_json(), status=RunStatus.COMPLETE, created_at=T0, updated_at=T0))
        for cand, speedup in ((LLM_CAND, 1.8), (TEMPLATE_CAND, 1.1)):
            s.add_candidate("ag", cand)
            s.add_evaluation(_evaluation(cand.id, spec.headline.name, speedup))
        s.add_llm_call("ag", _call(0, purpose="fast_path.write", candidate_id=None, agent_step="fast_path:write#0",
                                   provider="anthropic", model="claude-y", cost_usd=0.5))
        s.add_llm_call("ag", _call(1))
        s.add_llm_call("ag", _call(2, purpose="slow_path.repair", response="", retries=3, tokens_in=0,
                                   tokens_out=0, cost_usd=0.0, error="HTTP 500 after 3 retries"))
        s.add_agent_steps("ag", "fast_path", [
            {"node": "write", "iteration": 0, "summary": "first device-initiated version"},
            {"node": "build", "iteration": 0, "status": "ok", "candidate_id": TEMPLATE_CAND.id}])
    return folder


def _cuco(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_leaderboard_shows_each_candidates_origin_and_the_run_usage(run_dir):
    data = json.loads(_cuco("leaderboard", str(run_dir), "--json"))
    assert [(r["id"], r["origin"]) for r in data["leaderboard"]] == [
        (LLM_CAND.id, "llm/openai:gpt-x/diff"), (TEMPLATE_CAND.id, "template/mutate")]
    usage = data["llm_usage"]
    assert usage["calls"] == 3 and usage["failed"] == 1
    assert usage["cost_usd"] == pytest.approx(0.5125)
    text = _cuco("leaderboard", str(run_dir))
    assert "LLM: 3 calls (1 failed" in text and "$0.5125" in text and f"cuco llm {run_dir}" in text
    wide = _cuco("leaderboard", str(run_dir), "--wide")  # the origin is one of the columns --wide adds
    assert "origin" in wide and "llm/openai:gpt-x/diff" in wide and "template/mutate" in wide


def test_show_lists_the_calls_that_served_the_candidate(run_dir):
    report = json.loads(_cuco("show", LLM_CAND.id[:6], "--run", str(run_dir), "--json"))
    calls = report["llm_calls"]
    assert [(c["purpose"], c["label"]) for c in calls] == [("slow_path.mutate", "openai:gpt-x"),
                                                          ("slow_path.repair", "openai:gpt-x")]
    assert calls[1]["error"] == "HTTP 500 after 3 retries" and calls[1]["retries"] == 3
    assert "prompt" not in calls[0]  # prompts only on request: they can be 300k characters
    text = _cuco("show", LLM_CAND.id, "--run", str(run_dir))
    assert "LLM calls for" in text and "slow_path.repair" in text and "HTTP 500 after 3 retries" in text
    assert "0.0125" in text and "1200" in text and "keep brackets" not in text


def test_show_prompts_prints_prompt_and_response_verbatim(run_dir):
    text = _cuco("show", LLM_CAND.id, "--run", str(run_dir), "--prompts")
    assert "[bold]keep brackets[/] — ünïcode" in text and "<<<SEARCH" in text
    assert "(no response: HTTP 500 after 3 retries)" in text
    report = json.loads(_cuco("show", LLM_CAND.id, "--run", str(run_dir), "--prompts", "--json"))
    assert report["llm_calls"][0]["prompt"] == PROMPT


def test_show_of_a_template_candidate_has_no_calls(run_dir):
    report = json.loads(_cuco("show", TEMPLATE_CAND.id, "--run", str(run_dir), "--json"))
    assert report["llm_calls"] == []
    assert "LLM calls" not in _cuco("show", TEMPLATE_CAND.id, "--run", str(run_dir))


def test_llm_command_shows_usage_by_model_calls_and_steps(run_dir):
    text = _cuco("llm", str(run_dir))
    assert "LLM usage: ag: by model" in text and "anthropic:claude-y" in text and "openai:gpt-x" in text
    assert "total" in text and "0.5125" in text and "fast_path.write" in text
    assert "agent steps" in text and "first device-initiated version" in text
    assert "HTTP 500 after 3 retries" in text and "keep brackets" not in text


def test_llm_command_json_is_machine_readable(run_dir):
    data = json.loads(_cuco("llm", str(run_dir), "--json"))
    assert data["run"] == "ag" and data["candidate"] is None
    usage = data["usage"]
    assert (usage["calls"], usage["failed"], usage["tokens_in"], usage["tokens_out"]) == (3, 1, 2400, 600)
    assert usage["by_model"]["anthropic:claude-y"]["cost_usd"] == pytest.approx(0.5)
    assert usage["by_model"]["openai:gpt-x"]["calls"] == 2
    assert [c["id"] for c in data["calls"]] == [_call(i).id for i in range(3)]
    assert [s["node"] for s in data["agent_steps"]] == ["write", "build"]


def test_llm_command_filters_by_candidate_and_prints_prompts(run_dir):
    data = json.loads(_cuco("llm", str(run_dir), "--candidate", LLM_CAND.id[:5], "--json", "--prompts"))
    assert data["candidate"] == LLM_CAND.id
    assert [c["purpose"] for c in data["calls"]] == ["slow_path.mutate", "slow_path.repair"]
    assert data["calls"][0]["prompt"] == PROMPT and data["calls"][0]["response"].startswith("<<<SEARCH")
    text = _cuco("llm", str(run_dir), "--candidate", TEMPLATE_CAND.id)
    assert f"no LLM call served candidate {TEMPLATE_CAND.id}" in text


def test_llm_command_with_db_url_and_a_run_without_calls(tmp_path):
    spec = load_spec(ROOT / "examples" / "allgather_gemm")
    db = tmp_path / "x.db"
    with Store.open(db) as s:
        s.create_run(RunInfo(name="quiet", spec_name=spec.name, pattern=spec.pattern, spec_hash="h",
                             spec_json=spec.model_dump_json(), created_at=T0, updated_at=T0))
    text = _cuco("llm", "quiet", "--db", str(db))
    assert "made no LLM call" in text and "--llm openai:<model>" in text
    result = CliRunner().invoke(app, ["llm", "nope", "--db", str(db)])
    assert result.exit_code == 2 and "no run named 'nope'" in result.output
