"""``RunInfo``: one evolution run as the candidates database records it."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict


class RunStatus(str, Enum):
    RUNNING = "running"
    COMPLETE = "complete"
    STOPPED = "stopped"  # interrupted or stopped by a limit; resumable
    FAILED = "failed"  # infrastructure fault; resumable after the fix


class RunInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    spec_name: str
    pattern: str
    spec_hash: str  # a resumed run must have the same spec
    spec_json: str
    config: dict[str, Any] = {}
    status: RunStatus = RunStatus.RUNNING
    note: str = ""
    created_at: datetime
    updated_at: datetime
