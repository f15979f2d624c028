"""The part every LLM client shares: budget check, retries with backoff, cost, and recording.

A provider subclasses ``RetryingClient`` and writes only ``_send`` (one attempt, no retries: the
SDKs are built with ``max_retries=0`` because retries are ours). ``complete`` then
- refuses the call with ``BudgetExhausted`` before sending when the run's budget is spent;
- retries 429 (honouring a small Retry-After), 408/409, 5xx, timeouts and connection errors with
  exponential backoff and jitter, up to ``max_retries``; a 200 whose body is not the protocol's
  JSON is retried once; 400/401/403/404 fail at once;
- caps ``max_tokens`` to the room the model's context window leaves after the prompt (the window
  given with ``--llm-context``, discovered from a local server, or read from a refusal:
  agents/llm/context_window.py); a context-length refusal is retried once with the room it states,
  and a prompt that leaves no useful room raises ``PromptTooLong`` for the caller to shrink;
- records every call, successful or failed for good, through the recorder, with its retries;
- raises ``LLMError`` (problem + fix) when the call failed for good.
An empty or odd reply text is returned as it is: judging it is the caller's job.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from dataclasses import replace

from design_space.errors import LLMError, PromptTooLong
from design_space.llm import LLMCall

from agents.llm.base import LLMReply, LLMRequest, LLMSpec, Recorder
from agents.llm.budget import Budget
from agents.llm.context_window import MIN_REPLY_TOKENS, ContextFit, ContextRefusal, parse_refusal
from agents.llm.prices import PriceTable, load_prices

log = logging.getLogger(__name__)

RETRY_AFTER_CAP_S = 60.0  # a longer Retry-After is not waited out: our own backoff applies instead
MAX_BACKOFF_S = 60.0
PROTOCOL_RETRIES = 1  # a non-JSON 200 is retried once: a proxy hiccup may pass, a wrong server will not
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection", "protocol"})


@dataclass(frozen=True)
class ClientSettings:
    """How clients of a run behave; ``create_llm`` builds it from its keyword arguments."""

    recorder: Optional[Recorder] = None
    budget: Optional[Budget] = None
    prices: Optional[PriceTable] = None
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 1.0
    stream: bool = False
    environ: Optional[Mapping[str, str]] = None  # None: os.environ
    context_tokens: Optional[int] = None  # the model's context window when known (--llm-context)

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ


@dataclass(frozen=True)
class RawReply:
    """One successful attempt: the text and the token counts the API reported (None: not reported)."""

    text: str
    tokens_in: Optional[int] = None
    tokens_out: Optional[int] = None


class ProtocolFailure(Exception):
    """The server answered 200 with something that is not the protocol's JSON."""


@dataclass(frozen=True)
class Failure:
    kind: str  # rate_limit | server | timeout | connection | protocol | auth | context | refused
    message: str
    status: Optional[int] = None
    retry_after_s: Optional[float] = None
    refusal: Optional[ContextRefusal] = None  # kind "context": what the server said fits

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def classify_failure(exc: BaseException) -> Optional[Failure]:
    """What kind of failure an SDK (or httpx) exception is; None for one that is not a call failure
    (a bug of ours, which must propagate). Duck-typed so neither SDK is imported here."""
    names = _class_names(exc)
    text = _short(str(exc))
    if isinstance(exc, json.JSONDecodeError):
        return Failure("protocol", f"the server answered with a body that is not JSON ({text})")
    if isinstance(exc, ProtocolFailure) or "APIResponseValidationError" in names:
        return Failure("protocol", text)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        refusal = parse_refusal(str(exc)) if status in (400, 413, 422) else None
        if refusal is not None:
            return Failure("context", text, status, refusal=refusal)
        return _status_failure(exc, status, text)
    if names & {"APITimeoutError", "TimeoutException", "TimeoutError"}:
        return Failure("timeout", text or "timed out")
    if names & {"APIConnectionError", "TransportError", "NetworkError", "RemoteProtocolError", "ConnectionError"}:
        return Failure("connection", text or "connection failed")
    return None


def _status_failure(exc: BaseException, status: int, text: str) -> Failure:
    if status == 429:
        return Failure("rate_limit", text, status, _retry_after(exc))
    if status in (408, 409) or status >= 500:
        return Failure("server", text, status, _retry_after(exc))
    if status in (401, 403):
        return Failure("auth", text, status)
    return Failure("refused", text, status)


def _retry_after(exc: BaseException) -> Optional[float]:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue  # an HTTP date: not worth parsing, the backoff applies
    return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def estimate_tokens(text: str) -> int:
    """When a server reports no usage: ~4 characters per token (so the budget still counts)."""
    return math.ceil(len(text) / 4)


class RetryingClient:
    """Base of the built-in clients (and of plugins that want the same behaviour)."""

    provider = "?"
    key_env: Optional[str] = None  # the variable that holds the key, named in error fixes
    local = False  # a local server: an unknown price is expected (0), not warned about

    def __init__(self, spec: LLMSpec, settings: ClientSettings) -> None:
        self.spec = spec
        self.model = spec.model
        self.settings = settings
        self.base_url: Optional[str] = spec.base_url
        self.prices = settings.prices if settings.prices is not None else load_prices(environ=settings.env)
        self.price_known = self.prices.price(self.model) is not None
        if not self.price_known and not self.local:
            log.warning("no price known for %s: its calls are recorded at $0 and the budget cannot stop them "
                        "(add it to a prices file, see CUCO_LLM_PRICES)", self.label)

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    def close(self) -> None:
        """Release the SDK's connection pool (the client is unusable afterwards)."""
        sdk = getattr(self, "_sdk", None)
        if sdk is not None and hasattr(sdk, "close"):
            sdk.close()

    def _send(self, request: LLMRequest) -> RawReply:
        """One attempt; raise the SDK's exception (or ProtocolFailure) on failure."""
        raise NotImplementedError

    @property
    def context(self) -> ContextFit:
        """What this client knows of its model's context window (see agents/llm/context_window.py)."""
        if getattr(self, "_context", None) is None:
            local = (self.base_url, self.model) if self.local and self.base_url else None
            self._context = ContextFit(self.settings.context_tokens, discover_from=local)
        return self._context

    def _fit(self, request: LLMRequest, started: Optional[float] = None, retries: int = 0) -> LLMRequest:
        """``request`` with ``max_tokens`` capped to the room left by its prompt; PromptTooLong when
        too little is left (recorded as a failed call when the server's refusal told us)."""
        prompt = request.prompt_text
        room = self.context.room(len(prompt))
        if room is None or room >= request.max_tokens:
            return request
        if room >= MIN_REPLY_TOKENS:
            return replace(request, max_tokens=room)
        window = self.context.current()
        reply = min(request.max_tokens, 2048)
        error = PromptTooLong(
            f"the prompt for {self.label} ({len(prompt)} characters, ~{self.context.prompt_tokens(len(prompt)):.0f} "
            f"tokens) leaves no room for a reply in its {window.tokens}-token context window ({window.source})",
            "shrink the prompt, or give the server a larger context (llama.cpp -c, vLLM --max-model-len, Ollama "
            "num_ctx) and pass it with --llm-context", fits_chars=self.context.prompt_chars(reply))
        if started is not None:
            self._record(self._call(request, response="", retries=retries, started=started,
                                    error=f"context: {error.problem}"))
        raise error

    def complete(self, request: LLMRequest) -> LLMReply:
        if self.settings.budget is not None:
            self.settings.budget.check()
        request = self._fit(request)
        started = time.monotonic()
        retries = protocol_failures = context_refusals = 0
        while True:
            try:
                raw = self._send(request)
                break
            except Exception as exc:  # noqa: BLE001 -- classified below; what is not a call failure re-raises
                failure = classify_failure(exc)
                if failure is None:
                    raise
                if failure.kind == "context" and failure.refusal is not None and not context_refusals:
                    # once: the refusal states the window; the request is re-fitted (or refused here)
                    context_refusals += 1
                    self.context.learn_refusal(failure.refusal, len(request.prompt_text))
                    request = self._fit(request, started, retries)
                    retries += 1
                    continue
                protocol_failures += failure.kind == "protocol"
                if not self._may_retry(failure, retries, protocol_failures):
                    raise self._fail(request, failure, retries, started) from exc
                log.info("%s: %s; retry %d in a moment", self.label, failure.message, retries + 1)
                time.sleep(self._delay(failure, retries))
                retries += 1
        return self._succeed(request, raw, retries, started)

    def _may_retry(self, failure: Failure, retries: int, protocol_failures: int) -> bool:
        if not failure.retryable or retries >= self.settings.max_retries:
            return False
        return failure.kind != "protocol" or protocol_failures <= PROTOCOL_RETRIES

    def _delay(self, failure: Failure, retries: int) -> float:
        if failure.retry_after_s is not None and failure.retry_after_s <= RETRY_AFTER_CAP_S:
            return failure.retry_after_s
        base = min(MAX_BACKOFF_S, self.settings.backoff_s * 2 ** retries)
        return base / 2 + random.uniform(0, base / 2)  # jitter: concurrent callers do not retry in lockstep

    def _succeed(self, request: LLMRequest, raw: RawReply, retries: int, started: float) -> LLMReply:
        self.context.learn_usage(len(request.prompt_text), raw.tokens_in)
        tokens_in = raw.tokens_in if raw.tokens_in is not None else estimate_tokens(request.prompt_text)
        tokens_out = raw.tokens_out if raw.tokens_out is not None else estimate_tokens(raw.text)
        cost = self.prices.cost(self.model, tokens_in, tokens_out)
        call = self._call(request, response=raw.text, tokens_in=tokens_in, tokens_out=tokens_out,
                          cost_usd=cost, retries=retries, started=started)
        if self.settings.budget is not None:
            self.settings.budget.charge(cost)
        self._record(call)
        return LLMReply(text=raw.text, call=call)

    def _fail(self, request: LLMRequest, failure: Failure, retries: int, started: float) -> LLMError:
        error = f"{failure.kind}: {failure.message}"
        self._record(self._call(request, response="", retries=retries, started=started, error=error))
        after = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
        return LLMError(f"the {self.label} call failed{after}: {error}", self._fix(failure))

    def _call(self, request: LLMRequest, *, response: str, retries: int, started: float, **fields) -> LLMCall:
        prompt = request.prompt_text
        return LLMCall(purpose=request.purpose, candidate_id=request.candidate_id, agent_step=request.agent_step,
                       provider=self.provider, model=self.model, prompt=prompt, response=response,
                       prompt_chars=len(prompt), latency_s=round(time.monotonic() - started, 6),
                       retries=retries, **fields)

    def _record(self, call: LLMCall) -> None:
        if self.settings.recorder is not None:
            self.settings.recorder(call)

    def _fix(self, failure: Failure) -> str:
        where = f"the server at {self.base_url}" if self.base_url else f"the {self.provider} API"
        key = self.key_env or "the API key variable"
        return {
            "rate_limit": "the provider is rate limiting: lower the number of parallel proposals, "
                          "raise the LLM retries, or try again later",
            "server": f"{where} keeps failing: try again later or use another --llm",
            "timeout": f"{where} did not answer within {self.settings.timeout_s:g} s: raise the LLM timeout "
                       "or use a faster model",
            "connection": f"check that {where} is reachable (network, proxy, base URL)",
            "protocol": f"{where} did not answer in the {self.provider} wire format: check the base URL",
            "auth": f"the key was refused: set a valid {key}",
            "context": f"the prompt does not fit {self.label}'s context window: give the server a larger context "
                       "and pass it with --llm-context",
        }.get(failure.kind, "the request was refused: check the model name and the request limits "
                            f"(max_tokens) for {self.label}")
