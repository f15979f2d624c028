"""The provider registry, spec parsing errors, and what to tell a user without LLMs."""

import pytest

from agents.llm import (
    LLMReply, LLMSpec, RawReply, RetryingClient, configured_llms, create_llm, llm_enable_hint, llm_provider_names,
    register_llm_provider,
)
from agents.llm.fake_server import placeholder_key
from agents.llm.registry import _PROVIDERS
from design_space.errors import ConfigError
from tests.agents.llm.helpers import ask


def test_the_built_in_providers_are_registered():
    assert {"openai", "anthropic", "openai-compatible"} <= set(llm_provider_names())


@pytest.mark.parametrize("text,fix", [
    ("gpt-4o", "openai:<model>"),
    ("openai-compatible:llama3", "openai-compatible:<model>@http://host:port/v1"),
    ("openai: gpt-4o", "openai:<model>"),
])
def test_an_unreadable_llm_name_says_how_to_write_one(text, fix):
    with pytest.raises(ConfigError) as raised:
        create_llm(text, environ={})
    assert fix in raised.value.fix


def test_an_unknown_provider_lists_the_known_ones():
    with pytest.raises(ConfigError) as raised:
        create_llm("mistral:large", environ={})
    assert "anthropic, openai, openai-compatible" in raised.value.fix
    assert "register_llm_provider" in raised.value.fix


@pytest.mark.parametrize("option", [{"timeout_s": 0}, {"max_retries": -1}, {"backoff_s": -1.0}])
def test_a_bad_setting_is_refused_at_creation(option):
    with pytest.raises(ConfigError):
        create_llm("openai-compatible:m@http://127.0.0.1:9/v1", environ={}, **option)


class EchoClient(RetryingClient):
    """A plugin: only the one attempt is its own; budget, cost and recording come from the base."""

    provider = "echo"
    local = True

    def _send(self, request):
        return RawReply(text=request.messages[-1][1].upper(), tokens_in=3, tokens_out=4)


def test_a_plugin_registers_like_a_built_in_and_is_recorded(calls):
    register_llm_provider("echo", EchoClient)
    try:
        client = create_llm("echo:loud", recorder=calls.append, environ={})
        reply = client.complete(ask("hello"))
    finally:
        _PROVIDERS.pop("echo")
    assert isinstance(reply, LLMReply) and reply.text == "HELLO"
    assert calls[0].provider == "echo" and (calls[0].tokens_in, calls[0].tokens_out) == (3, 4)
    assert "echo" not in llm_provider_names()


def test_a_spec_object_is_accepted_as_well_as_a_name():
    spec = LLMSpec(provider="openai-compatible", model="qwen", base_url="http://127.0.0.1:9/v1")
    assert create_llm(spec, environ={}).label == "openai-compatible:qwen"


def test_configured_llms_follow_the_keys_that_are_set():
    assert configured_llms({}) == []
    assert configured_llms({"ANTHROPIC_API_KEY": placeholder_key()}) == ["anthropic"]
    both = {"OPENAI_API_KEY": placeholder_key(), "ANTHROPIC_API_KEY": placeholder_key()}
    assert configured_llms(both) == ["anthropic", "openai"]
    assert configured_llms({"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "http://x/v1"}) == []


def test_the_enable_hint_names_the_variables_or_the_flag():
    assert "OPENAI_API_KEY" in llm_enable_hint({}) and "openai-compatible:" in llm_enable_hint({})
    assert "--llm openai:gpt-4.1" in llm_enable_hint({"OPENAI_API_KEY": placeholder_key()})


def test_importing_the_layer_does_not_import_the_sdks():
    import subprocess
    import sys
    code = "import sys, agents.llm; print(any(m in sys.modules for m in ('openai', 'anthropic')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
