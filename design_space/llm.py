"""The record of one LLM call: what was asked, what came back, and what it cost.

Every call an agent makes is recorded against the candidate or agent step it served, stored by
the candidates database and shown by the CLI. Plain data, frozen.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


def _now() -> datetime:
    return datetime.now(timezone.utc)


class LLMCall(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    purpose: str  # what it served: "fast_path.write", "fast_path.judge", "slow_path.mutate", "slow_path.repair", ...
    candidate_id: Optional[str] = None  # the candidate it produced or diagnosed, when there is one
    agent_step: Optional[str] = None  # e.g. "fast_path:write#2", "slow_path:gen3/island1"
    provider: str  # "openai", "anthropic", "openai-compatible"
    model: str
    prompt: str  # the whole prompt as sent (system + messages), for audit and replay
    response: str  # the text that came back ('' when the call failed)
    prompt_chars: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    retries: int = 0  # attempts beyond the first (429s, 5xx, timeouts)
    error: Optional[str] = None  # why it failed for good, when it did
    created_at: datetime = Field(default_factory=_now)

    @property
    def ok(self) -> bool:
        return self.error is None
