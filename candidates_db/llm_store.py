"""What the agents spent and did: LLM calls and agent trajectories, as part of ``Store``.

``LLMRecords`` is a mixin of ``store.Store`` (kept apart so each module stays readable); its
methods open one short session each, like the rest of the store, so the loop may record from
worker threads. Values in and out are ``design_space.llm.LLMCall`` and plain step dicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Callable, Optional

from sqlalchemy import case, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from candidates_db.schema import AgentStepRow, LLMCallRow, RunRow, json_safe, utcnow
from design_space.errors import StoreError
from design_space.llm import LLMCall

# PostgreSQL text cannot hold NUL; a garbled reply may contain one. Same on every backend, so a
# run reads back the same wherever it was stored.
NUL_STAND_IN = "\ufffd"
STEP_COLUMNS = ("step", "node", "iteration", "summary", "status", "reason", "candidate_id", "created_at")


def _text(value: Optional[str]) -> Optional[str]:
    return None if value is None else value.replace("\x00", NUL_STAND_IN)


def _call_row(run: str, c: LLMCall) -> LLMCallRow:
    return LLMCallRow(
        id=c.id, run_name=run, purpose=c.purpose, candidate_id=c.candidate_id, agent_step=_text(c.agent_step),
        provider=c.provider, model=c.model, prompt=_text(c.prompt), response=_text(c.response),
        prompt_chars=c.prompt_chars, tokens_in=c.tokens_in, tokens_out=c.tokens_out, latency_s=c.latency_s,
        cost_usd=c.cost_usd, retries=c.retries, error=_text(c.error), created_at=c.created_at,
    )


def _call_value(r: LLMCallRow) -> LLMCall:
    return LLMCall(
        id=r.id, purpose=r.purpose, candidate_id=r.candidate_id, agent_step=r.agent_step, provider=r.provider,
        model=r.model, prompt=r.prompt, response=r.response, prompt_chars=r.prompt_chars, tokens_in=r.tokens_in,
        tokens_out=r.tokens_out, latency_s=r.latency_s, cost_usd=r.cost_usd, retries=r.retries, error=r.error,
        created_at=r.created_at,
    )


def _enum_value(v: Any) -> Any:
    return getattr(v, "value", v)  # a Status enum or its string


def _step_fields(step: dict[str, Any]) -> dict[str, Any]:
    """Column values of one step dict; keys beyond the columns go to ``details`` (JSON)."""
    if not step.get("node"):
        raise StoreError(f"agent step {step!r} has no 'node'",
                         "give every step the graph node it ran (e.g. 'write', 'build', 'judge')")
    created = step.get("created_at") or utcnow()
    extra = {k: v for k, v in step.items() if k not in STEP_COLUMNS and k != "agent"}
    return {
        "node": str(step["node"]), "iteration": int(step.get("iteration") or 0),
        "summary": _text(str(step.get("summary") or "")), "reason": _text(str(step.get("reason") or "")),
        "status": None if step.get("status") is None else str(_enum_value(step["status"])),
        "candidate_id": step.get("candidate_id"),
        "created_at": datetime.fromisoformat(created) if isinstance(created, str) else created,
        # Through JSON once, so what we store is what comes back (tuples as lists, values as text).
        "details": json.loads(json.dumps(json_safe(extra), default=str)),
    }


def _step_value(r: AgentStepRow) -> dict[str, Any]:
    return {"agent": r.agent, "step": r.step, "node": r.node, "iteration": r.iteration, "summary": r.summary,
            "status": r.status, "reason": r.reason, "candidate_id": r.candidate_id,
            "created_at": r.created_at, **(r.details or {})}


def _sums(rows: Any) -> dict[str, Any]:
    return {"calls": 0, "failed": 0, "retries": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
            "latency_s": 0.0, "prompt_chars": 0, "max_prompt_chars": 0} if rows is None else {
        "calls": int(rows.calls), "failed": int(rows.failed or 0), "retries": int(rows.retries or 0),
        "tokens_in": int(rows.tokens_in or 0), "tokens_out": int(rows.tokens_out or 0),
        "cost_usd": float(rows.cost_usd or 0.0), "latency_s": float(rows.latency_s or 0.0),
        "prompt_chars": int(rows.prompt_chars or 0), "max_prompt_chars": int(rows.max_prompt_chars or 0)}


def _add_up(total: dict[str, Any], part: dict[str, Any]) -> None:
    for k, v in part.items():
        total[k] = max(total[k], v) if k.startswith("max_") else total[k] + v


class LLMRecords:
    """``Store`` methods for LLM calls and agent steps (mixed into ``Store``)."""

    url: str
    _session: Callable[[], AbstractContextManager[Session]]
    _no_run: Callable[[str], StoreError]

    def _need_run(self, s: Session, run: str) -> None:
        if s.get(RunRow, run) is None:
            raise self._no_run(run)

    # --- LLM calls ---------------------------------------------------------------------------

    def add_llm_call(self, run: str, call: LLMCall) -> bool:
        """Record ``call`` as spent in ``run``; False (nothing written) if its id is already stored,
        so replaying a resumed step does not count a call twice."""
        row = _call_row(run, call)
        try:
            with self._session() as s:
                self._need_run(s, run)
                if s.scalar(select(LLMCallRow.seq).where(LLMCallRow.id == call.id)) is not None:
                    return False
                s.add(row)
        except IntegrityError:
            return False  # a concurrent writer stored the same call first
        return True

    def llm_calls(self, run: str, *, candidate_id: Optional[str] = None,
                  purpose: Optional[str] = None) -> list[LLMCall]:
        """The run's calls in the order they were made, optionally for one candidate or purpose."""
        q = select(LLMCallRow).where(LLMCallRow.run_name == run)
        if candidate_id is not None:
            q = q.where(LLMCallRow.candidate_id == candidate_id)
        if purpose is not None:
            q = q.where(LLMCallRow.purpose == purpose)
        with self._session() as s:
            return [_call_value(r) for r in s.scalars(q.order_by(LLMCallRow.created_at, LLMCallRow.seq))]

    def llm_usage(self, run: str) -> dict[str, Any]:
        """Totals of the run's calls (calls, failed, retries, tokens_in, tokens_out, cost_usd,
        latency_s, prompt_chars, max_prompt_chars), and the same per ``by_model``
        (``provider:model``) and ``by_purpose``."""
        by_model = {f"{provider}:{model}": sums for (provider, model), sums in
                    self._grouped(run, LLMCallRow.provider, LLMCallRow.model)}
        by_purpose = {purpose: sums for (purpose,), sums in self._grouped(run, LLMCallRow.purpose)}
        total = _sums(None)
        for part in by_model.values():
            _add_up(total, part)
        return total | {"by_model": by_model, "by_purpose": by_purpose}

    def _grouped(self, run: str, *keys: Any) -> Iterator[tuple[tuple, dict[str, Any]]]:
        c = LLMCallRow
        q = (select(*keys, func.count().label("calls"),
                    func.sum(case((c.error.is_not(None), 1), else_=0)).label("failed"),
                    func.sum(c.retries).label("retries"), func.sum(c.tokens_in).label("tokens_in"),
                    func.sum(c.tokens_out).label("tokens_out"), func.sum(c.cost_usd).label("cost_usd"),
                    func.sum(c.latency_s).label("latency_s"), func.sum(c.prompt_chars).label("prompt_chars"),
                    func.max(c.prompt_chars).label("max_prompt_chars"))
             .where(c.run_name == run).group_by(*keys).order_by(*keys))
        with self._session() as s:
            rows = s.execute(q).all()
        for r in rows:
            yield tuple(r[: len(keys)]), _sums(r)

    # --- agent trajectories ------------------------------------------------------------------

    def add_agent_steps(self, run: str, agent: str, steps: Sequence[dict[str, Any]]) -> list[int]:
        """Record steps of ``agent`` (e.g. ``"fast_path"``) in ``run``; returns their step indices.

        A step dict holds ``node`` (required), ``iteration``, ``summary``, ``status`` (of the
        evaluation it ran, if any), ``reason``, ``candidate_id``, ``created_at``; other keys are
        kept as details. With a ``step`` index an existing step is replaced (re-recording a
        resumed trajectory is idempotent); without one the step is appended.
        """
        fields = [(s.get("step"), _step_fields(s)) for s in steps]
        indices: list[int] = []
        try:
            with self._session() as s:
                self._need_run(s, run)
                last = s.scalar(select(func.max(AgentStepRow.step))
                                .where(AgentStepRow.run_name == run, AgentStepRow.agent == agent))
                top = -1 if last is None else last  # the highest index stored so far
                for index, values in fields:
                    index = top + 1 if index is None else int(index)
                    indices.append(self._put_step(s, run, agent, index, values))
                    top = max(top, index)
        except IntegrityError as e:
            raise StoreError(f"two writers recorded step {agent} of run {run!r} at once",
                             "record one agent's trajectory from one place, then retry") from e
        return indices

    @staticmethod
    def _put_step(s: Session, run: str, agent: str, index: int, values: dict[str, Any]) -> int:
        row = s.scalar(select(AgentStepRow).where(AgentStepRow.run_name == run, AgentStepRow.agent == agent,
                                                  AgentStepRow.step == index))
        if row is None:
            s.add(AgentStepRow(run_name=run, agent=agent, step=index, **values))
            s.flush()  # the next step's lookup must see this one
        else:
            for k, v in values.items():
                setattr(row, k, v)
        return index

    def agent_steps(self, run: str, agent: Optional[str] = None) -> list[dict[str, Any]]:
        """The run's steps (of one agent, or all by agent), in step order."""
        q = select(AgentStepRow).where(AgentStepRow.run_name == run)
        if agent is not None:
            q = q.where(AgentStepRow.agent == agent)
        with self._session() as s:
            return [_step_value(r) for r in s.scalars(q.order_by(AgentStepRow.agent, AgentStepRow.step))]
