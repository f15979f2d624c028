"""The LLM provider registry. Built-ins (openai, anthropic, openai-compatible) register exactly
like plugins: ``register_llm_provider(name, factory)`` where ``factory(spec: LLMSpec,
settings: ClientSettings) -> LLMClient`` (subclass ``RetryingClient`` to get retries, budget,
cost and recording for free)."""

from __future__ import annotations

import os
import threading
from typing import Callable, Mapping, Optional, Union

from design_space.errors import ConfigError

from agents.llm.base import LLMClient, LLMSpec, Recorder, parse_llm_spec
from agents.llm.budget import Budget
from agents.llm.prices import PriceTable
from agents.llm.retrying import ClientSettings

ProviderFactory = Callable[[LLMSpec, ClientSettings], LLMClient]

_PROVIDERS: dict[str, ProviderFactory] = {}
_LOCK = threading.Lock()

# A model to suggest for each provider in hints.
DEFAULT_MODELS = {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-5"}
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def register_llm_provider(name: str, factory: ProviderFactory) -> None:
    """Add (or replace) a provider; ``name`` is what precedes the colon in ``--llm``."""
    with _LOCK:
        _PROVIDERS[name] = factory


def llm_provider_names() -> tuple[str, ...]:
    with _LOCK:
        return tuple(sorted(_PROVIDERS))


LOCAL_PROVIDERS = frozenset({"openai-compatible"})
LOCAL_TIMEOUT_S = 900.0  # a small model on a CPU reads an 8k prompt in minutes
CLOUD_TIMEOUT_S = 120.0


def create_llm(spec: Union[str, LLMSpec], *, recorder: Optional[Recorder] = None, budget: Optional[Budget] = None,
               prices: Optional[PriceTable] = None, timeout_s: Optional[float] = None, max_retries: int = 4,
               backoff_s: float = 1.0, stream: bool = False,
               environ: Optional[Mapping[str, str]] = None, context_tokens: Optional[int] = None) -> LLMClient:
    """A client for ``spec`` (``"openai:<model>"``, ...). Raises ``ConfigError`` (problem + fix) for an
    unreadable name, an unknown provider, a missing key or a bad setting. ``prices=None`` loads the
    default table overridden by $CUCO_LLM_PRICES; ``environ=None`` reads os.environ.
    ``timeout_s=None``: the provider's default (a local server on a CPU answers in minutes: 900 s;
    a cloud API 120 s). ``context_tokens``: the model's context window, when the server cannot
    tell (see agents/llm/context_window.py)."""
    parsed = parse_llm_spec(spec) if isinstance(spec, str) else spec
    if timeout_s is None:
        timeout_s = LOCAL_TIMEOUT_S if parsed.provider in LOCAL_PROVIDERS else CLOUD_TIMEOUT_S
    _check_settings(timeout_s, max_retries, backoff_s)
    if context_tokens is not None and context_tokens < 512:
        raise ConfigError(f"--llm-context {context_tokens} is too small for any prompt",
                          "give the model's context window in tokens, e.g. --llm-context 8192")
    with _LOCK:
        factory = _PROVIDERS.get(parsed.provider)
        known = ", ".join(sorted(_PROVIDERS))
    if factory is None:
        raise ConfigError(f"unknown LLM provider {parsed.provider!r}",
                          f"use one of: {known} (or register one with register_llm_provider)")
    settings = ClientSettings(recorder=recorder, budget=budget, prices=prices, timeout_s=float(timeout_s),
                           max_retries=int(max_retries), backoff_s=float(backoff_s), stream=stream, environ=environ,
                           context_tokens=context_tokens)
    return factory(parsed, settings)


def _check_settings(timeout_s: float, max_retries: int, backoff_s: float) -> None:
    if not timeout_s > 0:
        raise ConfigError(f"the LLM timeout {timeout_s!r} s is not positive", "give a timeout in seconds > 0")
    if max_retries < 0:
        raise ConfigError(f"the LLM retries {max_retries!r} are negative", "give a number of retries >= 0")
    if backoff_s < 0:
        raise ConfigError(f"the LLM backoff {backoff_s!r} s is negative", "give a backoff in seconds >= 0")


def configured_llms(environ: Optional[Mapping[str, str]] = None) -> list[str]:
    """The providers a user could enable with the keys set in ``environ`` (default os.environ), e.g.
    ``["anthropic", "openai"]``: each takes ``--llm <provider>:<model>`` (``DEFAULT_MODELS`` has a
    suggestion). Empty when no key is set; ``openai-compatible`` needs no key and is never listed."""
    env = os.environ if environ is None else environ
    return [provider for provider, var in sorted(KEY_VARIABLES.items()) if env.get(var)]


def llm_enable_hint(environ: Optional[Mapping[str, str]] = None) -> str:
    """One sentence for a run without LLMs: how to enable them."""
    ready = configured_llms(environ)
    if ready:
        return "LLM proposers are off: enable them with " + " or ".join(
            f"--llm {p}:{DEFAULT_MODELS[p]}" for p in ready) + " (any model name of the provider works)"
    return ("LLM proposers are off (no OPENAI_API_KEY or ANTHROPIC_API_KEY set): set a key and pass "
            f"--llm openai:{DEFAULT_MODELS['openai']} or --llm anthropic:{DEFAULT_MODELS['anthropic']}, or run a "
            "local server and pass --llm openai-compatible:<model>@http://localhost:11434/v1")
