"""The run's evaluations in flight: candidates wait in generation order, at most the launcher's slots
run at once, and each result is stored as it lands (the loop in cuco/loop.py feeds it and asks
whether a generation is done)."""

from __future__ import annotations

from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Callable, Optional

from design_space import Candidate, Evaluation
from evaluator import sandbox


class EvaluationQueue:
    def __init__(self, *, slots: int, submit: Callable[[Candidate, Optional[str]], Future],
                 record: Callable[[Candidate, Evaluation], None], orphaned: Callable[[Candidate], Evaluation],
                 parent_sources: Callable[[list[Candidate]], dict[str, str]],
                 deadline_passed: Callable[[], bool]) -> None:
        self.slots, self._submit, self._record = slots, submit, record
        self._orphaned, self._parent_sources, self._deadline_passed = orphaned, parent_sources, deadline_passed
        self.waiting: deque[Candidate] = deque()
        self.running: dict[Future, Candidate] = {}
        self._parents: dict[str, str] = {}
        self._seen: set[str] = set()

    def add(self, cands: list[Candidate]) -> int:
        """Queue candidates not queued before (in generation order); how many were new."""
        new = [c for c in cands if c.id not in self._seen]
        self._seen.update(c.id for c in new)
        self._parents.update(self._parent_sources(new))
        self.waiting = deque(sorted([*self.waiting, *new], key=lambda c: c.generation))
        return len(new)

    def busy_up_to(self, generation: int) -> bool:
        """Whether a candidate of ``generation`` or earlier is still waiting or running."""
        return any(c.generation <= generation for c in (*self.waiting, *self.running.values()))

    @property
    def empty(self) -> bool:
        return not self.waiting and not self.running

    def pump(self) -> None:
        """Start waiting candidates while a slot is free (nothing new after --max-wall)."""
        while self.waiting and len(self.running) < self.slots and not self._deadline_passed():
            cand = self.waiting.popleft()
            parent = self._parents.get(cand.parent_ids[0]) if cand.parent_ids else None
            if cand.parent_ids and parent is None:
                self._record(cand, self._orphaned(cand))
                continue
            self.running[self._submit(cand, parent)] = cand

    def settle(self) -> None:
        """Wait for at least one running evaluation and store every one that finished."""
        if not self.running:
            return
        done, _ = wait(self.running, return_when=FIRST_COMPLETED)
        for fut in done:
            cand = self.running.pop(fut)
            self._record(cand, fut.result())  # infrastructure faults propagate; candidate faults are data

    def abandon(self) -> None:
        """On Ctrl-C or a fault: stop the in-flight stages instead of waiting for them (what was not
        stored is evaluated again on resume)."""
        if self.running:
            sandbox.stop_all()
            for fut in self.running:
                fut.cancel()
