"""The evolution loop: where proposers, the evaluator and the store meet.

Generations of ``population`` candidates: the proposer drafts them (deduplicated by content
hash), the evaluator scores them in parallel, the store keeps every result. Everything needed
to continue lives in the database, so running the same command again resumes: unevaluated
candidates are evaluated, missing generations proposed (proposals are seeded per generation).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from agents import ProposalRequest, create_proposer
from candidates_db import Store
from design_space.space import why_not_rendered
from design_space import (
    BudgetExhausted, Candidate, ConfigError, CucoError, DesignPoint, DesignPointError, Evaluation, KernelSpec, Origin,
    OriginKind, RunInfo, RunStatus, Stage, Status, StoreError, get_pattern, get_profile,
)
from evaluator.cascade import Evaluator, EvaluatorConfig
from evaluator.emulate import EmulationSettings
from cuco.agent_wiring import AgentWiring, LLMSettings, configured_names
from cuco.run_folder import prepare_run_folder
from cuco.evaluation_queue import EvaluationQueue
from cuco.cache_dir import default_cache_dir
from cuco.semantic_gate import require_semantics
from evaluator import launchers, sandbox


@dataclass(frozen=True)
class EvolveOptions:
    run_dir: Path
    run_name: Optional[str] = None  # default: the spec's name
    db_url: Optional[str] = None  # default: SQLite file run_dir/cuco.db
    generations: int = 5
    population: int = 8
    workers: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
    seed: int = 0
    proposer: str = "template"
    max_wall_s: Optional[float] = None
    keep_work: bool = False
    seed_points: tuple[DesignPoint, ...] = ()  # put in generation 0 before the proposer's picks
    cache_dir: Optional[Path] = None  # builds, emulator runtime, reference data (content-keyed, shareable)
    emulation_timeout_s: float = 60.0  # per emulator run; a hang ends as `timeout`
    gpu: str = "auto"  # GPU stages: "auto" (when a GPU is present), "off", "require"
    launcher: str = "local"  # where evaluations run: local | ray | slurm (evaluator/launchers.py)
    launcher_address: Optional[str] = None  # ray: a cluster's address; slurm: "local" runs submitit locally
    gpus: str = ""  # local: the GPU ids evaluations may take (e.g. "0-7"), each a disjoint set
    config_file: Optional[str] = None  # the TOML run config the options came from (recorded with the run)
    ahead: int = 0  # generations proposed before the history they could read is complete (0: barriers)
    llm: LLMSettings = field(default_factory=LLMSettings)  # no names: template proposer only

    def check(self) -> None:
        if self.ahead < 0:
            raise ConfigError(f"--ahead must be 0 or more, got {self.ahead}", "pass --ahead 0 (generation "
                              "barriers) or 1 (propose one generation early)")
        for name in ("generations", "population", "workers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name} must be at least 1, got {getattr(self, name)}", f"pass --{name} 1 or more")


def check_seed_points(points: tuple[DesignPoint, ...], spec: KernelSpec) -> None:
    pattern, hw = get_pattern(spec.pattern), get_profile(spec.hardware)
    for p in points:
        p.check_hardware(hw)
        why = why_not_rendered(p, pattern, hw)
        if why:
            raise DesignPointError(f"cannot start from {p.key()}: {why}",
                                   "pick another point; `cuco space SPEC` lists the valid ones")


@dataclass(frozen=True)
class Event:
    kind: str  # prepare | resume | generation | evaluated | stopped | complete
    message: str
    candidate: Optional[Candidate] = None
    evaluation: Optional[Evaluation] = None
    generation: int = -1
    total: int = 0


@dataclass(frozen=True, repr=False)
class RunSummary:
    """What ``cuco.evolve`` returns: the run as stored, where, what this call evaluated, the best
    correct candidate (``best``: (Candidate, Evaluation) or None) and the count per status.
    ``str()`` / ``repr()`` are a short report; ``best[0].source`` is the kernel's CUDA."""

    run: RunInfo
    database: str
    evaluated_now: int
    resumed: bool
    best: Optional[tuple[Candidate, Evaluation]]
    status_counts: dict[str, int]
    wall_s: float
    # where the wall time went: prepare (reference + emulator runtime), propose (proposers, fast
    # path and LLM calls included), evaluate (waiting for the evaluator's workers), agents_evaluator
    # (the part of propose spent in evaluator calls for the agents: fast-path checks, repairs)
    seconds: dict[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.status_counts.items()) if v) or "nothing stored"
        lines = [f"run {self.run.name!r} ({self.run.status.value}{', resumed' if self.resumed else ''}): "
                 f"{self.evaluated_now} evaluated now in {self.wall_s:.0f} s; stored: {counts}",
                 f"database: {self.database}"]
        if self.best is not None:
            cand, ev = self.best
            point = cand.point.key() if cand.point else "(no declared point)"
            source = ev.timing_source.value if ev.timing_source else "untimed"
            lines.append(f"best: {cand.id} {point}: {ev.speedup or 0:.3f}x geomean speedup over the host-driven "
                         f"baseline, SOL {ev.sol_fraction or 0:.2f} ({source})")
        else:
            lines.append("best: none correct yet")
        return "\n".join(lines)

    def __repr__(self) -> str:
        best = f"{self.best[0].id} {self.best[1].speedup or 0:.3f}x" if self.best else None
        return (f"RunSummary(run={self.run.name!r}, status={self.run.status.value!r}, evaluated_now={self.evaluated_now}, "
                f"best={best!r}, database={self.database!r})")


def spec_hash(spec: KernelSpec) -> str:
    # a field added later is left out while it holds its default, so older runs still resume
    unset = {"output_tolerances"} if not spec.output_tolerances else set()
    return hashlib.sha256(spec.model_dump_json(exclude=unset).encode()).hexdigest()[:16]


def database_for(options: EvolveOptions) -> str:
    return options.db_url or str(Path(options.run_dir) / "cuco.db")


class _Loop:
    def __init__(self, spec: KernelSpec, options: EvolveOptions, on_event: Callable[[Event], None]) -> None:
        options.check()
        check_seed_points(options.seed_points, spec)
        self.spec, self.options, self.emit = spec, options, on_event
        self.name = options.run_name or spec.name
        self.pattern, self.hardware = get_pattern(spec.pattern), get_profile(spec.hardware)
        self.proposer = create_proposer(options.proposer)
        self.started = time.monotonic()
        self.seconds = {"prepare": 0.0, "propose": 0.0, "evaluate": 0.0}
        self._proposing = 0.0  # proposal time inside the evaluation loop (not counted as evaluating)
        self.evaluated = 0
        # the evaluator checks the toolchain: fail before anything is written
        settings = EmulationSettings(timeout_s=options.emulation_timeout_s)
        self.evaluator = Evaluator(spec, EvaluatorConfig(cache_dir=options.cache_dir or default_cache_dir(),
                                                         keep_work=options.keep_work, emulation=settings,
                                                         gpu=options.gpu))
        # A misconfigured LLM (missing key, unpriced model under a budget) or an unwritable or
        # full run folder fails here, before anything is created.
        self.agents = self._agents()
        # no candidate is spent on a reference that does not compute its family (checked once per content)
        require_semantics(spec, options.cache_dir or default_cache_dir())
        prepare_run_folder(Path(options.run_dir))
        self.store = Store.open(database_for(options))
        if self.agents is not None:
            self.agents.attach(self.store)
        try:
            self.launcher = self._launcher()
        except BaseException:
            self.store.close()
            raise

    def _launcher(self):
        o = self.options
        if o.launcher == "local":
            return launchers.LocalLauncher(o.workers, launchers.parse_gpus(o.gpus))
        if o.launcher == "ray":
            return launchers.RayLauncher(address=o.launcher_address)
        if o.launcher == "slurm":
            return launchers.SlurmLauncher(Path(o.run_dir) / "slurm", slots=o.workers, cluster=o.launcher_address)
        raise ConfigError(f"unknown launcher {o.launcher!r}", f"pass --launcher {' or '.join(launchers.LAUNCHERS)}")

    def _gpus_per_job(self) -> int:
        plan = self.evaluator.gpu
        if plan is None or not self.options.gpus:
            return 0
        return 1 if plan.mode == "virtual" else max(plan.worlds)

    def _agents(self) -> Optional[AgentWiring]:
        llm = self.options.llm
        llm.check()
        names = configured_names(llm.names)
        if not names:
            return None
        from dataclasses import replace
        return AgentWiring(replace(llm, names=names), None, self.name, self.evaluator,
                           emit=lambda kind, message: self.emit(Event(kind, message)), seed=self.options.seed)

    def _open_run(self) -> tuple[RunInfo, bool]:
        existing = self.store.get_run(self.name)
        config = {"generations": self.options.generations, "population": self.options.population,
                  "seed": self.options.seed, "proposer": self.options.proposer,
                  "llm": list(self.agents.settings.names) if self.agents else [],
                  "workers": self.options.workers, "launcher": self.options.launcher,
                  "max_wall_s": self.options.max_wall_s, "config_file": self.options.config_file,
                  # draws the emulation shapes: secret (only the database holds it), so no candidate
                  # can be written for the shapes it will meet; kept for the run's lifetime
                  "shape_seed": (existing.config.get("shape_seed") if existing else None) or secrets.randbits(62)}
        self.evaluator.use_shape_seed(config["shape_seed"])
        if existing is None:
            now = datetime.now(timezone.utc)
            run = RunInfo(name=self.name, spec_name=self.spec.name, pattern=self.spec.pattern,
                          spec_hash=spec_hash(self.spec), spec_json=self.spec.model_dump_json(), config=config,
                          created_at=now, updated_at=now)
            return self.store.create_run(run), False
        if existing.spec_hash != spec_hash(self.spec):
            raise StoreError(f"run {self.name!r} in {database_for(self.options)} was started with a different spec",
                             "pass --run-name NEW_NAME (or another --run-dir) to start a new run")
        return self.store.update_run(self.name, status=RunStatus.RUNNING, config=config), True

    def _deadline(self) -> Optional[float]:
        """When --max-wall ends the run (``time.monotonic()``): in-flight stages are cut there too."""
        m = self.options.max_wall_s
        return None if m is None else self.started + m

    def _deadline_passed(self) -> bool:
        d = self._deadline()
        return d is not None and time.monotonic() > d

    def run(self) -> RunSummary:
        run, resumed = self._open_run()
        if resumed:
            done = self.store.max_generation(self.name) + 1
            self.emit(Event("resume", f"resuming run {self.name!r}: {len(self.store.candidates(self.name))} "
                                      f"candidates in {done} generation(s) already stored"))
        self.emit(Event("prepare", "running the reference on gloo and building the emulator runtime (cached)"))
        t = time.monotonic()
        self.evaluator.prepare()
        self.seconds["prepare"] += time.monotonic() - t
        try:
            status, note = self._generations()
        except KeyboardInterrupt:
            self.store.update_run(self.name, status=RunStatus.STOPPED, note="interrupted; run again to resume")
            raise
        except CucoError as e:
            self.store.update_run(self.name, status=RunStatus.FAILED, note=f"{e}; fix it, then run again to resume")
            raise
        run = self.store.update_run(self.name, status=status, note=note)
        self.emit(Event("complete" if status is RunStatus.COMPLETE else "stopped", note))
        return RunSummary(run=run, database=database_for(self.options), evaluated_now=self.evaluated,
                          resumed=resumed, best=self.store.best(self.name),
                          status_counts=self.store.status_counts(self.name), wall_s=time.monotonic() - self.started,
                          seconds={**self.seconds, "agents_evaluator": self.agents.evaluator_s if self.agents else 0.0})

    def _generations(self) -> tuple[RunStatus, str]:
        """Propose each generation once the history it may read is complete, and keep evaluations
        flowing. Generation g's proposals read the generations up to g - 1 - ahead: with ``ahead``
        0 every generation waits for the one before (the search sees all it can); with ``ahead`` N
        they are proposed N generations early, while earlier ones still run, so slots stay busy.
        Either way the history a proposal reads is fixed, so a seed gives the same candidates."""
        total, ahead = self.options.generations, self.options.ahead
        q = EvaluationQueue(slots=self.launcher.slots, submit=self._submit, record=self._record,
                            orphaned=self._orphaned, parent_sources=self._parent_sources,
                            deadline_passed=self._deadline_passed)
        # never evaluated (a killed run's in-flight work among them), then those --max-wall cut short
        q.add([*self.store.unevaluated(self.name), *self.store.cut_short(self.name)])
        gen, budget_note = 0, None
        started = time.monotonic()
        try:
            while True:
                while gen < total and budget_note is None and not q.busy_up_to(gen - 1 - ahead):
                    if self._deadline_passed():
                        return RunStatus.STOPPED, f"--max-wall reached before generation {gen}; run again to resume"
                    budget_note = self._fill_generation(gen, ahead)
                    if budget_note is None:
                        q.add(self.store.unevaluated(self.name))
                        waiting = sum(1 for c in q.waiting if c.generation <= gen)
                        self.emit(Event("generation", f"generation {gen}: {waiting} to evaluate", generation=gen,
                                        total=waiting))
                        gen += 1
                if q.empty:
                    break
                q.pump()
                if not q.running:  # work left that the deadline keeps from starting
                    return RunStatus.STOPPED, "--max-wall reached; unevaluated candidates resume on the next run"
                q.settle()
        except BaseException:
            q.abandon()
            raise
        finally:
            self.seconds["evaluate"] += time.monotonic() - started - self._proposing
        if budget_note is not None:
            return RunStatus.STOPPED, budget_note
        return RunStatus.COMPLETE, f"{self.options.generations} generation(s) complete"

    def _fill_generation(self, gen: int, ahead: int) -> Optional[str]:
        """Propose what generation ``gen`` lacks; the budget's note when it ran out, else None."""
        have = self.store.candidates(self.name, generation=gen)
        if len(have) >= self.options.population:
            return None
        t = time.monotonic()
        try:
            self._propose(gen, self.options.population - len(have), upto=gen - 1 - ahead)
        except BudgetExhausted as e:
            return f"{e.problem}; {e.fix}"
        finally:
            spent = time.monotonic() - t
            self.seconds["propose"] += spent
            self._proposing += spent
        return None

    def _propose(self, gen: int, count: int, upto: Optional[int] = None) -> None:
        """Propose ``count`` candidates of generation ``gen`` from the history of generations up to
        ``upto`` (default: every one before ``gen``)."""
        if gen == 0:
            for p in self.options.seed_points[:count]:
                cand = Candidate(generation=0, origin=Origin(kind=OriginKind.MANUAL, patch_type="point"),
                                 source=self.pattern.render(p), point=p)
                count -= int(self.store.add_candidate(self.name, cand))
            if count > 0 and self.agents is not None:
                first = self.agents.fast_path(self.spec, self.pattern, self.hardware,
                                              Path(self.options.run_dir) / "fast_path.sqlite")
                if first is not None:
                    count -= int(self.store.add_candidate(self.name, first))
        if count <= 0:
            return
        upto = gen - 1 if upto is None else upto
        # the evaluations of generations up to ``upto``; later candidates stand as not yet evaluated
        # (what they scored may still be changing while this runs, so it cannot be read)
        board, stored = self.store.leaderboard(self.name), self.store.candidates(self.name)
        if upto < gen - 1:  # the leaderboard's order would follow evaluations still landing: store order
            order = {c.id: i for i, c in enumerate(stored)}
            board = sorted(board, key=lambda ce: order[ce[0].id])
        history = [(c, e if c.generation <= upto else None) for c, e in board if c.generation <= gen]
        known = frozenset(c.content_hash for c in stored)
        request = ProposalRequest(spec=self.spec, pattern=self.pattern, hardware=self.hardware, generation=gen,
                                  count=count, seed=self.options.seed, history=history,
                                  known_hashes=known)
        if self.agents is None:
            proposed = self.proposer.propose(request)
        else:
            proposed = self.agents.propose(request, self.proposer)
        self.store.add_candidates(self.name, list(proposed))  # one transaction: a kill leaves all or none

    def _submit(self, cand: Candidate, parent: Optional[str]) -> Future:
        job = launchers.job_for(self.evaluator, cand, parent, self._deadline(), self._gpus_per_job())
        local = (lambda: self.evaluator.evaluate(cand, parent, self._deadline())) \
            if self.options.launcher == "local" else None
        return self.launcher.submit(job, local)

    def _parent_sources(self, pending: list[Candidate]) -> dict[str, str]:
        """The sources of the first parents of ``pending`` (by id) that this run holds: the guard
        holds a child's frozen code to its first parent's, whichever proposer made it."""
        wanted = {c.parent_ids[0] for c in pending if c.parent_ids}
        if not wanted:
            return {}
        return {c.id: c.source for c in self.store.candidates(self.name) if c.id in wanted}

    def _orphaned(self, cand: Candidate) -> Evaluation:
        """A child whose parent the run does not hold cannot be checked: it is rejected unevaluated."""
        reason = (f"[parent_missing]: parent {cand.parent_ids[0]} is not in this run, so the code outside the "
                  "evolve blocks cannot be checked against it")
        return Evaluation(candidate_id=cand.id, status=Status.REJECTED, stage=Stage.GUARD, reason=reason, logs=reason,
                          provenance=self.evaluator.provenance)

    def _record(self, cand: Candidate, evaluation: Evaluation) -> None:
        self.store.add_evaluation(evaluation)
        self.evaluated += 1
        self.emit(Event("evaluated", evaluation.status.value, candidate=cand, evaluation=evaluation,
                        generation=cand.generation))

    def close(self) -> None:
        self.launcher.close(wait=False)
        self.store.close()


def evolve(spec: KernelSpec, options: EvolveOptions, on_event: Callable[[Event], None] = lambda e: None) -> RunSummary:
    """Run (or resume) the search for ``spec``; see ``EvolveOptions``."""
    loop = _Loop(spec, options, on_event)
    try:
        return loop.run()
    finally:
        loop.close()
