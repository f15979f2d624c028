"""Where the LLM agents meet the loop: clients with a run-level budget whose every call lands in the
candidates database, the fast path for generation 0, and LLM proposals mixed with the template
proposer's. Without ``--llm`` nothing here is built and the loop runs as before.
"""

from __future__ import annotations

import os
import time
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from agents import ProposalRequest, Proposer, ProposerTools
from candidates_db import Store
from design_space import (
    BudgetExhausted, Candidate, ConfigError, DesignPoint, Evaluation, KernelSpec, LLMCall, LLMError, Pattern,
)
from design_space.hardware import HardwareProfile
from evaluator.cascade import Evaluator

CONFIG_FILES = (Path("cuco.toml"), Path.home() / ".config" / "cuco" / "config.toml")


@dataclass(frozen=True)
class LLMSettings:
    names: tuple[str, ...] = ()  # --llm, e.g. ("openai:gpt-4.1", "openai-compatible:llama@http://localhost:8000/v1")
    budget_usd: Optional[float] = None  # run-level, across resumes
    share: float = 0.75  # of each generation's new candidates, after generation 0
    fast_path: bool = True
    fast_path_iterations: int = 4
    timeout_s: Optional[float] = None  # None: each provider's default (local servers 900 s, cloud APIs 120 s)
    context_tokens: Optional[int] = None  # --llm-context: the window of servers that cannot tell theirs
    max_retries: int = 4
    backoff_s: float = 1.0
    prices: Optional[Path] = None  # JSON price table overriding the built-in one

    def check(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ConfigError(f"--llm-share must be within 0..1, got {self.share}", "pass e.g. --llm-share 0.75")
        if self.budget_usd is not None and self.budget_usd < 0:
            raise ConfigError(f"--llm-budget must be positive, got {self.budget_usd}", "pass dollars, e.g. 5")


def configured_names(explicit: tuple[str, ...], config_files=CONFIG_FILES) -> tuple[str, ...]:
    """``--llm`` when given, else the ``llm = [...]`` entry of the first config file found
    (./cuco.toml, ~/.config/cuco/config.toml), else the CUCO_LLM variable (comma-separated)."""
    if explicit:
        return explicit
    for path in config_files:
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text())
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"cannot read {path}: {e}", "fix the TOML syntax or remove the file") from e
            names = data.get("llm", [])
            if names:
                return tuple([names] if isinstance(names, str) else names)
    env = os.environ.get("CUCO_LLM", "")
    return tuple(n.strip() for n in env.split(",") if n.strip())


def enable_hint() -> str:
    """What the run says when it has no LLM."""
    from agents.llm import configured_llms
    ready = configured_llms(os.environ)
    if ready:
        return (f"proposer: design-space templates (no --llm given; keys found for {', '.join(ready)}: "
                f"pass e.g. --llm {ready[0]}:<model> to add LLM proposals)")
    return ("proposer: design-space templates, no LLM. To add LLM proposals set OPENAI_API_KEY or "
            "ANTHROPIC_API_KEY and pass --llm openai:<model> / --llm anthropic:<model>, or run a local server "
            "and pass --llm openai-compatible:<model>@http://localhost:8000/v1")


@dataclass
class AgentWiring:
    """The run's LLM clients, budget, fast path and LLM proposer. Built before the run's database is
    opened (a missing key or an unpriced model under a budget then leaves nothing behind), and
    ``attach``-ed to it after."""

    settings: LLMSettings
    store: Optional[Store]
    run_name: str
    evaluator: Evaluator
    emit: Callable[[str, str], None]  # (kind, message)
    seed: int = 0
    clients: list = field(default_factory=list)
    evaluator_s: float = 0.0  # time spent in evaluator calls made for the agents (fast-path checks, repairs)

    def __post_init__(self) -> None:
        from agents.llm import Budget, create_llm, load_prices
        from agents.slow_path import LLMProposer

        self.budget = Budget(self.settings.budget_usd)
        if self.store is not None:
            self.attach(self.store)
        prices = load_prices(self.settings.prices)
        self.clients = [create_llm(n, recorder=self.record, budget=self.budget, prices=prices,
                                   timeout_s=self.settings.timeout_s, max_retries=self.settings.max_retries,
                                   context_tokens=self.settings.context_tokens,
                                   backoff_s=self.settings.backoff_s) for n in self.settings.names]
        self._refuse_unpriced()
        self.llm_proposer = LLMProposer(self.clients, seed=self.seed)

    def _refuse_unpriced(self) -> None:
        """A budget that cannot see a model's cost would not stop it: refuse rather than pretend."""
        if self.settings.budget_usd is None:
            return
        unpriced = [c.label for c in self.clients
                    if not getattr(c, "price_known", True) and not getattr(c, "local", False)]
        if unpriced:
            raise ConfigError(f"--llm-budget cannot count the cost of {', '.join(unpriced)}: no price is known",
                              'add it to a JSON price file {"<model>": {"input": USD_per_Mtok, "output": '
                              'USD_per_Mtok}} and set CUCO_LLM_PRICES=<file>, or run without --llm-budget')

    def attach(self, store: Store) -> None:
        """Record into ``store``; the budget is the run's, across resumes."""
        self.store = store
        if store.get_run(self.run_name):
            self.budget.charge(store.llm_usage(self.run_name)["cost_usd"])

    def record(self, call: LLMCall) -> None:
        self.store.add_llm_call(self.run_name, call)

    def tools(self) -> ProposerTools:
        return ProposerTools(compile=self._timed(self.evaluator.compile_check),
                             check=self._timed(self.evaluator.guard_findings))

    def _timed(self, fn: Callable) -> Callable:
        """``fn`` adding its time to ``evaluator_s``: the figure 'loop time outside the LLM and the
        evaluator' must not count the evaluator work agents ask for."""
        def timed(*args):
            t = time.monotonic()
            try:
                return fn(*args)
            finally:
                self.evaluator_s += time.monotonic() - t
        return timed

    # ------------------------------------------------------------------ generation 0

    def fast_path(self, spec: KernelSpec, pattern: Pattern, hardware: HardwareProfile,
                  checkpoint: Path) -> Optional[Candidate]:
        """The fast path's generation-0 candidate (resumed from ``checkpoint`` after a kill), or None
        when it gave up (the template's conservative point stands in)."""
        if not self.settings.fast_path or not self.clients:
            return None
        from agents.fast_path import FastPathTools, run_fast_path

        self.emit("fast_path", f"fast path: {self.clients[0].label} writes a device-initiated kernel "
                               f"(checkpoint {checkpoint})")
        result = run_fast_path(spec=spec, pattern=pattern, hardware=hardware, client=self.clients[0],
                               tools=FastPathTools(evaluate=self._timed(self._evaluate)), checkpoint_path=checkpoint,
                               thread_id=self.run_name, max_iterations=self.settings.fast_path_iterations,
                               seed_source=_seed_source(spec))
        if not self.store.agent_steps(self.run_name, agent="fast_path"):
            self.store.add_agent_steps(self.run_name, "fast_path", [asdict(s) for s in result.trajectory])
        self.emit("fast_path", f"fast path: {result.status} after {result.iterations} iteration(s)")
        return result.candidate

    def _evaluate(self, source: str, point: Optional[DesignPoint]) -> Evaluation:
        return self.evaluator.evaluate(Candidate(origin={"kind": "llm", "patch_type": "fast_path"}, source=source,
                                                 point=point))

    # ------------------------------------------------------------------ later generations

    def propose(self, request: ProposalRequest, template: Proposer) -> list[Candidate]:
        """LLM proposals for ``share`` of the slots, the template proposer for the rest (and for
        whatever the LLMs could not deliver). BudgetExhausted propagates: the loop stops cleanly."""
        want = round(request.count * self.settings.share) if request.generation > 0 else 0
        out: list[Candidate] = []
        if want:
            try:
                out = self.llm_proposer.propose(replace(request, count=want, tools=self.tools()))
            except LLMError as e:  # a storm past the retry budget: the run goes on without them
                self.emit("llm_failed", f"LLM proposals failed ({e.problem}); the template proposer fills in")
        for reason, model in self.llm_proposer.rejections:
            self.emit("llm_rejected", f"{model}: {reason}")
        self.llm_proposer.rejections.clear()
        rest = request.count - len(out)
        if rest > 0:
            known = request.known_hashes | {c.content_hash for c in out}
            out += template.propose(replace(request, count=rest, known_hashes=known))
        return out


def _seed_source(spec: KernelSpec) -> Optional[str]:
    """The spec's host-driven seed .cu, found relative to its folder (on the search path)."""
    if not spec.seed_kernel:
        return None
    path = Path(spec.seed_kernel)
    if not path.is_absolute():
        for base in (*spec.search_path, "."):
            if (Path(base) / path).is_file():
                path = Path(base) / path
                break
    return path.read_text() if path.is_file() else None


__all__ = ["AgentWiring", "BudgetExhausted", "LLMSettings", "configured_names", "enable_hint"]
