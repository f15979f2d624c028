"""UCB1 over the LLM clients: which model to ask next.

Reward = the child's improvement over its parent, (child / parent - 1) clipped to [0, 1] (a
correct child of a failed parent earns 1); 0 for a failure of any kind (no code, patch or build
failure, a wrong result, an LLMError). Rewards arrive late -- a child is evaluated after the
proposal returns -- so a pull counts at once (it widens the exploration term of the others) while
the mean uses only resolved rewards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Optional


@dataclass
class Arm:
    pulls: int = 0
    resolved: int = 0
    reward_sum: float = 0.0

    @property
    def mean(self) -> float:
        return self.reward_sum / self.resolved if self.resolved else 0.0


@dataclass
class UCB1:
    labels: list[str]
    c: float = 1.0
    arms: dict[str, Arm] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for label in self.labels:
            self.arms.setdefault(label, Arm())

    def select(self, allowed: Optional[Iterable[str]] = None) -> Optional[str]:
        """The arm to pull: an unpulled one first (in order), else the highest upper bound."""
        names = [n for n in self.labels if allowed is None or n in set(allowed)]
        if not names:
            return None
        for n in names:
            if self.arms[n].pulls == 0:
                return n
        total = sum(self.arms[n].pulls for n in names)
        return max(names, key=lambda n: (self.score(n, total), -self.labels.index(n)))

    def score(self, label: str, total: int) -> float:
        arm = self.arms[label]
        return arm.mean + self.c * math.sqrt(2 * math.log(max(total, 1)) / arm.pulls)

    def pull(self, label: str) -> None:
        self.arms[label].pulls += 1

    def reward(self, label: str, value: float) -> None:
        arm = self.arms[label]
        arm.resolved += 1
        arm.reward_sum += min(1.0, max(0.0, value))

    def counts(self) -> dict[str, dict[str, float]]:
        return {n: {"pulls": a.pulls, "resolved": a.resolved, "mean_reward": round(a.mean, 4)}
                for n, a in self.arms.items()}


def improvement(child: Optional[float], parent: Optional[float]) -> float:
    """The bandit's reward for a child of fitness ``child`` (None = failed) from ``parent``."""
    if not child:
        return 0.0
    if not parent:
        return 1.0
    return min(1.0, max(0.0, child / parent - 1.0))
