"""`cuco evolve --llm ...` end to end against the scripted fake LLM server, through the real openai
and anthropic clients: fast path, then slow path; every call in the database; failures of the LLM
are data and the run goes on; a spent budget stops cleanly and resumes; a killed fast path resumes
from its checkpoint."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cuco
import design_space as ds
from agents.llm.fake_server import FakeLLMServer, placeholder_key
from candidates_db import Store
from cuco.agent_wiring import LLMSettings
from tests.conftest import EXAMPLE
from tests.cuco import llm_scripts as S

CUCO = str(Path(sys.executable).parent / "cuco")
PROVIDERS = {"openai": ("gpt-4.1", "OPENAI"), "anthropic": ("claude-sonnet-4-5", "ANTHROPIC")}
FAST = LLMSettings(names=("openai:gpt-4.1",), max_retries=1, backoff_s=0.01)


def _env(server, provider="openai"):
    prefix = PROVIDERS[provider][1]
    base = server.base_url_openai if provider == "openai" else server.base_url_anthropic
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    env.update({f"{prefix}_API_KEY": placeholder_key(), f"{prefix}_BASE_URL": base})
    return env


@pytest.fixture
def llm_env(monkeypatch):
    def use(server, provider="openai"):
        for k in [k for k in os.environ if k.endswith("_API_KEY") or k.endswith("_BASE_URL")]:
            monkeypatch.delenv(k)
        for k, v in _env(server, provider).items():
            monkeypatch.setenv(k, v)
    return use


def _calls(run_dir: Path):
    with Store.open(run_dir / "cuco.db") as store:
        (run,) = store.list_runs()
        return run, store.llm_calls(run.name), store.leaderboard(run.name), store.agent_steps(run.name)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_evolve_with_an_llm_runs_the_fast_path_then_the_slow_path(provider, tmp_path, example_evaluator):
    model = PROVIDERS[provider][0]
    with FakeLLMServer(S.full_run_rules()) as server:
        res = subprocess.run([CUCO, "evolve", str(EXAMPLE), "--run-dir", str(tmp_path), "--generations", "2",
                              "--population", "2", "--workers", "2", "--point", S.SEEDED.key(),
                              "--llm", f"{provider}:{model}"], env=_env(server, provider), capture_output=True,
                             text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert f"proposers: {provider}:{model}" in res.stdout
    run, calls, board, steps = _calls(tmp_path)
    assert run.status is ds.RunStatus.COMPLETE
    purposes = {c.purpose for c in calls}
    assert "fast_path.write" in purposes and purposes & {"slow_path.mutate", "slow_path.crossover"}
    for c in calls:  # every prompt and response, with tokens and cost
        assert c.ok and c.model == model and c.prompt and c.response and c.tokens_in > 0 and c.tokens_out > 0
        assert c.cost_usd > 0 and c.prompt_chars == len(c.prompt)
    origins = {cand.origin.label(): ev for cand, ev in board}
    assert origins[f"llm/{provider}:{model}/fast_path"].status is ds.Status.OK
    slow = {label: ev for label, ev in origins.items() if label.startswith(f"llm/{provider}:{model}/")
            and not label.endswith("/fast_path")}
    assert any(ev is not None and ev.status is ds.Status.OK for ev in slow.values()), origins
    assert [s["node"] for s in steps][:2] == ["analyze", "choose"] and steps[-1]["node"] == "annotate"
    shown = subprocess.run([CUCO, "leaderboard", str(tmp_path), "--json"], capture_output=True, text=True, timeout=120)
    board_json = json.loads(shown.stdout)
    assert any(r["origin"].startswith(f"llm/{provider}:{model}/") for r in board_json["leaderboard"])
    assert board_json["llm_usage"]["calls"] == len(calls) and board_json["llm_usage"]["cost_usd"] > 0


def test_an_llm_patch_with_a_wrong_result_is_stored_as_such(tmp_path, example_evaluator, llm_env):
    rules = [S.rule(S.FAST_WRITE, S.fenced(S.CONSERVATIVE)), S.rule(S.META, "noted"),
             S.rule(S.parent(S.CONSERVATIVE), S.diff(S.CONSERVATIVE, S.B, wrong=True))]
    with FakeLLMServer(rules) as server:
        llm_env(server)
        summary = cuco.evolve(EXAMPLE, run_dir=tmp_path, generations=2, population=1, workers=1, llm=FAST)
    assert summary.run.status is ds.RunStatus.COMPLETE
    _, calls, board, _ = _calls(tmp_path)
    by_gen = {cand.generation: (cand, ev) for cand, ev in board}
    cand, ev = by_gen[1]
    assert cand.origin.kind is ds.OriginKind.LLM and cand.point == S.B
    assert ev.status is ds.Status.WRONG_RESULT and cand.parent_ids == (by_gen[0][0].id,)
    assert any(c.candidate_id == cand.id for c in calls) or any(c.purpose == "slow_path.mutate" for c in calls)


def test_code_that_does_not_compile_gets_one_repair_call_and_the_repair_is_evaluated(tmp_path, example_evaluator,
                                                                                     llm_env):
    rules = [S.rule(S.FAST_WRITE, S.fenced(S.CONSERVATIVE)), S.rule(S.META, "noted"),
             S.rule(S.REPAIR, S.full_rewrite(S.CONSERVATIVE, S.B)),
             S.rule(S.parent(S.CONSERVATIVE), S.not_compiling(S.CONSERVATIVE, S.B))]
    with FakeLLMServer(rules) as server:
        llm_env(server)
        summary = cuco.evolve(EXAMPLE, run_dir=tmp_path, generations=2, population=1, workers=1, llm=FAST)
        repair_prompts = [r.prompt for r in server.requests if S.REPAIR in r.prompt]
    assert summary.run.status is ds.RunStatus.COMPLETE
    assert len(repair_prompts) == 1 and "error" in repair_prompts[0]  # nvcc's complaint went back to the LLM
    _, calls, board, _ = _calls(tmp_path)
    assert [c.purpose for c in calls].count("slow_path.repair") == 1
    (cand, ev), = [(c, e) for c, e in board if c.generation == 1]
    assert cand.origin.patch_type == "repair" and cand.point == S.B and ev.status is ds.Status.OK


def test_a_500_storm_past_the_retries_leaves_the_run_to_the_template_proposer(tmp_path, example_evaluator, llm_env):
    rules = [S.rule(S.FAST_WRITE, S.fenced(S.CONSERVATIVE)), S.rule(None, status=500)]
    with FakeLLMServer(rules) as server:
        llm_env(server)
        summary = cuco.evolve(EXAMPLE, run_dir=tmp_path, generations=2, population=2, workers=2, llm=FAST)
    assert summary.run.status is ds.RunStatus.COMPLETE
    _, calls, board, _ = _calls(tmp_path)
    later = [cand for cand, _ in board if cand.generation == 1]
    assert len(later) == 2 and all(c.origin.kind is ds.OriginKind.TEMPLATE for c in later)
    failed = [c for c in calls if not c.ok]
    assert failed and all(c.retries == 1 and "500" in c.error for c in failed)


def test_a_spent_budget_stops_the_run_cleanly_and_a_larger_one_resumes_it(tmp_path, example_evaluator, llm_env):
    with FakeLLMServer(S.full_run_rules()) as server:
        llm_env(server)
        tight = LLMSettings(names=FAST.names, budget_usd=0.0001, max_retries=1, backoff_s=0.01)
        stopped = cuco.evolve(EXAMPLE, run_dir=tmp_path, generations=2, population=2, workers=2, llm=tight,
                              seed_points=(S.SEEDED,))
        assert stopped.run.status is ds.RunStatus.STOPPED and "budget" in stopped.run.note
        assert "--llm-budget" in stopped.run.note
        writes = sum(1 for r in server.requests if S.FAST_WRITE in r.prompt)
        done = cuco.evolve(EXAMPLE, run_dir=tmp_path, generations=2, population=2, workers=2, llm=FAST,
                           seed_points=(S.SEEDED,))
        assert done.run.status is ds.RunStatus.COMPLETE
        assert sum(1 for r in server.requests if S.FAST_WRITE in r.prompt) == writes  # not paid for twice
    _, calls, board, _ = _calls(tmp_path)
    assert len([c for c, _ in board if c.generation == 1]) == 2


def test_killing_evolve_during_the_fast_path_resumes_the_graph_from_its_checkpoint(tmp_path, example_evaluator):
    bad = "```cuda\nthis is not CUDA at all;\n```\nDESIGN-POINT: " + S.CONSERVATIVE.key()
    rules = [S.rule(S.FAST_WRITE, bad, times=1),
             S.rule(S.FAST_JUDGE, "It does not compile: write real CUDA.", times=1, delay_s=120),
             S.rule(S.FAST_JUDGE, "It does not compile: write real CUDA."),
             S.rule(S.FAST_WRITE, S.fenced(S.CONSERVATIVE)), S.rule(S.META, "noted")]
    args = [CUCO, "evolve", str(EXAMPLE), "--run-dir", str(tmp_path), "--generations", "1", "--population", "1",
            "--workers", "1", "--llm", "openai:gpt-4.1"]
    with FakeLLMServer(rules) as server:
        proc = subprocess.Popen(args, env=_env(server), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 300
        while not any(S.FAST_JUDGE in r.prompt for r in server.requests):  # killed inside the judge's call
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-3000:]
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        res = subprocess.run(args, env=_env(server), capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        writes = [r for r in server.requests if S.FAST_WRITE in r.prompt]
        judges = [r for r in server.requests if S.FAST_JUDGE in r.prompt]
    # the first write (done before the kill) was not sent again; the interrupted judge was
    assert len(writes) == 2 and len(judges) == 2
    _, _, board, _ = _calls(tmp_path)
    (cand, ev), = board
    assert cand.origin.patch_type == "fast_path" and ev.status is ds.Status.OK


def test_without_keys_the_run_uses_templates_and_says_how_to_enable_llms(tmp_path, example_evaluator):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CUCO_LLM"}
    res = subprocess.run([CUCO, "evolve", str(EXAMPLE), "--run-dir", str(tmp_path), "--generations", "1",
                          "--population", "1", "--workers", "1"], env=env, capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "To add LLM proposals" in res.stdout and "--llm openai:<model>" in res.stdout
    _, calls, board, _ = _calls(tmp_path)
    assert calls == [] and all(c.origin.kind is not ds.OriginKind.LLM for c, _ in board)
