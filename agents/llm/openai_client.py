"""Chat Completions through the real ``openai`` client: OpenAI itself and any OpenAI-compatible
server (a local vLLM or ollama). ``openai`` is imported when a client is created, never before.

- ``openai:<model>``: key from OPENAI_API_KEY (required), base URL from the spec, else
  OPENAI_BASE_URL, else api.openai.com. Sends ``max_completion_tokens``; reasoning models
  (o1/o3/o4, gpt-5) get no ``temperature``, which they refuse.
- ``openai-compatible:<model>@<url>``: key from OPENAI_API_KEY or the placeholder "not-needed"
  (local servers take none); sends the older ``max_tokens`` that such servers understand.
Streaming asks for ``stream_options.include_usage`` and takes usage from the final chunk.
"""

from __future__ import annotations

from typing import Any

from design_space.errors import ConfigError

from agents.llm.base import LLMRequest, LLMSpec
from agents.llm.retrying import ClientSettings, ProtocolFailure, RawReply, RetryingClient

OPENAI_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "not-needed"
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def make_openai_sdk(api_key: str, base_url: str, timeout_s: float) -> Any:
    try:
        import openai
    except ImportError:
        raise ConfigError("the openai package is not installed", "pip install 'openai>=3'") from None
    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)


class OpenAIClient(RetryingClient):
    provider = "openai"
    key_env = "OPENAI_API_KEY"
    max_tokens_param = "max_completion_tokens"

    def __init__(self, spec: LLMSpec, settings: ClientSettings) -> None:
        super().__init__(spec, settings)
        self.base_url = spec.base_url or settings.env.get("OPENAI_BASE_URL") or OPENAI_URL
        self._sdk = make_openai_sdk(self._api_key(settings), self.base_url, settings.timeout_s)

    def _api_key(self, settings: ClientSettings) -> str:
        key = settings.env.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError(f"{self.label} needs an OpenAI API key and OPENAI_API_KEY is not set",
                              "set OPENAI_API_KEY, or name a local server with "
                              "--llm openai-compatible:<model>@<base_url>")
        return key

    def _takes_temperature(self) -> bool:
        return not self.model.startswith(_REASONING_PREFIXES)

    def _arguments(self, request: LLMRequest) -> dict:
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": role, "content": text} for role, text in request.messages]
        args = {"model": self.model, "messages": messages, "timeout": self.settings.timeout_s,
                self.max_tokens_param: request.max_tokens}
        if self._takes_temperature():
            args["temperature"] = request.temperature
        return args

    def _send(self, request: LLMRequest) -> RawReply:
        args = self._arguments(request)
        if self.settings.stream:
            stream = self._sdk.chat.completions.create(**args, stream=True, stream_options={"include_usage": True})
            return _read_stream(stream)
        return _read_completion(self._sdk.chat.completions.create(**args))


def _read_completion(completion: Any) -> RawReply:
    choices = getattr(completion, "choices", None)
    if choices is None:  # the SDK hands back the raw text of a 200 that is not JSON-typed
        raise ProtocolFailure(f"the server answered 200 with no chat completion: {str(completion)[:200]!r}")
    text = (choices[0].message.content or "") if choices and choices[0].message else ""
    usage = getattr(completion, "usage", None)
    return RawReply(text, *_usage(usage))


def _read_stream(stream: Any) -> RawReply:
    parts: list[str] = []
    usage = None
    with stream:  # closes the HTTP response even when a chunk is bad
        for chunk in stream:
            if not hasattr(chunk, "choices"):
                raise ProtocolFailure(f"the server streamed something that is not a chunk: {str(chunk)[:200]!r}")
            for choice in chunk.choices or ():
                if choice.index == 0 and choice.delta is not None and choice.delta.content:
                    parts.append(choice.delta.content)
            usage = getattr(chunk, "usage", None) or usage
    return RawReply("".join(parts), *_usage(usage))


def _usage(usage: Any) -> tuple:
    if usage is None:
        return None, None
    return getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)


class OpenAICompatibleClient(OpenAIClient):
    provider = "openai-compatible"
    max_tokens_param = "max_tokens"
    local = True

    def __init__(self, spec: LLMSpec, settings: ClientSettings) -> None:
        if not spec.base_url:
            raise ConfigError(f"{spec.label} names no server", "write openai-compatible:<model>@http://host:port/v1")
        super().__init__(spec, settings)

    def _api_key(self, settings: ClientSettings) -> str:
        return settings.env.get("OPENAI_API_KEY") or PLACEHOLDER_KEY

    def _takes_temperature(self) -> bool:
        return True


def make_openai(spec: LLMSpec, settings: ClientSettings) -> OpenAIClient:
    return OpenAIClient(spec, settings)


def make_openai_compatible(spec: LLMSpec, settings: ClientSettings) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(spec, settings)
