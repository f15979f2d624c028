"""The slow path: LLMs mutate candidates inside their evolve blocks (README, "LLM agents").

Per requested candidate: an island (round-robin over non-empty ones), a parent by the selection
policy (and a second one for a crossover), inspirations (the island's best plus archive elites of
other design families), a patch form by the explore-then-exploit schedule and a model by UCB1.
The reply is parsed (code + declared DESIGN-POINT) and applied inside the evolve blocks; then:

    exact duplicate or near-duplicate (token-shingle Jaccard >= threshold against every candidate of
    the run at the same declared point)  -> rejected, never built, never repaired
    patch does not apply / point missing / guard findings / nvcc fails -> ONE repair call with the
    precise error, then the slot is given up (``rejections`` says why)

A client's LLMError skips that model for the rest of the call (reward 0) and the slot goes to
another model; with none left the call returns fewer candidates and the loop fills up with the
template proposer. BudgetExhausted propagates: the loop stops cleanly. With no evaluated candidate
in the history it returns [] (generation 0 comes from the fast path or the template).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Sequence

from design_space.candidate import Candidate, Origin, OriginKind, content_hash, new_candidate_id
from design_space.errors import ConfigError, LLMError, PromptTooLong
from design_space.point import DesignPoint
from agents.llm.base import LLMClient, LLMRequest
from agents.proposer import ProposalRequest, register_proposer
from agents.slow_path import context_fit, patches, prompts
from agents.slow_path.archive import Archive, cell_of, inspirations
from agents.slow_path.bandit import UCB1, improvement
from agents.slow_path.budget import DEFAULT_BUDGET, PromptSize, prompt_size_stats
from agents.slow_path.islands import Islands
from agents.slow_path.meta import meta_summary
from agents.slow_path.novelty import NoveltyIndex
from agents.slow_path.reply import ParsedReply, parse_reply
from agents.slow_path.schedule import Phase, Schedule
from agents.slow_path.selection import SELECTIONS, Member, fitness_of, make_selector


@dataclass
class _Call:
    """One propose() call's working state."""

    request: ProposalRequest
    rng: random.Random
    phase: Phase
    islands: dict[int, list[Member]]
    archive: Archive
    hashes: set[str]
    sources: list[tuple[Optional[DesignPoint], str, str]]  # (point, source, id) of every candidate so far
    down: set[str] = field(default_factory=set)  # models that raised LLMError in this call


@dataclass
class _Slot:
    """One candidate being made: where it comes from and how."""

    island: int
    form: str  # "diff" | "full" | "crossover"
    parents: list[Member]
    inspirations: list[Member]
    id: str = field(default_factory=new_candidate_id)
    budget: int = 0  # the prompt's character budget for the model asked (context_fit)


@dataclass
class _Outcome:
    source: Optional[str] = None
    point: Optional[DesignPoint] = None
    kind: Optional[str] = None  # what failed: patch | point | check | compile (None: nothing)
    error: str = ""
    parent_index: int = 0


class LLMProposer:
    name = "llm"

    def __init__(self, clients: Sequence[LLMClient], *, islands: int = 2, selection: str = "power_law",
                 prompt_budget_chars: int = DEFAULT_BUDGET, novelty_threshold: float = 0.92, repair_attempts: int = 1,
                 meta_every: int = 3, seed: int = 0, migrate_every: int = 2, horizon: int = 10, top_k: int = 2,
                 diverse_k: int = 2, max_tokens: int = 8192, use_check: bool = True,
                 schedule: Optional[Schedule] = None) -> None:
        if selection not in SELECTIONS:
            raise ConfigError(f"unknown parent selection {selection!r}", f"use one of: {', '.join(SELECTIONS)}")
        self.clients = {c.label: c for c in clients}  # the first client of a label wins
        self.bandit = UCB1(list(self.clients))
        self.islands = Islands(islands, migrate_every)
        self.schedule = schedule or Schedule(horizon=horizon)
        self.selection, self.budget, self.threshold = selection, prompt_budget_chars, novelty_threshold
        self.repair_attempts, self.meta_every, self.seed = repair_attempts, meta_every, seed
        self.top_k, self.diverse_k, self.max_tokens, self.use_check = top_k, diverse_k, max_tokens, use_check
        self.rejections: list[tuple[str, str]] = []  # (reason, model label): the loop reports and clears them
        self.prompt_sizes: list[PromptSize] = []
        self.stats: Counter = Counter()
        # seconds inside propose() and, of those, waiting for LLM replies (for the loop-overhead figure)
        self.seconds: dict[str, float] = {"propose": 0.0, "llm": 0.0}
        self.meta_text: Optional[str] = None
        self.meta_model: Optional[str] = None
        self._meta_generation: Optional[int] = None
        self._novelty = NoveltyIndex()
        self._pending: dict[str, tuple[str, float]] = {}  # child id -> (model, parent fitness)
        self._credited: set[str] = set()
        self._beam = make_selector("beam")

    # ------------------------------------------------------------------ the protocol

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        start = time.perf_counter()
        try:
            return self._propose(request)
        finally:
            self.seconds["propose"] += time.perf_counter() - start

    def _propose(self, request: ProposalRequest) -> list[Candidate]:
        if not self.clients or not any(ev is not None for _, ev in request.history):
            return []
        self._credit(request.history)
        if request.count <= 0:
            return []
        call = self._start(request)
        self._refresh_meta(request)
        out: list[Candidate] = []
        for k in range(request.count):
            if len(call.down) == len(self.clients):
                break
            cand = self._fill(call, self._slot(call, k))
            if cand is not None:
                out.append(cand)
                call.hashes.add(cand.content_hash)
                call.sources.append((cand.point, cand.source, cand.id))
        self.stats["proposed"] += len(out)
        return out

    def prompt_size_stats(self) -> dict:
        return prompt_size_stats(self.prompt_sizes)

    # ------------------------------------------------------------------ per call

    def _start(self, request: ProposalRequest) -> _Call:
        g = request.generation
        history = list(request.history)
        return _Call(request=request, rng=random.Random(f"slow_path:{self.seed}:{request.seed}:{g}"),
                     phase=self.schedule.phase(g), islands=self.islands.members(history, g),
                     archive=Archive.from_history(history),
                     hashes=set(request.known_hashes) | {c.content_hash for c, _ in history},
                     sources=[(c.point, c.source, c.id) for c, _ in history])

    def _credit(self, history: Sequence[tuple[Candidate, object]]) -> None:
        """Bandit rewards for children evaluated since the last call (and, after a resume, for the
        LLM children of earlier sessions, so the bandit's counts survive a restart)."""
        fitness = {c.id: fitness_of(e) for c, e in history if e is not None}
        for cand, ev in history:
            if ev is None or cand.id in self._credited:
                continue
            self._credited.add(cand.id)
            if cand.id in self._pending:
                label, parent_fit = self._pending.pop(cand.id)
            elif cand.origin.kind is OriginKind.LLM and cand.origin.model in self.clients and cand.parent_ids:
                label, parent_fit = cand.origin.model, fitness.get(cand.parent_ids[0], 0.0)
                self.bandit.pull(label)
            else:
                continue
            self.bandit.reward(label, improvement(ev.fitness, parent_fit))

    def _refresh_meta(self, request: ProposalRequest) -> None:
        g = request.generation
        if self.meta_every <= 0 or g < self.meta_every or self._meta_generation == g:
            return
        if self.meta_text is not None and g % self.meta_every:
            return
        history = [(c, e) for c, e in request.history if e is not None]
        self.meta_text, self.meta_model = meta_summary(list(self.clients.values()), history, workload=request.spec.name,
                                                       generation=g, previous=self.meta_text)
        self._meta_generation = g
        self.stats["meta_llm" if self.meta_model else "meta_fallback"] += 1

    def _slot(self, call: _Call, k: int) -> _Slot:
        islands = [i for i in sorted(call.islands) if call.islands[i]]
        island = islands[k % len(islands)]
        members = call.islands[island]
        form = call.phase.pick_form(call.rng, crossover_possible=len(members) > 1 or len(call.archive.cells) > 1)
        parent = self._select(members, call)
        parents = [parent]
        if form == "crossover":
            second = self._second_parent(parent, members, call)
            if second[0].id == parent[0].id:
                form = "full"  # nobody to cross with
            else:
                parents.append(second)
        insp = [] if form == "crossover" else inspirations(members, call.archive, [parent[0].id], call.rng,
                                                            self.top_k, self.diverse_k)
        return _Slot(island=island, form=form, parents=parents, inspirations=insp)

    def _select(self, members: list[Member], call: _Call) -> Member:
        if self.selection == "beam":
            return self._beam(members, call.rng)
        children = Counter(c.parent_ids[0] for c, _ in call.request.history if c.parent_ids)
        return make_selector(self.selection, alpha=call.phase.alpha, children=dict(children))(members, call.rng)

    def _second_parent(self, first: Member, members: list[Member], call: _Call) -> Member:
        """An elite of another design family when the archive has one, else another island member."""
        other = call.archive.sample(1, call.rng, avoid_cell=cell_of(first[0].point), exclude=frozenset({first[0].id}))
        if other:
            return other[0]
        rest = [m for m in members if m[0].id != first[0].id]
        return self._select(rest, call) if rest else first

    # ------------------------------------------------------------------ one candidate

    def _fill(self, call: _Call, slot: _Slot) -> Optional[Candidate]:
        """Ask models (UCB order) until one answers without LLMError; its result, or None."""
        while True:
            label = self.bandit.select([n for n in self.clients if n not in call.down])
            if label is None:
                return None
            self.bandit.pull(label)
            try:
                cand = self._attempt(call, slot, self.clients[label])
            except LLMError as e:
                self.stats["llm_errors"] += 1
                self.bandit.reward(label, 0.0)
                call.down.add(label)
                self._reject(f"LLM call failed: {e.problem}", label)
                continue
            if cand is None:
                self.bandit.reward(label, 0.0)
            else:
                self._pending[cand.id] = (label, fitness_of(slot.parents[0][1]))
            return cand

    def _fit(self, slot: _Slot, client: LLMClient) -> None:
        """Form and prompt budget for ``client``'s context window (context_fit)."""
        parent_chars = len(slot.parents[0][0].source)
        form = context_fit.fitted_form(client, slot.form, parent_chars)
        if form != slot.form:
            self.stats["full_asked_as_diff"] += 1
            slot.form, slot.parents = form, slot.parents[:1]
        slot.budget = context_fit.prompt_budget(client, slot.form, parent_chars, self.budget)

    def _ask_fitted(self, client: LLMClient, build, purpose: str, call: _Call, slot: _Slot,
                    temperature: float) -> str:
        """Build and ask; a prompt the model's window cannot take is rebuilt once to what fits."""
        try:
            return self._ask(client, build(), purpose, call, slot, temperature)
        except PromptTooLong as e:
            if e.fits_chars is None or not context_fit.MIN_PROMPT_CHARS <= e.fits_chars < slot.budget:
                raise
            self.stats["prompt_refitted"] += 1
            slot.budget = e.fits_chars
            return self._ask(client, build(), purpose, call, slot, temperature)

    def _attempt(self, call: _Call, slot: _Slot, client: LLMClient) -> Optional[Candidate]:
        self._fit(slot, client)
        purpose = "slow_path.crossover" if slot.form == "crossover" else "slow_path.mutate"
        reply = self._ask_fitted(client, lambda: self._prompt(call, slot), purpose, call, slot,
                                 call.phase.temperature)
        parsed = parse_reply(reply)
        if not parsed.ok:
            self.stats["parse_failed"] += 1
            return self._reject(f"unusable reply: {parsed.error}", client.label)
        outcome, patch_type = self._realise(parsed, slot, base=None), slot.form
        for attempt in range(self.repair_attempts + 1):
            if outcome.kind is None:
                near = self._duplicate(call, outcome)
                if near:
                    return self._reject(near, client.label)
                outcome.kind, outcome.error = self._gate(call, outcome)
                if outcome.kind is None:
                    return self._candidate(call, slot, outcome, client.label, patch_type)
            self.stats[f"{outcome.kind}_failed"] += 1
            if attempt == self.repair_attempts:
                break
            outcome, reply = self._repair(call, slot, client, outcome, reply)
            patch_type = "repair"
            if outcome is None:
                return self._reject(f"unusable repair reply: {reply}", client.label)
        what = "after a repair attempt" if self.repair_attempts else "(no repair attempts)"
        why = f"{prompts.REPAIR_KINDS[outcome.kind].lower()} {what}: {_line(outcome.error)}"
        return self._reject(why, client.label)

    def _prompt(self, call: _Call, slot: _Slot) -> prompts.BuiltPrompt:
        r = call.request
        if slot.form == "crossover":
            built = prompts.crossover_prompt(spec=r.spec, pattern=r.pattern, hardware=r.hardware,
                                             parents=(slot.parents[0], slot.parents[1]), meta=self.meta_text or "",
                                             budget=slot.budget or self.budget)
        else:
            built = prompts.mutate_prompt(spec=r.spec, pattern=r.pattern, hardware=r.hardware, parent=slot.parents[0],
                                          inspirations=slot.inspirations, meta=self.meta_text or "", form=slot.form,
                                          budget=slot.budget or self.budget)
        self.prompt_sizes.append(built.size)
        return built

    def _ask(self, client: LLMClient, prompt: prompts.BuiltPrompt, purpose: str, call: _Call, slot: _Slot,
             temperature: float) -> str:
        self.stats["calls"] += 1
        request = LLMRequest(system=prompt.system, messages=(("user", prompt.user),), purpose=purpose,
                             max_tokens=self.max_tokens, temperature=temperature, candidate_id=slot.id,
                             agent_step=f"slow_path:gen{call.request.generation}/island{slot.island}")
        start = time.perf_counter()
        try:
            return client.complete(request).text
        finally:
            self.seconds["llm"] += time.perf_counter() - start

    def _realise(self, parsed: ParsedReply, slot: _Slot, base: Optional[str]) -> _Outcome:
        """Apply the parsed edit to ``base`` (a repair) or to the slot's parent(s)."""
        parent = base if base is not None else slot.parents[0][0].source
        if parsed.form == "diff":
            result = patches.apply_diff(parent, parsed.blocks)
        elif slot.form == "crossover" and base is None:
            result = patches.apply_crossover([p[0].source for p in slot.parents], parsed.code)
        else:
            result = patches.apply_full(parent, parsed.code)
        if not result.ok:
            return _Outcome(kind="patch", error=result.error)
        if parsed.point is None:
            return _Outcome(source=result.source, kind="point", error=parsed.point_error or "no design point",
                            parent_index=result.parent_index)
        return _Outcome(source=result.source, point=parsed.point, parent_index=result.parent_index)

    def _duplicate(self, call: _Call, outcome: _Outcome) -> Optional[str]:
        """Why the source is not new (an exact or near duplicate at the same declared point), or None."""
        if content_hash(outcome.source) in call.hashes:
            self.stats["duplicates"] += 1
            return "duplicate: the same code is already in the run"
        same = [(src, cid) for point, src, cid in call.sources if point == outcome.point or point is None]
        score, where = self._novelty.nearest(outcome.source, [src for src, _ in same])
        if where is not None and score >= self.threshold:
            self.stats["novelty_rejected"] += 1
            return (f"near-duplicate: similarity {score:.3f} >= {self.threshold} to candidate {same[where][1]} "
                    f"at the same design point")
        return None

    def _gate(self, call: _Call, outcome: _Outcome) -> tuple[Optional[str], str]:
        """The loop's cheap gates before evaluation: the guard's findings, then nvcc."""
        tools = call.request.tools
        if self.use_check and tools.check is not None:
            findings = tools.check(outcome.source, outcome.point)
            if findings:
                return "check", findings
        if tools.compile is not None:
            ok, log = tools.compile(outcome.source)
            if not ok:
                return "compile", log
        return None, ""

    def _repair(self, call: _Call, slot: _Slot, client: LLMClient, failed: _Outcome,
                reply: str) -> tuple[Optional[_Outcome], str]:
        """One repair call; (outcome, reply text), or (None, why) when its reply has no code."""
        self.stats["repairs"] += 1
        base = failed.source if failed.kind != "patch" and failed.source else slot.parents[0][0].source
        full_only = slot.form == "crossover" and failed.kind == "patch"
        def build() -> prompts.BuiltPrompt:
            built = prompts.repair_prompt(kind=failed.kind, error=failed.error, code=base,
                                          point=_point_key(failed.point or slot.parents[0][0].point),
                                          previous_reply=reply, full_only=full_only, budget=slot.budget or self.budget)
            self.prompt_sizes.append(built.size)
            return built

        text = self._ask_fitted(client, build, "slow_path.repair", call, slot, temperature=0.2)
        parsed = parse_reply(text)
        if not parsed.ok:
            self.stats["parse_failed"] += 1
            return None, parsed.error or "no code"
        outcome = self._realise(parsed, slot, base=None if full_only else base)
        return outcome, text

    def _candidate(self, call: _Call, slot: _Slot, outcome: _Outcome, label: str, patch_type: str) -> Candidate:
        parents = list(slot.parents)
        if outcome.parent_index:  # a crossover child keeps parent B's frame: B is its first parent
            parents.insert(0, parents.pop(outcome.parent_index))
        ids = tuple(dict.fromkeys(p[0].id for p in parents))
        return Candidate(id=slot.id, parent_ids=ids, generation=call.request.generation, island=slot.island,
                         origin=Origin(kind=OriginKind.LLM, model=label, patch_type=patch_type),
                         source=outcome.source, point=outcome.point)

    def _reject(self, reason: str, label: str) -> None:
        self.rejections.append((reason, label))
        return None


def _point_key(point: Optional[DesignPoint]) -> str:
    return point.key() if point is not None else "undeclared"


def _line(text: str, n: int = 300) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 3] + "..."


register_proposer("llm", LLMProposer)
