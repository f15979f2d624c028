"""The LLM layer's contract: a request, a reply, the client protocol, and the name grammar.

A client turns an ``LLMRequest`` into an ``LLMReply`` whose ``call`` (a ``design_space.LLMCall``)
records model, prompt, response, tokens, latency, cost and retries. Every call — failed ones too —
is also handed to the client's recorder, so the candidates database holds them all. Clients never
raise for a bad *reply* (empty or garbled text is data for the caller to judge); they raise
``LLMError`` when the call failed for good (retries spent, auth refused) and ``BudgetExhausted``
before a call the run's budget can no longer pay for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

from design_space.errors import ConfigError
from design_space.llm import LLMCall

Recorder = Callable[[LLMCall], None]  # stores a call (cuco wires it to the candidates database)


@dataclass(frozen=True)
class LLMRequest:
    system: str
    messages: tuple[tuple[str, str], ...]  # (role, text), role "user" or "assistant"
    purpose: str  # e.g. "slow_path.mutate" (see LLMCall.purpose)
    max_tokens: int = 8192
    temperature: float = 0.7
    candidate_id: Optional[str] = None
    agent_step: Optional[str] = None

    @property
    def prompt_text(self) -> str:
        """The prompt as one string, as recorded: system, then each message under its role."""
        parts = [f"[system]\n{self.system}"] + [f"[{role}]\n{text}" for role, text in self.messages]
        return "\n\n".join(parts)


@dataclass(frozen=True)
class LLMReply:
    text: str
    call: LLMCall


class LLMClient(Protocol):
    provider: str
    model: str

    @property
    def label(self) -> str:
        """``provider:model`` as shown in the leaderboard and used by the bandit."""
        ...

    def complete(self, request: LLMRequest) -> LLMReply:
        ...


@dataclass(frozen=True)
class LLMSpec:
    """What ``--llm`` names: ``openai:<model>``, ``anthropic:<model>`` or
    ``openai-compatible:<model>@<base_url>`` (a local vLLM or ollama)."""

    provider: str
    model: str
    base_url: Optional[str] = None
    options: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


_SPEC = re.compile(r"^(?P<provider>[a-z][a-z0-9-]*):(?P<model>[^@\s]+)(?:@(?P<url>\S+))?$")


def parse_llm_spec(text: str) -> LLMSpec:
    m = _SPEC.match(text.strip())
    if not m:
        raise ConfigError(f"cannot read the LLM name {text!r}",
                          "write openai:<model>, anthropic:<model> or openai-compatible:<model>@<base_url>")
    provider, model, url = m.group("provider"), m.group("model"), m.group("url")
    if provider == "openai-compatible" and not url:
        raise ConfigError(f"{text!r} names no server", "write openai-compatible:<model>@http://host:port/v1")
    return LLMSpec(provider=provider, model=model, base_url=url)
