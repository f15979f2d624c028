"""The LLM layer: one small protocol, a provider registry, built-in OpenAI / Anthropic /
OpenAI-compatible clients with retries, cost, budget and recording, and (in ``fake_server``)
a scripted fake server for tests. Importing this package imports neither SDK."""

from agents.llm.anthropic_client import AnthropicClient, make_anthropic
from agents.llm.base import LLMClient, LLMReply, LLMRequest, LLMSpec, Recorder, parse_llm_spec
from agents.llm.budget import Budget
from agents.llm.openai_client import OpenAIClient, OpenAICompatibleClient, make_openai, make_openai_compatible
from agents.llm.prices import DEFAULT_PRICES, PRICES_ENV, Price, PriceTable, default_prices, load_prices
from agents.llm.registry import (
    DEFAULT_MODELS, configured_llms, create_llm, llm_enable_hint, llm_provider_names, register_llm_provider,
)
from agents.llm.retrying import ClientSettings, RawReply, RetryingClient, classify_failure

register_llm_provider("openai", make_openai)
register_llm_provider("openai-compatible", make_openai_compatible)
register_llm_provider("anthropic", make_anthropic)

__all__ = [
    "AnthropicClient", "Budget", "DEFAULT_MODELS", "DEFAULT_PRICES", "LLMClient", "LLMReply", "LLMRequest",
    "ClientSettings", "LLMSpec", "OpenAIClient", "OpenAICompatibleClient", "PRICES_ENV", "Price", "PriceTable",
    "RawReply", "Recorder", "RetryingClient", "classify_failure", "configured_llms", "create_llm",
    "default_prices", "llm_enable_hint", "llm_provider_names", "load_prices", "parse_llm_spec",
    "register_llm_provider",
]
