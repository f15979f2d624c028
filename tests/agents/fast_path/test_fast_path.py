"""The fast-path agent end to end: the real openai client against the scripted fake LLM server,
and a real evaluate tool (guard -> build -> CPU emulation of the allgather_gemm example)."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from design_space import (
    BudgetExhausted, Candidate, DesignPoint, Origin, OriginKind, get_pattern, get_profile, valid_points,
)
from agents import conservative_point
from agents.fast_path import FastPathTools, run_fast_path
from agents.fast_path.blocks import frozen_text, marker_problem, unmark
from agents.llm import Budget, create_llm
from agents.llm.fake_server import FakeLLMServer, placeholder_key

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seeds" / "allgather_gemm_host.cu"
WRITE, JUDGE, FEEDBACK = "cuco-prompt fast_write v1", "cuco-prompt fast_judge v1", "## Your previous attempt"
MODEL = "gpt-fake"


@pytest.fixture(scope="module")
def pattern(example_spec):
    return get_pattern(example_spec.pattern)


@pytest.fixture(scope="module")
def hardware(example_spec):
    return get_profile(example_spec.hardware)


@pytest.fixture(scope="module")
def conservative(example_spec, pattern, hardware):
    return conservative_point(valid_points(pattern, hardware, example_spec.restrictions))


@pytest.fixture(scope="module")
def good_reply(pattern, conservative):
    return f"Here is the kernel.\n```cuda\n{pattern.render(conservative)}```\nDESIGN-POINT: {conservative.key()}\n"


@pytest.fixture(scope="module")
def uncompilable_reply(pattern, conservative):
    source = pattern.render(conservative).replace("const Problem p = problem(c);", "const Problem p = problem(c)")
    return f"```cuda\n{source}```\nDESIGN-POINT: {conservative.key()}\n"


@pytest.fixture(scope="module")
def evaluated():
    return []  # every source the evaluate tool was given, in order


@pytest.fixture(scope="module")
def tools(example_evaluator, evaluated):
    def evaluate(source, point):
        evaluated.append(source)
        cand = Candidate(origin=Origin(kind=OriginKind.LLM, patch_type="fast_path"), source=source, point=point)
        return example_evaluator.evaluate(cand)
    return FastPathTools(evaluate=evaluate)


@pytest.fixture
def serve():
    servers = []

    def start(rules):
        servers.append(FakeLLMServer(rules).start())
        return servers[-1]
    yield start
    for server in servers:
        server.stop()


def client_for(server, calls=None, budget=None):
    return create_llm(f"openai:{MODEL}", recorder=None if calls is None else calls.append, budget=budget,
                      timeout_s=30, max_retries=0, backoff_s=0,
                      environ={"OPENAI_API_KEY": placeholder_key(), "OPENAI_BASE_URL": server.base_url_openai})


@pytest.fixture
def run(example_spec, pattern, hardware, tools, tmp_path):
    def go(client, **kw):
        kw.setdefault("checkpoint_path", tmp_path / "fast_path.sqlite")
        kw.setdefault("thread_id", "run-1")
        return run_fast_path(spec=example_spec, pattern=pattern, hardware=hardware, client=client, tools=tools, **kw)
    return go


def nodes(result):
    return [(s.node, s.iteration) for s in result.trajectory]


def test_the_conservative_template_reply_is_ok_in_one_iteration_with_validated_blocks(serve, run, good_reply,
                                                                                       conservative):
    server = serve([{"when": WRITE, "times": 1, "reply": {"text": good_reply}}])
    calls = []
    result = run(client_for(server, calls), seed_source=SEED.read_text())
    assert result.status == "ok" and result.iterations == 1, result.reason
    assert nodes(result) == [("analyze", 0), ("choose", 0), ("write", 1), ("check", 1), ("annotate", 1)]
    cand = result.candidate
    assert cand.generation == 0 and cand.point == conservative
    assert cand.origin == Origin(kind=OriginKind.LLM, model=f"openai:{MODEL}", patch_type="fast_path")
    assert marker_problem(cand.source) is None and "#include \"cuco_comm.h\"" in frozen_text(cand.source)
    assert unmark(cand.source) == unmark(good_reply.split("```cuda\n")[1].split("```")[0])
    assert "validated" in result.trajectory[-1].summary
    assert result.evaluation.status.value == "ok"
    assert [(c.purpose, c.agent_step) for c in calls] == [("fast_path.write", "fast_path:write#1")]
    assert "ncclAllGather" in server.requests[0].prompt  # the seed's analysis reached the writer
    # finished: a rerun returns the stored result and calls nothing
    again = run(client_for(server))
    assert len(server.requests) == 1 and again.candidate == cand and nodes(again) == nodes(result)


def test_a_reply_that_does_not_compile_is_judged_and_the_second_reply_passes(serve, run, good_reply,
                                                                          uncompilable_reply):
    server = serve([{"when": JUDGE, "reply": {"text": "DIAGNOSIS: a missing semicolon in cuco_run\nFIX: add it"}},
                    {"when": FEEDBACK, "reply": {"text": good_reply}},
                    {"when": WRITE, "reply": {"text": uncompilable_reply}}])
    calls = []
    result = run(client_for(server, calls))
    assert result.status == "ok" and result.iterations == 2
    assert nodes(result) == [("analyze", 0), ("choose", 0), ("write", 1), ("check", 1), ("judge", 1), ("write", 2),
                             ("check", 2), ("annotate", 2)]
    failed = result.trajectory[3]
    assert failed.evaluation_status == "build_failed" and "error" in failed.reason
    assert "missing semicolon" in result.trajectory[4].summary
    assert [c.agent_step for c in calls] == ["fast_path:write#1", "fast_path:judge#1", "fast_path:write#2"]
    second_write = server.requests[2].prompt
    assert "missing semicolon" in second_write and failed.reason in second_write  # the diagnosis is fed back


def test_every_reply_wrong_gives_up_after_max_iterations(serve, run, pattern, conservative):
    no_entry = pattern.render(conservative).replace('extern "C" int cuco_run', "int not_the_entry")
    server = serve([{"when": JUDGE, "reply": {"text": "DIAGNOSIS: the entry point is missing"}},
                    {"when": WRITE, "reply": {"text": f"```cuda\n{no_entry}```"}}])
    result = run(client_for(server), max_iterations=3)
    assert result.status == "gave_up" and result.candidate is None and result.iterations == 3
    assert [n for n, _ in nodes(result)].count("write") == 3 and [n for n, _ in nodes(result)].count("judge") == 2
    assert nodes(result)[-1] == ("give_up", 3)
    assert "entry_point" in result.reason and result.evaluation.status.value == "rejected"


def test_a_garbled_reply_counts_as_a_failed_iteration_without_a_check(serve, run, good_reply, evaluated):
    server = serve([{"when": FEEDBACK, "reply": {"text": good_reply}},
                    {"when": WRITE, "times": 1, "reply": {"text": "Sure! ```cuda\n__global__ void k() {"}}])
    checks_before = len(evaluated)
    result = run(client_for(server))
    assert result.status == "ok" and result.iterations == 2
    assert nodes(result) == [("analyze", 0), ("choose", 0), ("write", 1), ("write", 2), ("check", 2), ("annotate", 2)]
    assert result.trajectory[2].reason == "no code in the reply"
    assert len(evaluated) == checks_before + 1
    assert "no code in the reply" in server.requests[1].prompt and JUDGE not in server.requests[1].prompt


def test_an_llm_call_that_fails_for_good_ends_in_gave_up_with_the_reason(serve, run, evaluated):
    server = serve([{"when": None, "reply": {"status": 500}}])
    checks_before = len(evaluated)
    result = run(client_for(server))
    assert result.status == "gave_up" and nodes(result)[-1] == ("give_up", 1)
    assert "500" in result.reason and len(evaluated) == checks_before


def test_budget_exhausted_propagates_and_a_rerun_resumes_after_the_completed_nodes(serve, run):
    server = serve([{"when": None, "reply": {"text": "no code today"}}])
    with pytest.raises(BudgetExhausted):
        run(client_for(server, budget=Budget(0.0)), max_iterations=1)
    assert server.requests == []
    result = run(client_for(server), max_iterations=1)
    assert result.status == "gave_up" and result.reason == "no code in the reply"
    assert nodes(result) == [("analyze", 0), ("choose", 0), ("write", 1), ("give_up", 1)]


RESUMABLE_RUN = textwrap.dedent("""
    import sys
    from pathlib import Path
    from cuco.spec_loader import load_spec
    from design_space import get_pattern, get_profile
    from agents.fast_path import FastPathTools, run_fast_path
    from agents.llm import create_llm

    def evaluate(source, point):  # not reached: the run is killed during its second write
        raise SystemExit("the killed run should not get to a check")

    spec = load_spec(Path("examples/allgather_gemm"))
    client = create_llm("openai:gpt-fake", timeout_s=120, max_retries=0)
    run_fast_path(spec=spec, pattern=get_pattern(spec.pattern), hardware=get_profile(spec.hardware), client=client,
                  tools=FastPathTools(evaluate=evaluate), checkpoint_path=Path(sys.argv[1]), thread_id="killed-run")
""")


def test_a_run_killed_during_an_llm_call_resumes_from_its_checkpoint_without_resending_finished_calls(
        serve, run, good_reply, tmp_path):
    server = serve([{"when": FEEDBACK, "times": 1, "reply": {"text": good_reply, "delay_s": 120}},
                    {"when": FEEDBACK, "reply": {"text": good_reply}},
                    {"when": WRITE, "reply": {"text": "garbled, no code"}}])
    checkpoint = tmp_path / "killed.sqlite"
    env = {**os.environ, "OPENAI_API_KEY": placeholder_key(), "OPENAI_BASE_URL": server.base_url_openai,
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", RESUMABLE_RUN, str(checkpoint)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while len(server.requests) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(server.requests) == 2, proc.communicate(timeout=5)[0].decode() if proc.poll() is not None else ""
    finally:
        proc.kill()
        proc.wait(timeout=10)
    result = run(client_for(server), checkpoint_path=checkpoint, thread_id="killed-run")
    assert result.status == "ok" and result.iterations == 2
    writes = [r.prompt for r in server.requests if WRITE in r.prompt]
    assert len(writes) == 3  # write 1 (killed run), write 2 (killed mid-call), write 2 again (resumed)
    assert [FEEDBACK in w for w in writes] == [False, True, True]  # the first write was not sent again
    assert nodes(result) == [("analyze", 0), ("choose", 0), ("write", 1), ("write", 2), ("check", 2), ("annotate", 2)]
    assert DesignPoint.parse_key(result.candidate.point.key()) == result.candidate.point
