"""Explore, then exploit: how the slow path's behaviour moves over a run.

Early generations sample hotter, write more full rewrites and crossovers, and pick parents almost
uniformly (power-law alpha near 0); later ones sample cooler, write mostly diffs, and pick the best
parents (alpha up to 2). ``horizon`` is the generation by which exploitation is complete (the
system we re-create, CUCo, arXiv 2603.02376, reports about 10-20 generations per run); a linear ramp in between.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

EXPLORE_FORMS = {"full": 0.5, "crossover": 0.2, "diff": 0.3}
EXPLOIT_FORMS = {"full": 0.15, "crossover": 0.15, "diff": 0.7}


@dataclass(frozen=True)
class Phase:
    progress: float  # 0 = pure exploration, 1 = pure exploitation
    temperature: float
    forms: dict[str, float]  # patch form -> probability
    alpha: float  # power-law parent selection exponent

    def pick_form(self, rng: random.Random, crossover_possible: bool = True) -> str:
        forms = {f: w for f, w in self.forms.items() if crossover_possible or f != "crossover"}
        names = sorted(f for f, w in forms.items() if w > 0)
        return rng.choices(names, weights=[forms[f] for f in names])[0] if names else "diff"


@dataclass(frozen=True)
class Schedule:
    horizon: int = 10
    hot: float = 1.0
    cool: float = 0.4
    alpha_explore: float = 0.3
    alpha_exploit: float = 2.0
    explore_forms: dict[str, float] = field(default_factory=lambda: dict(EXPLORE_FORMS))
    exploit_forms: dict[str, float] = field(default_factory=lambda: dict(EXPLOIT_FORMS))

    def phase(self, generation: int) -> Phase:
        """The phase of ``generation`` (generation 1 is the first the slow path proposes)."""
        t = min(1.0, max(0.0, (generation - 1) / max(1, self.horizon - 1)))
        names = sorted(set(self.explore_forms) | set(self.exploit_forms))
        forms = {f: (1 - t) * self.explore_forms.get(f, 0.0) + t * self.exploit_forms.get(f, 0.0) for f in names}
        return Phase(progress=t, temperature=round(self.hot + t * (self.cool - self.hot), 3), forms=forms,
                     alpha=self.alpha_explore + t * (self.alpha_exploit - self.alpha_explore))
