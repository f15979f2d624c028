"""``Candidate``: one kernel source and where it came from."""

from __future__ import annotations

import hashlib
import re
import uuid
from enum import Enum
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from design_space.point import DesignPoint

EVOLVE_START = "EVOLVE-BLOCK-START"
EVOLVE_END = "EVOLVE-BLOCK-END"


class OriginKind(str, Enum):
    TEMPLATE = "template"
    LLM = "llm"
    SEED = "seed"
    MANUAL = "manual"


class Origin(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: OriginKind
    model: Optional[str] = None  # LLM model name, when an LLM wrote it
    patch_type: Optional[str] = None  # e.g. "sample", "mutate", "crossover", "diff", "full"

    def label(self) -> str:
        return "/".join(x for x in (self.kind.value, self.model, self.patch_type) if x)


_SURROGATE = re.compile("[\ud800-\udfff]")


def content_hash(source: str) -> str:
    """Hash of the source with whitespace runs collapsed, so reformatting is not novelty."""
    norm = re.sub(r"\s+", " ", source).strip()
    return hashlib.sha256(norm.encode("utf-8", "surrogatepass")).hexdigest()


def new_candidate_id() -> str:
    return uuid.uuid4().hex[:12]


class Candidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=new_candidate_id)
    parent_ids: tuple[str, ...] = ()
    generation: int = 0
    island: int = 0
    origin: Origin
    source: str = Field(repr=False)  # kilobytes of CUDA: printed by `cuco show --source`, not by repr()
    point: Optional[DesignPoint] = None  # the point the code declares it implements

    @field_validator("source")
    @classmethod
    def _text(cls, source: str) -> str:
        # An unpaired surrogate (e.g. a "\ud800" escape in an LLM's JSON reply) cannot be stored,
        # hashed or compiled: it becomes U+FFFD, and the build decides what the source is worth.
        return _SURROGATE.sub("\ufffd", source)

    @property
    def content_hash(self) -> str:
        return content_hash(self.source)
