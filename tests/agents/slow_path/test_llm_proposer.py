"""The slow path end to end: LLMProposer driving the real openai / anthropic clients against the
scripted fake server, on parents rendered from the real templates."""

import re

import pytest

from agents import ProposalRequest, ProposerTools, create_proposer
from agents.llm import Budget, create_llm
from agents.llm.fake_server import FakeLLMServer, placeholder_key
from agents.slow_path import LLMProposer
from agents.slow_path.schedule import Schedule
from design_space.errors import BudgetExhausted

from .conftest import BASE_KEY, H100, PATTERN, candidate, evaluation, member, render

PARENT = member(BASE_KEY, 1.0, cid="parent0")
POINT_256K = "lsa/sequential/global_barrier/cta/256K/4"
MUTATE, REPAIR, META = "cuco-prompt slow_mutate", "cuco-prompt slow_repair", "cuco-prompt slow_meta"
DIFFS_ONLY = Schedule(explore_forms={"diff": 1.0}, exploit_forms={"diff": 1.0})
FULL_ONLY = Schedule(explore_forms={"full": 1.0}, exploit_forms={"full": 1.0})


def _diff(old: str, new: str, point: str) -> str:
    return f"Bigger chunks.\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\nDESIGN-POINT: {point}\n"


def _chunk_diff(kib: int) -> str:
    return _diff("#define CHUNK_BYTES 65536", f"#define CHUNK_BYTES {kib * 1024}",
                 f"lsa/sequential/global_barrier/cta/{kib}K/4")


GOOD = _chunk_diff(256)


def _full(source: str, point: str = BASE_KEY) -> str:
    return f"Here is the file.\n```cuda\n{source}```\nDESIGN-POINT: {point}\n"


class Tools:
    """The loop's gates as a test sees them: a compile that fails on a marker the fake LLM emits
    (the real tool is nvcc, lent by the loop), recording every source it was asked about."""

    def __init__(self) -> None:
        self.compiled: list[str] = []

    def compile(self, source: str):
        self.compiled.append(source)
        if "BROKEN_MARKER" in source:
            return False, "kernel.cu(42): error: identifier \"BROKEN_MARKER\" is undefined"
        return True, ""

    def lend(self) -> ProposerTools:
        return ProposerTools(compile=self.compile)


def _client(server, model="fake-a", provider="openai", calls=None, budget=None):
    env = {"OPENAI_API_KEY": placeholder_key(), "OPENAI_BASE_URL": server.base_url_openai,
           "ANTHROPIC_API_KEY": placeholder_key(), "ANTHROPIC_BASE_URL": server.base_url_anthropic}
    return create_llm(f"{provider}:{model}", recorder=(calls.append if calls is not None else None), budget=budget,
                      environ=env, max_retries=0, timeout_s=20, backoff_s=0)


def _request(spec, history=(PARENT,), generation=1, count=1, tools=None):
    return ProposalRequest(spec=spec, pattern=PATTERN, hardware=H100, generation=generation, count=count, seed=0,
                           history=tuple(history), known_hashes=frozenset(c.content_hash for c, _ in history),
                           tools=tools or ProposerTools())


def test_a_good_diff_becomes_a_candidate_with_its_origin_and_declared_point(spec):
    calls, tools = [], Tools()
    with FakeLLMServer([{"when": MUTATE, "reply": {"text": GOOD}}]) as server:
        proposer = LLMProposer([_client(server, calls=calls)], schedule=DIFFS_ONLY)
        out = proposer.propose(_request(spec, tools=tools.lend()))
    assert len(out) == 1
    cand = out[0]
    assert cand.origin.label() == "llm/openai:fake-a/diff"
    assert cand.point.key() == POINT_256K and cand.parent_ids == ("parent0",) and cand.generation == 1
    assert "#define CHUNK_BYTES 262144" in cand.source and tools.compiled == [cand.source]
    (call,) = calls
    assert call.purpose == "slow_path.mutate" and call.candidate_id == cand.id
    assert call.agent_step == f"slow_path:gen1/island{cand.island}" and call.tokens_in > 1000 and call.ok
    assert proposer.rejections == [] and proposer.prompt_size_stats()["chars_max"] <= 24_000
    assert 0 < proposer.seconds["llm"] < proposer.seconds["propose"]


def test_the_proposer_is_registered_as_llm(spec):
    with FakeLLMServer([]) as server:
        assert isinstance(create_proposer("llm", clients=[_client(server)]), LLMProposer)


def test_without_an_evaluated_parent_it_proposes_nothing_and_calls_no_llm(spec):
    unevaluated = (candidate(cid="x"), None)
    with FakeLLMServer([{"when": None, "reply": {"text": GOOD}}]) as server:
        assert LLMProposer([_client(server)]).propose(_request(spec, history=[unevaluated])) == []
        assert server.requests == []


def test_a_patch_that_does_not_apply_gets_one_repair_call(spec):
    calls = []
    bad = _diff("#define CHUNK_BYTES 4096", "#define CHUNK_BYTES 262144", POINT_256K)
    with FakeLLMServer([{"when": REPAIR, "reply": {"text": GOOD}}, {"when": MUTATE, "reply": {"text": bad}}]) as server:
        out = LLMProposer([_client(server, calls=calls)], schedule=DIFFS_ONLY).propose(_request(spec))
        repair_prompt = server.requests[1].prompt
    assert [c.purpose for c in calls] == ["slow_path.mutate", "slow_path.repair"]
    assert "SEARCH block 1 matches nothing inside an evolve block" in repair_prompt
    assert len(out) == 1 and out[0].origin.patch_type == "repair" and out[0].point.key() == POINT_256K
    assert calls[1].candidate_id == out[0].id


def test_a_repair_that_fails_again_is_a_recorded_rejection(spec):
    bad = _diff("#define CHUNK_BYTES 4096", "#define CHUNK_BYTES 262144", POINT_256K)
    with FakeLLMServer([{"when": None, "reply": {"text": bad}}]) as server:
        proposer = LLMProposer([_client(server)], schedule=DIFFS_ONLY)
        assert proposer.propose(_request(spec)) == []
        assert len(server.requests) == 2  # one mutation, ONE repair, then the slot is given up
    ((reason, model),) = proposer.rejections
    assert model == "openai:fake-a" and reason.startswith("the edit could not be applied after a repair attempt")
    assert "SEARCH block 1 matches nothing" in reason


def _graft(key: str) -> str:
    """The parent's frozen frame around the evolve blocks of another point's template: a real rewrite."""
    from agents.slow_path.blocks import evolve_text
    parent = PARENT[0].source
    return parent.replace(evolve_text(parent), evolve_text(render(key)))


def test_code_that_does_not_compile_is_repaired_with_the_compile_log(spec):
    tools = Tools()
    other = "lsa/stream_overlap/per_peer_signal/warp/16K/8"
    broken = _graft(other).replace("#define COMM_THREADS 256", "#define COMM_THREADS 256\nBROKEN_MARKER")
    fix = ("<<<<<<< SEARCH\n#define COMM_THREADS 256\nBROKEN_MARKER\n=======\n#define COMM_THREADS 128\n>>>>>>> REPLACE\n"
           f"DESIGN-POINT: {other}\n")
    rules = [{"when": REPAIR, "reply": {"text": fix}}, {"when": MUTATE, "reply": {"text": _full(broken, other)}}]
    with FakeLLMServer(rules) as server:
        out = LLMProposer([_client(server)], schedule=FULL_ONLY).propose(_request(spec, tools=tools.lend()))
        repair_prompt = server.requests[1].prompt
    assert 'identifier "BROKEN_MARKER" is undefined' in repair_prompt and "The code does not compile" in repair_prompt
    assert len(out) == 1 and out[0].origin.label() == "llm/openai:fake-a/repair" and out[0].point.key() == other
    assert "BROKEN_MARKER" not in out[0].source and "#define COMM_THREADS 128" in out[0].source
    assert len(tools.compiled) == 2


def test_a_near_duplicate_is_rejected_before_any_compile_or_repair(spec):
    tools = Tools()
    renamed = re.sub(r"\bchunk_rows\b", "rows_per_chunk", PARENT[0].source).replace("// Rows of A", "// A's rows")
    with FakeLLMServer([{"when": None, "reply": {"text": _full(renamed)}}]) as server:
        proposer = LLMProposer([_client(server)], schedule=FULL_ONLY)
        assert proposer.propose(_request(spec, tools=tools.lend())) == []
        assert len(server.requests) == 1
    assert tools.compiled == []
    ((reason, _),) = proposer.rejections
    assert reason.startswith("near-duplicate: similarity 1.000 >= 0.92 to candidate parent0")
    assert proposer.stats["novelty_rejected"] == 1


@pytest.mark.parametrize("reply, why", [
    ({"empty": True}, "unusable reply: the reply is empty"),
    ({"text": "Sure! I would use GIN here."}, "unusable reply: the reply holds no"),
])
def test_an_empty_or_garbled_reply_is_rejected_with_its_reason(spec, reply, why):
    with FakeLLMServer([{"when": None, "reply": reply}]) as server:
        proposer = LLMProposer([_client(server)])
        assert proposer.propose(_request(spec)) == []
        assert len(server.requests) == 1
    assert proposer.rejections[0][0].startswith(why)


def test_a_failing_model_is_skipped_and_another_one_serves(spec):
    with FakeLLMServer([{"when": None, "reply": {"status": 500}}]) as down, \
            FakeLLMServer([{"when": None, "times": 1, "reply": {"text": GOOD}},
                           {"when": None, "reply": {"text": _chunk_diff(16)}}]) as up:
        proposer = LLMProposer([_client(down, "bad"), _client(up, "good")], schedule=DIFFS_ONLY)
        out = proposer.propose(_request(spec, count=2))
        assert len(down.requests) == 1 and len(up.requests) == 2  # the bad model is not asked again
    assert [c.origin.model for c in out] == ["openai:good", "openai:good"]
    assert proposer.rejections[0][1] == "openai:bad" and proposer.rejections[0][0].startswith("LLM call failed")


def test_with_every_model_failing_it_returns_fewer_candidates(spec):
    with FakeLLMServer([{"when": None, "reply": {"garbled": True}}]) as server:
        proposer = LLMProposer([_client(server)])
        assert proposer.propose(_request(spec, count=3)) == []
        assert len(server.requests) == 1
    assert proposer.stats["llm_errors"] == 1


def test_an_exhausted_budget_propagates(spec):
    with FakeLLMServer([{"when": None, "reply": {"text": GOOD}}]) as server:
        proposer = LLMProposer([_client(server, budget=Budget(limit_usd=1.0, spent_usd=1.0))])
        with pytest.raises(BudgetExhausted):
            proposer.propose(_request(spec))
        assert server.requests == []


def test_ucb_spreads_calls_over_two_models_and_learns_from_results(spec):
    replies = [{"when": MUTATE, "times": 1, "reply": {"text": _chunk_diff(k)}} for k in (4, 16, 256, 1024)]
    with FakeLLMServer(replies) as server:
        proposer = LLMProposer([_client(server, "fake-a"), _client(server, "fake-b")], schedule=DIFFS_ONLY)
        out = proposer.propose(_request(spec, count=4))
        models = [r.model for r in server.requests]
    assert sorted(models) == ["fake-a", "fake-a", "fake-b", "fake-b"] and len(out) == 4
    # the next generation sees them evaluated: fake-b's children improved, fake-a's failed
    history = [PARENT] + [(c, evaluation(c, 1.5 if c.origin.model == "openai:fake-b" else None)) for c in out]
    proposer.propose(_request(spec, history=history, generation=2, count=0))
    counts = proposer.bandit.counts()
    assert counts["openai:fake-b"]["mean_reward"] == 0.5 and counts["openai:fake-a"]["mean_reward"] == 0.0


def test_the_anthropic_client_drives_the_slow_path_too(spec):
    calls = []
    with FakeLLMServer([{"when": MUTATE, "reply": {"text": GOOD}}]) as server:
        out = LLMProposer([_client(server, "fake-c", provider="anthropic", calls=calls)],
                          schedule=DIFFS_ONLY).propose(_request(spec))
    assert out[0].origin.label() == "llm/anthropic:fake-c/diff" and calls[0].provider == "anthropic"


def test_meta_summaries_are_written_every_k_generations_and_fed_into_prompts(spec):
    calls = []
    rules = [{"when": META, "reply": {"text": "- keep lsa; try per_tile_signal"}},
             {"when": MUTATE, "reply": {"text": GOOD}}]
    with FakeLLMServer(rules) as server:
        proposer = LLMProposer([_client(server, calls=calls)], schedule=DIFFS_ONLY, meta_every=3)
        proposer.propose(_request(spec, generation=3))
        mutate_prompt = server.requests[-1].prompt
    assert [c.purpose for c in calls] == ["slow_path.meta", "slow_path.mutate"]
    assert calls[0].agent_step == "slow_path:gen3/meta"
    assert "- keep lsa; try per_tile_signal" in mutate_prompt and proposer.meta_model == "openai:fake-a"


def test_a_failed_meta_call_falls_back_to_the_deterministic_summary(spec):
    rules = [{"when": META, "reply": {"status": 500}}, {"when": MUTATE, "reply": {"text": GOOD}}]
    with FakeLLMServer(rules) as server:
        proposer = LLMProposer([_client(server)], schedule=DIFFS_ONLY, meta_every=3)
        out = proposer.propose(_request(spec, generation=3))
        mutate_prompt = server.requests[-1].prompt
    assert len(out) == 1 and proposer.meta_model is None
    assert "Observed so far (automatic summary):" in mutate_prompt and proposer.stats["meta_fallback"] == 1


def test_a_prompt_a_small_local_model_refuses_is_rebuilt_once_to_fit_its_window(spec):
    # llama-cpp-python publishes no window: the first prompt is refused with its exact text, the
    # client reads the window and the prompt's size from it, and the proposer rebuilds the prompt
    from agents.llm.fake_context import FakeContext
    from agents.llm.fake_server import tokens

    calls = []
    with FakeLLMServer([{"when": MUTATE, "reply": {"text": GOOD}}],
                       context=FakeContext(tokens=5000, style="llama-cpp-python")) as server:
        client = create_llm(f"openai-compatible:smollm2@{server.base_url_openai}", recorder=calls.append,
                            environ={}, max_retries=0, timeout_s=20, backoff_s=0)
        proposer = LLMProposer([client], schedule=DIFFS_ONLY)
        out = proposer.propose(_request(spec, tools=Tools().lend()))
        first, second = server.requests
    assert tokens(first.prompt) >= 5000 and tokens(second.prompt) + second.body["max_tokens"] <= 5000
    assert len(out) == 1 and out[0].point.key() == POINT_256K
    assert proposer.stats["prompt_refitted"] == 1 and [c.ok for c in calls] == [False, True]


def test_a_window_too_small_for_a_whole_kernel_asks_for_a_diff(spec):
    from agents.llm.fake_context import FakeContext

    with FakeLLMServer([{"when": MUTATE, "reply": {"text": GOOD}}],
                       context=FakeContext(tokens=6144, style="llama.cpp")) as server:
        client = create_llm(f"openai-compatible:smollm2@{server.base_url_openai}", environ={}, max_retries=0,
                            timeout_s=20, backoff_s=0)
        proposer = LLMProposer([client], schedule=FULL_ONLY)  # an ~8.7k-character parent: ~3.4k tokens to echo
        out = proposer.propose(_request(spec, tools=Tools().lend()))
        (sent,) = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(out) == 1 and out[0].origin.patch_type == "diff" and proposer.stats["full_asked_as_diff"] == 1
    from agents.llm.fake_server import tokens
    assert "SEARCH" in sent.prompt and tokens(sent.prompt) + sent.body["max_tokens"] <= 6144
