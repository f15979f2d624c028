"""Small helpers shared by the LLM-layer tests."""

from agents.llm import LLMRequest
from agents.llm.fake_server import placeholder_key

FAST = {"backoff_s": 0.001, "timeout_s": 5}  # tiny backoffs keep the retry tests quick


def fake_env(server, **extra):
    """Keys plus the base URLs the SDKs are pointed at (how a user points them at a proxy, too)."""
    return {"OPENAI_API_KEY": placeholder_key(), "ANTHROPIC_API_KEY": placeholder_key(),
            "OPENAI_BASE_URL": server.base_url_openai, "ANTHROPIC_BASE_URL": server.base_url_anthropic, **extra}


def ask(text="write the kernel", system="you are a CUDA expert", purpose="test", **fields):
    return LLMRequest(system=system, messages=(("user", text),), purpose=purpose, **fields)


def always(text):
    return [{"when": None, "times": None, "reply": {"text": text}}]
