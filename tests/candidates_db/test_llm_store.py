"""LLM calls and agent steps in ``candidates_db.Store``; every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from candidates_db import SCHEMA_VERSION, Store
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.errors import StoreError
from design_space.evaluation import Status
from design_space.llm import LLMCall
from design_space.run import RunInfo, RunStatus

T0 = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=timezone.utc)
HERE = Path(__file__).parent


def make_run(name: str = "r1") -> RunInfo:
    return RunInfo(name=name, spec_name="ag_gemm", pattern="allgather_gemm", spec_hash="f" * 64,
                   spec_json='{"name": "ag_gemm"}', config={}, status=RunStatus.RUNNING, note="",
                   created_at=T0, updated_at=T0)


def make_call(i: int = 0, **kw) -> LLMCall:
    fields = dict(id=f"call{i:012d}", purpose="slow_path.mutate", candidate_id="c0ffee000001",
                  agent_step=f"slow_path:gen1/island{i % 2}", provider="openai", model="gpt-x",
                  prompt=f"prompt {i}", response=f"response {i}", prompt_chars=9, tokens_in=100 + i,
                  tokens_out=10 + i, latency_s=1.5, cost_usd=0.01, retries=0,
                  created_at=T0 + timedelta(seconds=i))
    return LLMCall(**{**fields, **kw})


@pytest.fixture
def store(db_url: str):
    with Store.open(db_url) as s:
        s.create_run(make_run())
        yield s


def _engine_url(db_url: str) -> str:
    return db_url if "://" in db_url else f"sqlite:///{db_url}"


# --- LLM calls --------------------------------------------------------------------------------

def test_call_round_trips_every_field_with_unicode_and_a_300k_prompt(store):
    prompt = ("système: écris un noyau — 通信と計算 🚀 [bold]not markup[/]\n" * 6000)[:300_000]
    assert len(prompt) == 300_000
    call = LLMCall(id="a1b2c3d4e5f60718", purpose="fast_path.write", candidate_id="c0ffee000001",
                   agent_step="fast_path:write#2", provider="anthropic", model="claude-ünï", prompt=prompt,
                   response="```cuda\n__global__ void k() {}\n``` ✓", prompt_chars=len(prompt),
                   tokens_in=75_001, tokens_out=1234, latency_s=12.345678, cost_usd=0.123456789, retries=2,
                   error="HTTP 500 × 3: server error", created_at=T0)
    assert store.add_llm_call("r1", call) is True
    [back] = store.llm_calls("r1")
    assert back == call
    assert back.created_at.tzinfo is not None and not back.ok


def test_same_call_recorded_twice_is_stored_once(store):
    assert store.add_llm_call("r1", make_call(1)) is True
    assert store.add_llm_call("r1", make_call(1)) is False
    assert store.llm_usage("r1")["calls"] == 1


def test_call_for_an_unknown_run_is_refused(store):
    with pytest.raises(StoreError, match="no run named 'nope'"):
        store.add_llm_call("nope", make_call())


def test_nul_characters_are_stored_as_a_replacement_character(store):
    store.add_llm_call("r1", make_call(response="garbled\x00reply", error="bad\x00byte"))
    [back] = store.llm_calls("r1")
    assert back.response == "garbled\ufffdreply" and back.error == "bad\ufffdbyte"


def test_calls_filter_by_candidate_and_purpose_in_time_order(store):
    calls = [make_call(3, candidate_id="cand-b", purpose="slow_path.repair"),
             make_call(1, candidate_id="cand-a"),
             make_call(2, candidate_id=None, purpose="fast_path.judge"),
             make_call(0, candidate_id="cand-b")]
    for c in calls:
        store.add_llm_call("r1", c)
    assert [c.id for c in store.llm_calls("r1")] == [make_call(i).id for i in range(4)]
    assert [c.id for c in store.llm_calls("r1", candidate_id="cand-b")] == [make_call(0).id, make_call(3).id]
    assert [c.id for c in store.llm_calls("r1", purpose="slow_path.mutate")] == [make_call(0).id, make_call(1).id]
    assert store.llm_calls("r1", candidate_id="cand-b", purpose="slow_path.repair") == [calls[0]]
    assert store.llm_calls("r1", candidate_id="nobody") == []


def test_calls_of_one_run_stay_out_of_another(store):
    store.create_run(make_run("r2"))
    store.add_llm_call("r1", make_call(0))
    store.add_llm_call("r2", make_call(1))
    assert [c.id for c in store.llm_calls("r2")] == [make_call(1).id]
    assert store.llm_usage("r2")["calls"] == 1


def test_usage_sums_calls_failures_tokens_and_cost_by_model_and_purpose(store):
    store.add_llm_call("r1", make_call(0, tokens_in=1000, tokens_out=200, cost_usd=0.25, prompt_chars=4000))
    store.add_llm_call("r1", make_call(1, tokens_in=500, tokens_out=100, cost_usd=0.125, retries=1,
                                       purpose="slow_path.repair", prompt_chars=9000))
    store.add_llm_call("r1", make_call(2, provider="anthropic", model="claude-y", tokens_in=0, tokens_out=0,
                                       cost_usd=0.0, retries=3, error="500 storm", latency_s=4.0))
    u = store.llm_usage("r1")
    assert (u["calls"], u["failed"], u["retries"]) == (3, 1, 4)
    assert (u["tokens_in"], u["tokens_out"]) == (1500, 300)
    assert u["cost_usd"] == pytest.approx(0.375) and u["latency_s"] == pytest.approx(7.0)
    assert u["max_prompt_chars"] == 9000
    assert set(u["by_model"]) == {"openai:gpt-x", "anthropic:claude-y"}
    gpt = u["by_model"]["openai:gpt-x"]
    assert (gpt["calls"], gpt["failed"], gpt["tokens_in"], gpt["tokens_out"]) == (2, 0, 1500, 300)
    assert gpt["cost_usd"] == pytest.approx(0.375)
    assert u["by_model"]["anthropic:claude-y"]["failed"] == 1
    assert {p: g["calls"] for p, g in u["by_purpose"].items()} == {"slow_path.mutate": 2, "slow_path.repair": 1}


def test_usage_of_a_run_without_calls_is_all_zeros(store):
    u = store.llm_usage("r1")
    assert u["calls"] == u["failed"] == u["tokens_in"] == u["tokens_out"] == 0
    assert u["cost_usd"] == 0.0 and u["by_model"] == {} and u["by_purpose"] == {}


def test_worker_threads_record_calls_concurrently(store):
    errors: list[BaseException] = []

    def record(worker: int) -> None:
        try:
            for i in range(10):
                store.add_llm_call("r1", make_call(worker * 100 + i, cost_usd=0.5))
        except BaseException as e:  # noqa: BLE001 -- reported by the assert below
            errors.append(e)

    threads = [threading.Thread(target=record, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    u = store.llm_usage("r1")
    assert u["calls"] == 40 and u["cost_usd"] == pytest.approx(20.0)


# --- agent steps ------------------------------------------------------------------------------

def test_agent_steps_append_in_order_and_keep_details(store):
    got = store.add_agent_steps("r1", "fast_path", [
        {"node": "analyze", "summary": "3 host collectives, 2 kernels"},
        {"node": "write", "iteration": 1, "summary": "lsa, CTA issuer", "backend": "lsa"},
        {"node": "build", "iteration": 1, "status": Status.BUILD_FAILED, "reason": "nvcc: error",
         "candidate_id": "c0ffee000001", "created_at": T0, "logs": ("a", "b")},
    ])
    assert got == [0, 1, 2]
    assert store.add_agent_steps("r1", "fast_path", [{"node": "judge", "iteration": 1}]) == [3]
    steps = store.agent_steps("r1", "fast_path")
    assert [s["node"] for s in steps] == ["analyze", "write", "build", "judge"]
    build = steps[2]
    assert build == {"agent": "fast_path", "step": 2, "node": "build", "iteration": 1, "summary": "",
                     "status": "build_failed", "reason": "nvcc: error", "candidate_id": "c0ffee000001",
                     "created_at": T0, "logs": ["a", "b"]}
    assert steps[1]["backend"] == "lsa" and steps[0]["status"] is None


def test_agent_step_with_an_index_replaces_the_stored_one(store):
    store.add_agent_steps("r1", "fast_path", [{"node": "write"}, {"node": "build", "status": "ok"}])
    # A resumed graph re-records its whole trajectory: nothing is doubled.
    again = [{"step": 0, "node": "write", "summary": "v2"}, {"step": 1, "node": "build", "status": "ok"}]
    assert store.add_agent_steps("r1", "fast_path", again) == [0, 1]
    steps = store.agent_steps("r1")
    assert len(steps) == 2 and steps[0]["summary"] == "v2"


def test_agent_steps_filter_by_agent(store):
    store.add_agent_steps("r1", "fast_path", [{"node": "write"}])
    store.add_agent_steps("r1", "slow_path", [{"node": "meta_summary"}])
    assert [s["agent"] for s in store.agent_steps("r1")] == ["fast_path", "slow_path"]
    assert [s["node"] for s in store.agent_steps("r1", "slow_path")] == ["meta_summary"]
    assert store.agent_steps("r1", "other") == []


def test_agent_step_needs_a_node_and_a_run(store):
    with pytest.raises(StoreError, match="has no 'node'"):
        store.add_agent_steps("r1", "fast_path", [{"summary": "?"}])
    with pytest.raises(StoreError, match="no run named"):
        store.add_agent_steps("nope", "fast_path", [{"node": "write"}])
    assert store.agent_steps("r1") == []


# --- upgrade from schema version 1 ------------------------------------------------------------

def _create_v1_database(db_url: str) -> None:
    """A database exactly as the version-1 code wrote it, with one run and one candidate."""
    engine = create_engine(_engine_url(db_url))
    ddl = (HERE / f"schema_v1.{engine.dialect.name}.sql").read_text()
    statements = [s for s in "\n".join(line for line in ddl.splitlines() if not line.startswith("--")).split(";")
                  if s.strip()]
    with engine.begin() as conn:
        for sql in statements:
            conn.exec_driver_sql(sql)
        conn.execute(text("INSERT INTO schema_version (id, version, updated_at) VALUES (1, 1, :t)"), {"t": T0})
        conn.execute(text("INSERT INTO runs (name, spec_name, pattern, spec_hash, spec_json, config, status, note, "
                          "created_at, updated_at) VALUES ('old', 's', 'allgather_gemm', 'h', '{}', '{}', "
                          "'complete', '', :t, :t)"), {"t": T0})
        conn.execute(text("INSERT INTO candidates (id, seq, run_name, parent_ids, generation, island, origin_kind, "
                          "origin_patch_type, source, content_hash, created_at) VALUES ('cand00000001', 1, 'old', "
                          "'[]', 0, 0, 'template', 'conservative', '// v1', 'hash1', :t)"), {"t": T0})
    engine.dispose()


def test_a_version_1_database_upgrades_in_place(db_url):
    if "://" not in db_url:
        Path(db_url).parent.mkdir(parents=True, exist_ok=True)
    _create_v1_database(db_url)
    with Store.open(db_url) as s:
        assert [c.id for c in s.candidates("old")] == ["cand00000001"]
        assert s.candidates("old")[0].origin == Origin(kind=OriginKind.TEMPLATE, patch_type="conservative")
        assert s.add_llm_call("old", make_call(candidate_id="cand00000001")) is True
        s.add_agent_steps("old", "fast_path", [{"node": "write"}])
        s.add_candidate("old", Candidate(origin=Origin(kind=OriginKind.LLM, model="openai:gpt-x",
                                                        patch_type="diff"), source="// v2"))
    engine = create_engine(_engine_url(db_url))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version FROM schema_version")).scalars().all() == [SCHEMA_VERSION] == [3]
    engine.dispose()
    with Store.open(db_url) as s:  # and opens again without another upgrade
        assert [c.candidate_id for c in s.llm_calls("old")] == ["cand00000001"]
        assert len(s.candidates("old")) == 2 and len(s.agent_steps("old")) == 1
