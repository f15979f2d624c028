"""Parent selection among evaluated candidates: power-law (rank-based), weighted
(fitness-proportional, sigmoid-scaled) and beam (top-k round-robin).

Members are ``(Candidate, Evaluation)`` pairs; a failed candidate has fitness 0 and ranks last,
but can still be picked (its failure log is what the LLM learns from). Every draw takes a seeded
``random.Random`` so a resumed run picks the same parents.
"""

from __future__ import annotations

import math
import random
from typing import Callable, Optional, Sequence

from design_space.candidate import Candidate
from design_space.errors import ConfigError
from design_space.evaluation import Evaluation

Member = tuple[Candidate, Evaluation]


def fitness_of(ev: Optional[Evaluation]) -> float:
    """The search's fitness, 0 for anything not correct (or not evaluated)."""
    return (ev.fitness or 0.0) if ev is not None else 0.0


def ranked(members: Sequence[Member]) -> list[Member]:
    """Best first; ties by candidate id so the order never depends on arrival."""
    return sorted(members, key=lambda m: (-fitness_of(m[1]), m[0].id))


def power_law_weights(n: int, alpha: float) -> list[float]:
    """Rank r (0 = best) weighs (r + 1)^-alpha: alpha 0 is uniform, larger exploits harder."""
    return [(r + 1) ** -alpha for r in range(n)]


def sigmoid_weights(fitness: Sequence[float], sharpness: float = 10.0,
                    children: Optional[Sequence[int]] = None) -> list[float]:
    """sigmoid(sharpness * (f - median) / spread), divided by 1 + offspring so far (a parent that
    already had many children yields to the others, as in ShinkaEvolve's weighted sampling)."""
    ordered = sorted(fitness)
    median = ordered[len(ordered) // 2] if ordered else 0.0
    spread = ((max(fitness) - min(fitness)) or 1.0) if fitness else 1.0
    out = []
    for i, f in enumerate(fitness):
        w = 1.0 / (1.0 + math.exp(-sharpness * (f - median) / spread))
        out.append(w / (1.0 + (children[i] if children else 0)))
    return out


def select_power_law(members: Sequence[Member], rng: random.Random, alpha: float = 1.0) -> Member:
    order = ranked(members)
    return rng.choices(order, weights=power_law_weights(len(order), alpha))[0]


def select_weighted(members: Sequence[Member], rng: random.Random, children: Optional[dict[str, int]] = None,
                    sharpness: float = 10.0) -> Member:
    order = ranked(members)
    kids = [children.get(c.id, 0) for c, _ in order] if children else None
    return rng.choices(order, weights=sigmoid_weights([fitness_of(e) for _, e in order], sharpness, kids))[0]


class Beam:
    """Top-k round-robin: the k best, in turn (a counter, not the RNG, so it is deterministic)."""

    def __init__(self, k: int = 3) -> None:
        self.k = k
        self.turn = 0

    def __call__(self, members: Sequence[Member], rng: random.Random) -> Member:
        top = ranked(members)[: self.k]
        pick = top[self.turn % len(top)]
        self.turn += 1
        return pick


SELECTIONS = ("power_law", "weighted", "beam")


def make_selector(name: str, *, alpha: float = 1.0, beam_k: int = 3,
                  children: Optional[dict[str, int]] = None) -> Callable[[Sequence[Member], random.Random], Member]:
    """A ``(members, rng) -> member`` picker by name (one of ``SELECTIONS``)."""
    if name == "power_law":
        return lambda members, rng: select_power_law(members, rng, alpha)
    if name == "weighted":
        return lambda members, rng: select_weighted(members, rng, children)
    if name == "beam":
        return Beam(beam_k)
    raise ConfigError(f"unknown parent selection {name!r}", f"use one of: {', '.join(SELECTIONS)}")
