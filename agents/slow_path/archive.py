"""Inspirations: the island's best plus a quality-diversity archive.

The archive is a MAP-Elites grid keyed by design-space coordinates (backend, placement,
sync_scope): each cell keeps its best correct candidate, so the prompt can show the LLM a good
design from a *different* family than the parent's, not just five variants of the leader.
"""

from __future__ import annotations

import random
from typing import Optional, Sequence

from design_space.point import DesignPoint
from agents.slow_path.selection import Member, fitness_of, ranked

Cell = tuple[str, str, str]


def cell_of(point: Optional[DesignPoint]) -> Optional[Cell]:
    if point is None:
        return None
    return point.backend.value, point.placement.value, point.sync_scope.value


class Archive:
    def __init__(self) -> None:
        self.cells: dict[Cell, Member] = {}

    @classmethod
    def from_history(cls, history: Sequence[Member]) -> "Archive":
        archive = cls()
        for cand, ev in history:
            if ev is not None:
                archive.add((cand, ev))
        return archive

    def add(self, member: Member) -> bool:
        """Keep ``member`` if it is correct and beats its cell's elite; True when it did."""
        cand, ev = member
        cell, fit = cell_of(cand.point), fitness_of(ev)
        if cell is None or fit <= 0:
            return False
        held = self.cells.get(cell)
        if held is not None and (fitness_of(held[1]), held[0].id) >= (fit, cand.id):
            return False
        self.cells[cell] = member
        return True

    def elites(self) -> list[Member]:
        return ranked(list(self.cells.values()))

    def sample(self, k: int, rng: random.Random, avoid_cell: Optional[Cell] = None,
               exclude: frozenset[str] = frozenset()) -> list[Member]:
        """``k`` elites of cells other than ``avoid_cell`` (diversity first), drawn at random."""
        pool = [m for cell, m in sorted(self.cells.items()) if cell != avoid_cell and m[0].id not in exclude]
        if len(pool) < k:  # too few other families: the parent's own cell may serve
            pool += [m for cell, m in sorted(self.cells.items()) if cell == avoid_cell and m[0].id not in exclude]
        return rng.sample(pool, min(k, len(pool)))


def inspirations(island: Sequence[Member], archive: Archive, parent_ids: Sequence[str], rng: random.Random,
                 top_k: int = 2, diverse_k: int = 2) -> list[Member]:
    """Top-k of the island (not the parents) plus elites of other cells, without repeats."""
    skip = set(parent_ids)
    top = [m for m in ranked(island) if m[0].id not in skip and fitness_of(m[1]) > 0][:top_k]
    skip |= {m[0].id for m in top}
    parent_cell = next((cell_of(c.point) for c, _ in island if c.id in parent_ids), None)
    return top + archive.sample(diverse_k, rng, avoid_cell=parent_cell, exclude=frozenset(skip))
