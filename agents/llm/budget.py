"""The run's LLM budget in dollars, shared by every client of the run (and their threads).

Clients call ``check()`` before each call and ``charge(cost)`` after it, so a call that starts
below the limit runs to the end: concurrent calls may overshoot the limit by what they cost.
"""

from __future__ import annotations

import threading
from typing import Optional

from design_space.errors import BudgetExhausted, ConfigError


class Budget:
    def __init__(self, limit_usd: Optional[float] = None, spent_usd: float = 0.0) -> None:
        """``limit_usd=None`` means unlimited. ``spent_usd`` carries a resumed run's spending."""
        if limit_usd is not None and limit_usd < 0:
            raise ConfigError(f"the LLM budget ${limit_usd} is negative", "give --llm-budget a number >= 0")
        self.limit_usd = limit_usd
        self._spent = float(spent_usd)
        self._lock = threading.Lock()

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    @property
    def remaining_usd(self) -> Optional[float]:
        if self.limit_usd is None:
            return None
        return max(0.0, self.limit_usd - self.spent_usd)

    @property
    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def charge(self, cost_usd: float) -> None:
        with self._lock:
            self._spent += cost_usd

    def check(self) -> None:
        """Raise ``BudgetExhausted`` when the limit is reached (before a call, never during one)."""
        with self._lock:
            spent = self._spent
        if self.limit_usd is not None and spent >= self.limit_usd:
            raise BudgetExhausted(f"LLM budget of ${self.limit_usd:.2f} spent (${spent:.4f})",
                                  "run again with a larger --llm-budget to resume")
