"""Messages through the real ``anthropic`` client (imported when a client is created).

Key from ANTHROPIC_API_KEY (required); base URL from the spec, else ANTHROPIC_BASE_URL, else
api.anthropic.com (the SDK appends /v1/messages). Streaming reads message_start (input tokens),
content_block_delta (text) and message_delta (output tokens). ``LLMRequest.temperature`` is not
sent: anthropic 2.x's ``messages.create`` has no sampling parameters (current models fix them).
"""

from __future__ import annotations

from typing import Any

from design_space.errors import ConfigError

from agents.llm.base import LLMRequest, LLMSpec
from agents.llm.retrying import ClientSettings, ProtocolFailure, RawReply, RetryingClient

ANTHROPIC_URL = "https://api.anthropic.com"


def make_anthropic_sdk(api_key: str, base_url: str, timeout_s: float) -> Any:
    try:
        import anthropic
    except ImportError:
        raise ConfigError("the anthropic package is not installed", "pip install 'anthropic>=2'") from None
    return anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)


class AnthropicClient(RetryingClient):
    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(self, spec: LLMSpec, settings: ClientSettings) -> None:
        super().__init__(spec, settings)
        key = settings.env.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigError(f"{self.label} needs an Anthropic API key and ANTHROPIC_API_KEY is not set",
                              "set ANTHROPIC_API_KEY")
        self.base_url = spec.base_url or settings.env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
        self._sdk = make_anthropic_sdk(key, self.base_url, settings.timeout_s)

    def _arguments(self, request: LLMRequest) -> dict:
        args = {"model": self.model, "max_tokens": request.max_tokens,
                "messages": [{"role": role, "content": text} for role, text in request.messages],
                "timeout": self.settings.timeout_s}
        if request.system:  # the API refuses an empty system text
            args["system"] = request.system
        return args

    def _send(self, request: LLMRequest) -> RawReply:
        args = self._arguments(request)
        if self.settings.stream:
            return _read_stream(self._sdk.messages.create(**args, stream=True))
        return _read_message(self._sdk.messages.create(**args))


def _read_message(message: Any) -> RawReply:
    content = getattr(message, "content", None)
    if content is None or isinstance(message, str):
        raise ProtocolFailure(f"the server answered 200 with no message: {str(message)[:200]!r}")
    text = "".join(block.text for block in content if getattr(block, "type", None) == "text")
    usage = getattr(message, "usage", None)
    return RawReply(text, getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))


def _read_stream(stream: Any) -> RawReply:
    parts: list[str] = []
    tokens_in = tokens_out = None
    with stream:
        for event in stream:
            kind = getattr(event, "type", None)
            if kind == "message_start":
                tokens_in = event.message.usage.input_tokens
            elif kind == "content_block_delta" and getattr(event.delta, "type", None) == "text_delta":
                parts.append(event.delta.text)
            elif kind == "message_delta" and event.usage is not None:
                tokens_out = event.usage.output_tokens
                tokens_in = getattr(event.usage, "input_tokens", None) or tokens_in  # newer API: final count
            elif kind is None:
                raise ProtocolFailure(f"the server streamed something that is not an event: {str(event)[:200]!r}")
    return RawReply("".join(parts), tokens_in, tokens_out)


def make_anthropic(spec: LLMSpec, settings: ClientSettings) -> AnthropicClient:
    return AnthropicClient(spec, settings)
