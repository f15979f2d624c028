"""Retries, timeouts and failures for good, driven by scripted replies of the fake server."""

import pytest

from agents.llm import create_llm
from design_space.errors import LLMError
from tests.agents.llm.helpers import FAST, always, ask, fake_env

NAMES = ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"]
IDS = ["openai", "anthropic"]


def client_for(server, name, calls, **options):
    return create_llm(name, recorder=calls.append, environ=fake_env(server), **{**FAST, **options})


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_a_429_is_retried_and_the_success_records_one_retry(serve, calls, name):
    server = serve([{"when": None, "times": 1, "reply": {"status": 429, "retry_after": 0}}] + always("after the 429"))

    reply = client_for(server, name, calls).complete(ask())

    assert reply.text == "after the 429"
    assert [c.retries for c in calls] == [1] and calls[0].ok
    assert server.served == [1, 1]


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_a_500_storm_past_the_retries_fails_for_good_and_is_recorded(serve, calls, name):
    server = serve([{"when": None, "times": None, "reply": {"status": 500}}])

    with pytest.raises(LLMError) as raised:
        client_for(server, name, calls, max_retries=3).complete(ask(candidate_id="c7"))

    assert "after 3 retries" in raised.value.problem and "500" in raised.value.problem
    assert "try again later or use another --llm" in raised.value.fix
    [call] = calls
    assert not call.ok and call.error.startswith("server:") and call.retries == 3
    assert call.response == "" and call.cost_usd == 0 and call.candidate_id == "c7"
    assert len(server.requests) == 4


@pytest.mark.parametrize("status", [401, 403, 400])
def test_an_auth_or_request_refusal_fails_at_once(serve, calls, status):
    server = serve([{"when": None, "times": None, "reply": {"status": status}}])

    with pytest.raises(LLMError) as raised:
        client_for(server, "openai:gpt-4o", calls).complete(ask())

    assert len(server.requests) == 1 and calls[0].retries == 0
    if status == 401:
        assert "OPENAI_API_KEY" in raised.value.fix


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_a_non_json_200_is_retried_once_then_fails(serve, calls, name, stream):
    server = serve([{"when": None, "times": None, "reply": {"garbled": True}}])

    with pytest.raises(LLMError) as raised:
        client_for(server, name, calls, stream=stream).complete(ask())

    assert len(server.requests) == 2  # once more, not max_retries more
    assert calls[0].error.startswith("protocol:") and calls[0].retries == 1
    assert "wire format" in raised.value.fix


def test_a_garbled_200_that_passes_on_the_retry_is_a_success(serve, calls):
    server = serve([{"when": None, "times": 1, "reply": {"garbled": True}}] + always("fine now"))
    assert client_for(server, "anthropic:claude-sonnet-4-5", calls).complete(ask()).text == "fine now"
    assert calls[0].retries == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_an_empty_reply_is_returned_not_raised(serve, calls, name, stream):
    server = serve([{"when": None, "times": None, "reply": {"empty": True}}])

    reply = client_for(server, name, calls, stream=stream).complete(ask())

    assert reply.text == "" and calls[0].ok and calls[0].tokens_out == 0 and calls[0].retries == 0


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_a_reply_slower_than_the_timeout_is_retried_then_fails(serve, calls, name):
    server = serve([{"when": None, "times": None, "reply": {"delay_s": 2.0, "text": "too late"}}])

    with pytest.raises(LLMError) as raised:
        client_for(server, name, calls, timeout_s=0.25, max_retries=1).complete(ask())

    assert calls[0].error.startswith("timeout:") and calls[0].retries == 1
    assert len(server.requests) == 2 and "raise the LLM timeout" in raised.value.fix
    assert calls[0].latency_s < 1.5  # gave up at the timeout, did not wait for the reply


def test_a_slow_reply_within_the_timeout_arrives(serve, calls):
    server = serve([{"when": None, "times": None, "reply": {"delay_s": 0.2, "text": "worth the wait"}}])
    client = client_for(server, "openai:gpt-4o", calls, stream=True, timeout_s=3)
    assert client.complete(ask()).text == "worth the wait"


def test_an_unreachable_server_is_a_connection_failure(serve, calls):
    server = serve(always("never"))
    env = fake_env(server)
    server.stop()  # nothing listens on that port any more

    client = create_llm("openai:gpt-4o", recorder=calls.append, environ=env, max_retries=1, **FAST)
    with pytest.raises(LLMError) as raised:
        client.complete(ask())

    assert calls[0].error.startswith("connection:") and calls[0].retries == 1
    assert server.base_url_openai in raised.value.fix


def test_a_small_retry_after_is_waited_out_and_a_huge_one_is_not(serve, calls):
    server = serve([{"when": "small", "times": 1, "reply": {"status": 429, "retry_after": 0.3}},
                    {"when": "huge", "times": 1, "reply": {"status": 503, "retry_after": 3600}}] + always("ok"))
    client = client_for(server, "anthropic:claude-sonnet-4-5", calls)

    client.complete(ask("small"))
    client.complete(ask("huge"))

    small, huge = calls
    assert small.retries == huge.retries == 1
    assert small.latency_s >= 0.3  # as the server asked
    assert huge.latency_s < 1.0  # an hour is not waited: our (tiny) backoff applied instead

