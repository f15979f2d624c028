"""Models users actually run: the context window is discovered from the server (llama.cpp, vLLM,
Ollama) or given, requests are sized to fit, and a context-length refusal is retried once with
what it states -- against the fake server speaking each server's exact refusal texts."""

import pytest

from agents.llm import create_llm
from agents.llm.context_window import MARGIN_TOKENS, discover, parse_refusal
from agents.llm.fake_context import FakeContext
from agents.llm.fake_server import FakeLLMServer, tokens
from design_space.errors import ConfigError, LLMError, PromptTooLong

from .helpers import ask, fake_env

LLAMA_CPP_PYTHON = ("This model's maximum context length is 8192 tokens. However, you requested 17098 tokens "
                    "(8906 in the messages, 8192 in the completion). Please reduce the length of the messages or "
                    "completion.")


def _local(server, calls=None, **kw):
    return create_llm(f"openai-compatible:smollm2@{server.base_url_openai}", environ=fake_env(server), max_retries=0,
                      recorder=(calls.append if calls is not None else None), **kw)


def _server(style, n=2048, publish=True, reply="ok"):
    return FakeLLMServer([{"when": None, "reply": {"text": reply}}],
                         context=FakeContext(tokens=n, style=style, publish=publish))


@pytest.mark.parametrize("text, limit, prompt", [
    (LLAMA_CPP_PYTHON, 8192, 8906),
    ("Error code: 400 - {'error': {'message': \"This model's maximum context length is 128000 tokens. However, your "
     "messages resulted in 130512 tokens. Please reduce the length of the messages.\", 'code': "
     "'context_length_exceeded'}}", 128000, 130512),
    ('{"error":{"code":400,"message":"the request exceeds the available context size, try increasing the context '
     'size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":9001,"n_ctx":8192}}',
     8192, 9001),
    ("prompt is too long: 210000 tokens > 200000 maximum", 200000, 210000),
])
def test_context_refusals_of_each_server_are_read(text, limit, prompt):
    refusal = parse_refusal(text)
    assert refusal is not None and (refusal.limit, refusal.prompt_tokens) == (limit, prompt)


def test_other_refusals_are_not_context_refusals():
    assert parse_refusal("Error code: 400 - invalid model name 'gpt-x'") is None


@pytest.mark.parametrize("style, source", [("llama.cpp", "llama.cpp /props"), ("vllm", "vLLM /v1/models"),
                                           ("ollama", "Ollama /api/show")])
def test_the_window_is_discovered_from_the_server(style, source):
    with _server(style, n=8192) as server:
        found = discover(server.base_url_openai, "smollm2")
    assert found is not None and (found.tokens, found.source) == (8192, source)


def test_a_server_that_publishes_nothing_gives_no_window():
    with _server("llama-cpp-python") as server:
        assert discover(server.base_url_openai, "smollm2") is None


def test_a_discovered_window_caps_max_tokens_before_the_first_request():
    with _server("vllm", n=2048) as server:
        reply = _local(server).complete(ask("x" * 4000, max_tokens=8192))
        (sent,) = server.requests
    assert reply.text == "ok" and sent.body["max_tokens"] <= 2048 - tokens(sent.prompt) // 2


def test_a_refusal_is_retried_once_with_the_room_it_states(calls):
    # vLLM without its /v1/models: the first request learns the window from the refusal
    with _server("vllm", n=2048, publish=False) as server:
        reply = _local(server, calls).complete(ask("x" * 3000, max_tokens=8192))
        first, second = server.requests
    assert reply.text == "ok" and first.body["max_tokens"] == 8192
    assert tokens(second.prompt) + second.body["max_tokens"] <= 2048 - MARGIN_TOKENS
    assert [c.retries for c in calls] == [1] and calls[0].ok


def test_a_prompt_the_window_cannot_take_raises_prompt_too_long_with_what_fits(calls):
    with _server("llama-cpp-python", n=1024) as server:
        client = _local(server, calls)
        with pytest.raises(PromptTooLong) as err:
            client.complete(ask("y" * 8000, max_tokens=512))
        assert len(server.requests) == 1  # refused once; not sent again unchanged
    assert isinstance(err.value, LLMError) and err.value.fits_chars is not None
    assert 0 < err.value.fits_chars < 8000 and "--llm-context" in err.value.fix
    assert calls[0].error.startswith("context:")
    with _server("llama-cpp-python", n=1024) as server:  # what it said fits, fits
        assert _local(server).complete(ask("y" * (err.value.fits_chars - 200), max_tokens=512)).text == "ok"


def test_a_given_window_is_used_without_asking_the_server():
    with _server("llama-cpp-python", n=1024) as server:
        with pytest.raises(PromptTooLong):
            _local(server, context_tokens=1024).complete(ask("z" * 8000))
        assert server.requests == []  # known too long: nothing sent


def test_local_servers_get_minutes_and_cloud_apis_seconds_by_default():
    with _server("ollama") as server:
        local = _local(server)
        cloud = create_llm("openai:gpt-4.1", environ=fake_env(server))
        given = _local(server, timeout_s=42)
    assert local.settings.timeout_s == 900 and cloud.settings.timeout_s == 120 and given.settings.timeout_s == 42


def test_a_window_too_small_for_any_prompt_is_a_config_error():
    with pytest.raises(ConfigError, match="--llm-context 100"):
        create_llm("openai-compatible:m@http://127.0.0.1:9/v1", context_tokens=100)
