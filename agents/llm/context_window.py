"""How much a model can read and write at once: its context window, discovered from the server or
given (``--llm-context``), and read back from the refusals servers send when a request does not fit.

Discovery (OpenAI-compatible servers; one short request each, the first that answers wins):

- llama.cpp's ``llama-server``: ``GET /props`` -> ``default_generation_settings.n_ctx`` (or ``n_ctx``);
- vLLM: ``GET /v1/models`` -> the model's ``max_model_len``;
- Ollama: ``POST /api/show {"model": ...}`` -> ``num_ctx`` in its ``parameters`` (what it serves with),
  else ``<arch>.context_length`` in ``model_info`` (what the model was trained for).

Servers that publish nothing (llama-cpp-python's server) still say it when they refuse: the
refusal parsers below read the limit and the prompt's size in tokens from the exact texts of
llama-cpp-python / vLLM / OpenAI ("This model's maximum context length is 8192 tokens. However, you
requested 17098 tokens (8906 in the messages, 8192 in the completion)..."), llama.cpp's server
(``exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx``) and Anthropic ("prompt is too
long: 210000 tokens > 200000 maximum").
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Optional

DISCOVERY_TIMEOUT_S = 5.0
MARGIN_TOKENS = 64  # chat-template tokens the server adds around the messages
MIN_REPLY_TOKENS = 256  # below this a reply cannot hold a useful patch: shrink the prompt instead
CHARS_PER_TOKEN = 3.0  # until a server reports counts: code and logs tokenise densely


@dataclass(frozen=True)
class ContextWindow:
    tokens: int
    source: str  # where it came from: "--llm-context", "llama.cpp /props", "vLLM /v1/models", ...


@dataclass(frozen=True)
class ContextRefusal:
    """What a context-length refusal said: the window and the prompt's tokens (None: not said)."""

    limit: int
    prompt_tokens: Optional[int] = None


def server_root(base_url: str) -> str:
    """``http://host:port`` of an OpenAI-compatible base URL (``.../v1``)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _get_json(url: str, body: Optional[dict] = None, timeout_s: float = DISCOVERY_TIMEOUT_S) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {},
                                 method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 -- the user's own server
            return json.loads(resp.read(1 << 20) or b"null")
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _positive(value: Any) -> Optional[int]:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def _llama_cpp(root: str, model: str, timeout_s: float) -> Optional[int]:
    props = _get_json(f"{root}/props", timeout_s=timeout_s)
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    found = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return found or _positive(props.get("n_ctx"))


def _vllm(root: str, model: str, timeout_s: float) -> Optional[int]:
    listing = _get_json(f"{root}/v1/models", timeout_s=timeout_s)
    models = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(models, list):
        return None
    entries = [m for m in models if isinstance(m, dict)]
    named = [m for m in entries if m.get("id") == model] or (entries if len(entries) == 1 else [])
    return _positive(named[0].get("max_model_len")) if named else None


def _ollama(root: str, model: str, timeout_s: float) -> Optional[int]:
    shown = _get_json(f"{root}/api/show", body={"model": model}, timeout_s=timeout_s)
    if not isinstance(shown, dict):
        return None
    m = re.search(r"^\s*num_ctx\s+(\d+)", str(shown.get("parameters") or ""), re.M)
    if m:
        return _positive(m.group(1))
    info = shown.get("model_info")
    if isinstance(info, dict):
        lengths = [_positive(v) for k, v in info.items() if str(k).endswith(".context_length")]
        return next((n for n in lengths if n), None)
    return None


_PROBES = (("llama.cpp /props", _llama_cpp), ("vLLM /v1/models", _vllm), ("Ollama /api/show", _ollama))


def discover(base_url: str, model: str, timeout_s: float = DISCOVERY_TIMEOUT_S) -> Optional[ContextWindow]:
    """The context window an OpenAI-compatible server at ``base_url`` serves ``model`` with, or None."""
    root = server_root(base_url)
    for source, probe in _PROBES:
        tokens = probe(root, model, timeout_s)
        if tokens:
            return ContextWindow(tokens, source)
    return None


_MAX_CONTEXT = re.compile(r"maximum context length is (\d+) tokens", re.I)
_IN_MESSAGES = re.compile(r"\((\d+) in the messages", re.I)
_RESULTED = re.compile(r"(?:messages|prompt) resulted in (\d+) tokens", re.I)
_LLAMA_CPP = re.compile(r"exceed(?:s|_context_size_error)|available context size", re.I)
_N_CTX = re.compile(r"""['"]n_ctx['"]\s*:\s*(\d+)""")
_N_PROMPT = re.compile(r"""['"]n_prompt_tokens['"]\s*:\s*(\d+)""")
_ANTHROPIC = re.compile(r"prompt is too long:\s*(\d+) tokens\s*>\s*(\d+)", re.I)
_REQUESTED = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)", re.I)


def parse_refusal(text: str) -> Optional[ContextRefusal]:
    """The window (and the prompt's size) a context-length refusal states; None if ``text`` is not one."""
    m = _MAX_CONTEXT.search(text)
    if m:
        prompt = _IN_MESSAGES.search(text) or _RESULTED.search(text)
        return ContextRefusal(int(m.group(1)), int(prompt.group(1)) if prompt else None)
    m = _ANTHROPIC.search(text)
    if m:
        return ContextRefusal(int(m.group(2)), int(m.group(1)))
    m = _REQUESTED.search(text)
    if m:
        return ContextRefusal(int(m.group(2)), int(m.group(1)))
    if _LLAMA_CPP.search(text) and _N_CTX.search(text):
        prompt = _N_PROMPT.search(text)
        return ContextRefusal(int(_N_CTX.search(text).group(1)), int(prompt.group(1)) if prompt else None)
    return None


def reply_room(window: int, prompt_tokens: float) -> int:
    """Tokens left for the reply once the prompt (and the chat template's margin) is in."""
    return int(window - prompt_tokens - MARGIN_TOKENS)


class ContextFit:
    """One client's view of its model's window: the window (given, discovered once, or learned from a
    refusal) and the characters per token its server counts (learned from reported usage), used
    to cap a request's ``max_tokens`` to the room its prompt leaves and to size prompts."""

    def __init__(self, given: Optional[int] = None, discover_from: Optional[tuple[str, str]] = None) -> None:
        self.window: Optional[ContextWindow] = ContextWindow(given, "--llm-context") if given else None
        self.chars_per_token = CHARS_PER_TOKEN
        self._discover_from = None if given else discover_from  # (base_url, model) of a local server
        self._tried = False

    def current(self) -> Optional[ContextWindow]:
        if self.window is None and self._discover_from is not None and not self._tried:
            self._tried = True
            self.window = discover(*self._discover_from)
        return self.window

    def prompt_tokens(self, prompt_chars: int) -> float:
        return prompt_chars / self.chars_per_token

    def room(self, prompt_chars: int) -> Optional[int]:
        """Reply tokens the window leaves after this prompt (None: window unknown)."""
        window = self.current()
        return None if window is None else reply_room(window.tokens, self.prompt_tokens(prompt_chars))

    def prompt_chars(self, reply_tokens: int) -> Optional[int]:
        """The longest prompt (characters) that leaves ``reply_tokens`` for the reply (None: unknown)."""
        window = self.current()
        if window is None:
            return None
        return max(0, int((window.tokens - reply_tokens - MARGIN_TOKENS) * self.chars_per_token))

    def learn_usage(self, prompt_chars: int, prompt_tokens: Optional[int]) -> None:
        if prompt_tokens and prompt_chars > 200:  # a server's own count beats the estimate
            self.chars_per_token = max(1.0, prompt_chars / prompt_tokens)

    def learn_refusal(self, refusal: ContextRefusal, prompt_chars: int) -> None:
        self.window = ContextWindow(refusal.limit, "the server's context-length refusal")
        if refusal.prompt_tokens:
            # the refusal's count may include max_tokens on some servers; never let it inflate the ratio
            self.chars_per_token = min(self.chars_per_token, max(1.0, prompt_chars / refusal.prompt_tokens))
