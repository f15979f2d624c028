"""What the fast path is lent (its tools) and what it hands back (its result and trajectory)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from design_space.candidate import Candidate
from design_space.evaluation import Evaluation
from design_space.point import DesignPoint


@dataclass(frozen=True)
class FastPathTools:
    """Injected by the loop: agents may not import the evaluator (the star rule).
    ``evaluate(source, declared point)`` runs guard -> build -> emulate/verify and returns the
    ``Evaluation`` (a failure is data, not an exception)."""

    evaluate: Callable[[str, Optional[DesignPoint]], Evaluation]


@dataclass(frozen=True)
class FastPathStep:
    """One node visit: which node, in which write iteration (0 before the first write), what it
    did in a line, and the check's verdict where there was one."""

    node: str  # analyze | choose | write | check | judge | annotate | give_up | done
    iteration: int
    summary: str
    evaluation_status: Optional[str] = None  # Status value of the check, for check steps
    reason: str = ""  # why an iteration failed (the evaluation's reason, "no code in the reply", ...)


@dataclass(frozen=True)
class FastPathResult:
    status: str  # "ok" | "gave_up"
    candidate: Optional[Candidate]  # generation 0, origin llm/<model>/fast_path; None when it gave up
    trajectory: tuple[FastPathStep, ...]
    iterations: int  # writes made (a garbled reply counts)
    reason: str = ""  # why it gave up ('' when ok)
    evaluation: Optional[Evaluation] = None  # the last check's evaluation (of the candidate when ok)
