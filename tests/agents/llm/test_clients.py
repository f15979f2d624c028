"""Both wire formats through the real SDKs, plain and streaming; keys and base URLs."""

import math

import pytest

from agents.llm import create_llm
from design_space.errors import ConfigError
from tests.agents.llm.helpers import FAST, always, ask, fake_env

REPLY = "__global__ void k() { /* a reply long enough to arrive in several streamed pieces */ }"
PROVIDERS = [("openai:gpt-4o", "/v1/chat/completions"), ("anthropic:claude-sonnet-4-5", "/v1/messages")]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name,path", PROVIDERS, ids=["openai", "anthropic"])
def test_a_call_returns_the_text_and_records_tokens_and_cost(serve, calls, name, path, stream):
    server = serve(always(REPLY))
    client = create_llm(name, recorder=calls.append, stream=stream, environ=fake_env(server), **FAST)
    request = ask(candidate_id="c1", agent_step="slow_path:gen1/island0")

    reply = client.complete(request)

    assert reply.text == REPLY
    [call] = calls
    assert call == reply.call and call.ok and call.retries == 0
    assert (call.provider, call.model) == tuple(name.split(":"))
    assert call.prompt == request.prompt_text and call.prompt_chars == len(request.prompt_text)
    assert call.response == REPLY
    assert (call.candidate_id, call.agent_step, call.purpose) == ("c1", "slow_path:gen1/island0", "test")
    # the server counts ceil(chars/4): the client took the API's usage, not its own estimate
    assert call.tokens_in == math.ceil(len(request.prompt_text) / 4)
    assert call.tokens_out == math.ceil(len(REPLY) / 4)
    assert call.cost_usd > 0 and call.latency_s > 0
    [received] = server.requests
    assert (received.path, received.model, received.stream) == (path, name.split(":")[1], stream)
    assert received.prompt == request.prompt_text


def test_the_sdks_follow_the_base_url_variables_of_the_environment(serve, calls, monkeypatch):
    server = serve(always("from the environment"))
    for var, value in fake_env(server).items():
        monkeypatch.setenv(var, value)
    for name in ("openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"):
        assert create_llm(name, recorder=calls.append, **FAST).complete(ask()).text == "from the environment"
    assert len(server.requests) == 2


@pytest.mark.parametrize("name,variable", [("openai:gpt-4o", "OPENAI_API_KEY"),
                                           ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY")])
def test_a_missing_key_names_the_variable_to_set(name, variable):
    with pytest.raises(ConfigError) as raised:
        create_llm(name, environ={})
    assert variable in raised.value.fix


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_openai_compatible_talks_to_its_base_url_without_a_key(serve, calls, stream):
    server = serve(always("local model says hi"))
    client = create_llm(f"openai-compatible:llama3@{server.base_url_openai}", recorder=calls.append,
                        stream=stream, environ={}, **FAST)

    assert client.complete(ask()).text == "local model says hi"
    assert client.label == "openai-compatible:llama3"
    assert calls[0].provider == "openai-compatible" and calls[0].cost_usd == 0
    assert server.requests[0].body["max_tokens"] == 8192  # the older field local servers understand


def test_openai_sends_max_completion_tokens_and_no_temperature_to_reasoning_models(serve):
    server = serve(always("ok"))
    env = fake_env(server)
    create_llm("openai:gpt-4.1", environ=env, **FAST).complete(ask())
    create_llm("openai:o4-mini", environ=env, **FAST).complete(ask())
    plain, reasoning = (r.body for r in server.requests)
    assert plain["max_completion_tokens"] == 8192 and plain["temperature"] == 0.7
    assert "temperature" not in reasoning


def test_an_unpriced_model_costs_nothing_and_says_so(serve, calls, caplog):
    server = serve(always("ok"))
    client = create_llm("openai:my-finetune", recorder=calls.append, environ=fake_env(server), **FAST)
    client.complete(ask())
    assert client.price_known is False and calls[0].cost_usd == 0
    assert "no price known for openai:my-finetune" in caplog.text
