"""Islands: separate sub-populations that evolve on their own and trade their best now and then.

Every LLM child keeps its parent's island (``Candidate.island``). Candidates that no island
proposer made (the fast path's generation 0, the template proposer's fill-ins) are dealt to the
islands by a stable hash of their id, so every island starts from the shared pool. Every
``migrate_every`` generations the best member of island i joins island (i + 1) mod N (a ring).

The view is recomputed from the run's history on every call, never kept in memory, so a resumed
run sees exactly the islands it left (the loop stores every candidate with its island).
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from design_space.candidate import Candidate, OriginKind
from agents.slow_path.selection import Member, ranked


def home_island(cand: Candidate, n: int) -> int:
    """The island a candidate belongs to: its own for LLM children, a stable deal for the rest."""
    if cand.origin.kind is OriginKind.LLM and 0 <= cand.island < n:
        return cand.island
    return int(hashlib.sha256(cand.id.encode()).hexdigest()[:8], 16) % n


class Islands:
    def __init__(self, n: int = 2, migrate_every: int = 2) -> None:
        if n < 1:
            raise ValueError("at least one island")
        self.n = n
        self.migrate_every = migrate_every

    def members(self, history: Sequence[Member], generation: int) -> dict[int, list[Member]]:
        """Each island's evaluated members as seen when proposing ``generation``, migrants included."""
        islands: dict[int, list[Member]] = {i: [] for i in range(self.n)}
        for cand, ev in history:
            if ev is not None:
                islands[home_island(cand, self.n)].append((cand, ev))
        if self.n > 1 and self.migrate_every > 0:
            for g in range(self.migrate_every, generation + 1, self.migrate_every):
                self._migrate(islands, g)
        return islands

    def _migrate(self, islands: dict[int, list[Member]], generation: int) -> None:
        """Ring migration at ``generation``: each island's best among members born before it."""
        movers = {}
        for i, members in islands.items():
            born = [m for m in members if m[0].generation < generation]
            if born:
                movers[i] = ranked(born)[0]
        for i, best in movers.items():
            dest = islands[(i + 1) % self.n]
            if all(m[0].id != best[0].id for m in dest):
                dest.append(best)

    def migrants(self, history: Sequence[Member], generation: int) -> dict[int, list[str]]:
        """Ids that are on an island other than their home one (for reports and tests)."""
        out = {}
        for i, members in self.members(history, generation).items():
            out[i] = [c.id for c, _ in members if home_island(c, self.n) != i]
        return out
