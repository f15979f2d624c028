"""The fake LLM server's context window: how real local servers refuse, cut and publish it.

``FakeLLMServer(script, context=FakeContext(tokens=8192, style=...))`` counts each request's
prompt (ceil(chars / 4) tokens, as the server reports usage) and behaves as that server does:

- ``llama-cpp-python`` (its ``llama_cpp.server``): a prompt of at least ``tokens`` is refused with
  HTTP 400 and the exact text of its ``context_length_exceeded`` error ("This model's maximum context
  length is N tokens. However, you requested T tokens (P in the messages, M in the completion).
  Please reduce the length of the messages or completion."); a reply is cut to the room left;
  it publishes nothing;
- ``vllm``: prompt + ``max_tokens`` over ``tokens`` is refused (HTTP 400, the same sentence, in
  vLLM's error object); ``GET /v1/models`` publishes ``max_model_len``;
- ``llama.cpp`` (``llama-server``): a prompt over ``tokens`` is refused with HTTP 400
  ``exceed_context_size_error`` and ``n_prompt_tokens`` / ``n_ctx``; ``GET /props`` publishes ``n_ctx``;
- ``ollama``: never refuses (it truncates); ``POST /api/show`` publishes ``num_ctx``.

``publish=False`` keeps a server's discovery endpoint silent (404), as an older version would be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

STYLES = ("llama-cpp-python", "vllm", "llama.cpp", "ollama")
_SENTENCE = ("This model's maximum context length is {n} tokens. However, you requested {total} tokens "
             "({prompt} in the messages, {completion} in the completion). Please reduce the length of the "
             "messages or completion.")


@dataclass(frozen=True)
class FakeContext:
    tokens: int
    style: str = "llama-cpp-python"
    publish: bool = True

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"unknown context style {self.style!r}: use one of {', '.join(STYLES)}")

    def refusal(self, prompt_tokens: int, max_tokens: int) -> Optional[tuple[int, dict]]:
        """(HTTP status, JSON body) when this server refuses the request, else None."""
        n = self.tokens
        sentence = _SENTENCE.format(n=n, total=prompt_tokens + max_tokens, prompt=prompt_tokens, completion=max_tokens)
        if self.style == "llama-cpp-python" and prompt_tokens >= n:
            return 400, {"error": {"message": sentence, "type": "invalid_request_error", "param": "messages",
                                   "code": "context_length_exceeded"}}
        if self.style == "vllm" and prompt_tokens + max_tokens > n:
            return 400, {"object": "error", "message": sentence, "type": "BadRequestError", "param": None, "code": 400}
        if self.style == "llama.cpp" and prompt_tokens > n:
            return 400, {"error": {"code": 400, "message": "the request exceeds the available context size, try "
                                   "increasing the context size or enable context shift",
                                   "type": "exceed_context_size_error", "n_prompt_tokens": prompt_tokens, "n_ctx": n}}
        return None

    def reply_room(self, prompt_tokens: int) -> int:
        """Tokens a reply may take (servers that do not refuse cut the reply at the window)."""
        return max(0, self.tokens - prompt_tokens)

    def published(self, method: str, path: str, model: Optional[str]) -> Optional[dict]:
        """The discovery answer for ``method path``, or None (404)."""
        if not self.publish:
            return None
        route = path.split("?")[0].rstrip("/")
        if self.style == "vllm" and method == "GET" and route == "/v1/models":
            return {"object": "list", "data": [{"id": model or "fake", "object": "model", "owned_by": "vllm",
                                                "max_model_len": self.tokens}]}
        if self.style == "llama.cpp" and method == "GET" and route == "/props":
            return {"default_generation_settings": {"n_ctx": self.tokens, "temperature": 0.8}, "total_slots": 1}
        if self.style == "ollama" and method == "POST" and route == "/api/show":
            return {"parameters": f"num_ctx                        {self.tokens}\nstop                           \"<|im_end|>\"",
                    "model_info": {"llama.context_length": 131072}}
        return None
