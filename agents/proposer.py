"""The proposer protocol and registry. Built-ins register exactly like plugins.

The package is named ``agents`` (this project's), which is also the import name of an
unrelated SDK: cuco never depends on that SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence

from design_space.candidate import Candidate
from design_space.errors import ProposerError
from design_space.evaluation import Evaluation
from design_space.hardware import HardwareProfile
from design_space.patterns import Pattern
from design_space.spec import KernelSpec


@dataclass(frozen=True)
class ProposerTools:
    """What the loop lends proposers (agents may not import the evaluator: the star rule).
    Each may be None when the loop cannot offer it."""

    # nvcc gate of a source: (ok, trimmed log) -- for a bounded repair attempt before evaluation
    compile: Optional[Callable[[str], tuple[bool, str]]] = None
    # the guard's findings for a source and its declared point ('' when clean)
    check: Optional[Callable[[str, Optional[object]], str]] = None


@dataclass(frozen=True)
class ProposalRequest:
    """Everything a proposer may look at to propose the next candidates."""

    spec: KernelSpec
    pattern: Pattern
    hardware: HardwareProfile
    generation: int
    count: int
    seed: int
    history: Sequence[tuple[Candidate, Optional[Evaluation]]] = ()  # every candidate of the run so far
    known_hashes: frozenset[str] = field(default_factory=frozenset)  # content hashes already in the run
    tools: ProposerTools = field(default_factory=ProposerTools)


class Proposer(Protocol):
    name: str

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        """Up to ``request.count`` new candidates (none whose content hash is already known)."""
        ...


_REGISTRY: dict[str, Callable[..., Proposer]] = {}


def register_proposer(name: str, factory: Callable[..., Proposer]) -> None:
    _REGISTRY[name] = factory


def create_proposer(name: str, **options) -> Proposer:
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ProposerError(f"unknown proposer {name!r}", f"use one of: {', '.join(sorted(_REGISTRY))}") from None
    return factory(**options)


def proposer_names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))
