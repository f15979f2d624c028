"""The web leaderboard's queries, as part of ``Store``: one page of a run's candidates, filtered and
sorted in SQL, with the number of matching rows and the values each filter can take; and a run's
summary (best score, counts, LLM spend, wall time, hardware).

Filters and sorts use real columns, and only the rows on the page have their source loaded and
their evaluation payload (JSON) parsed, so a page of a 10,000-candidate run costs about what a page
of a 100-candidate run does. The one exception is the SOL sort: the SOL fraction lives only in the
payload's timings, so that sort reads the timings of every matching row with a timing.

``LeaderboardQueries`` is a mixin of ``store.Store``, like ``llm_store.LLMRecords``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Callable, Optional

from sqlalchemy import Engine, Select, Text, and_, case, func, select
from sqlalchemy.orm import Session, aliased

from candidates_db.schema import CandidateRow, EvaluationRow, LLMCallRow, RunRow
from candidates_db.values import evaluation_value
from design_space.candidate import Origin
from design_space.errors import ConfigError, StoreError
from design_space.evaluation import Stage, Status

# How far a failed candidate got, for the leaderboard. ``simulate`` replaces verify/bench on a
# machine without a GPU, so it ranks with verify: both passed CPU emulation and nothing more.
STAGE_DEPTH: dict[str, int] = {
    Stage.GUARD.value: 0, Stage.BUILD.value: 1, Stage.EMULATE.value: 2, Stage.VERIFY.value: 3,
    Stage.SIMULATE.value: 3, Stage.BENCH.value: 4, Stage.SCORE.value: 5,
}
UNEVALUATED = "unevaluated"
_NODE_KEYS = ("id", "parent_ids", "generation", "island", "origin_kind", "status", "stage", "fitness")  # the status filter's name for a candidate without an evaluation
SORTS = ("speedup", "sol", "generation", "status", "created", "island")
FILTERS = ("status", "backend", "placement", "island", "generation", "origin", "timing")
ORDERS = ("asc", "desc")
EV = "ev"  # the alias of the latest evaluation
_EV = aliased(EvaluationRow, name=EV)
_NEWEST = aliased(EvaluationRow, name="newest")



def _nulls_last(expr: Any) -> Any:
    return case((expr.is_(None), 1), else_=0)  # NULLS LAST on every backend, in either direction


def _point_field(dialect: str, index: int) -> Any:
    """Field ``index`` (1 = backend, 2 = placement) of ``point_key`` (``backend/placement/...``)."""
    key = CandidateRow.point_key
    if dialect == "postgresql":
        return func.split_part(key, "/", index)
    head = func.substr(key, 1, func.instr(key, "/") - 1)
    if index == 1:
        return head
    rest = func.substr(key, func.instr(key, "/") + 1)
    return func.substr(rest, 1, func.instr(rest, "/") - 1)


def _check_query(filters: Mapping[str, Any], sort: str, order: str) -> None:
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise ConfigError(f"unknown leaderboard filter(s) {', '.join(unknown)}", f"filter on {', '.join(FILTERS)}")
    if sort not in SORTS:
        raise ConfigError(f"unknown leaderboard sort {sort!r}", f"sort by one of {', '.join(SORTS)}")
    if order not in ORDERS:
        raise ConfigError(f"unknown sort order {order!r}", "order asc or desc")


def _given(filters: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    return {k: v for k, v in (filters or {}).items() if v is not None and v != ""}  # None, "": no filter


class LeaderboardQueries:
    """``Store`` methods behind the web leaderboard (mixed into ``Store``)."""

    url: str
    _engine: Engine
    _session: Callable[[], AbstractContextManager[Session]]
    _no_run: Callable[[str], StoreError]
    llm_usage: Callable[[str], dict[str, Any]]

    @staticmethod
    def _latest(run: str, *columns: Any) -> Select[Any]:
        """SELECT ``columns`` FROM the run's candidates LEFT JOIN (as ``_EV``) each one's latest
        evaluation: the one with no newer evaluation of the same candidate. Written as a join on
        candidate_id (not ``id = max(id)``) so both lookups stay inside ``ix_evaluations_latest``."""
        newer = (select(_NEWEST.id).where(_NEWEST.candidate_id == CandidateRow.id, _NEWEST.id > _EV.id)
                 .correlate(CandidateRow, _EV).exists())
        return (select(*columns).select_from(CandidateRow)
                .outerjoin(_EV, and_(_EV.candidate_id == CandidateRow.id, ~newer))
                .where(CandidateRow.run_name == run))

    def _filtered(self, q: Select[Any], filters: Mapping[str, Any]) -> Select[Any]:
        ev = _EV
        dialect = self._engine.dialect.name
        for name, value in filters.items():
            if value is None or value == "":
                continue
            # coalesce() on the evaluation's columns keeps the planner on the candidates' index
            # (a bare ``ev.status = ?`` makes SQLite start from every evaluation with that status).
            if name == "status":
                q = q.where(func.coalesce(ev.status, UNEVALUATED) == value)
            elif name in ("backend", "placement"):
                q = q.where(_point_field(dialect, 1 if name == "backend" else 2) == value)
            elif name == "island":
                q = q.where(CandidateRow.island == int(value))
            elif name == "generation":
                q = q.where(CandidateRow.generation == int(value))
            elif name == "origin":
                q = q.where(CandidateRow.origin_kind == value)
            elif name == "timing":
                q = q.where(func.coalesce(ev.timing_source, "") == value)
        return q

    def _ordered(self, q: Select[Any], sort: str, order: str) -> Select[Any]:
        c, ev, desc = CandidateRow, _EV, order == "desc"
        best_first = (_nulls_last(ev.fitness), ev.fitness.desc())

        def directed(expr: Any) -> Any:
            return expr.desc() if desc else expr.asc()

        if sort == "speedup":  # as Store.leaderboard: ok by score, failures by how far they got, unevaluated
            group = case((ev.status == Status.OK.value, 0), (ev.id.is_not(None), 1), else_=2)
            depth = case(STAGE_DEPTH, value=ev.stage, else_=-1)
            keys = (group, _nulls_last(ev.fitness), directed(ev.fitness), depth.desc(), c.generation)
        elif sort == "sol":
            keys = (_nulls_last(ev.sol), directed(ev.sol))  # the indexed column (schema 3)
        elif sort == "status":
            keys = (directed(func.coalesce(ev.status, UNEVALUATED)), *best_first)
        elif sort == "created":
            keys = (directed(c.seq),)
        else:  # generation, island: best first within each
            keys = (directed(c.generation if sort == "generation" else c.island), *best_first)
        return q.order_by(*keys, c.seq)  # seq is unique: the same query always pages the same way

    def leaderboard_page(self, run: str, *, filters: Optional[Mapping[str, Any]] = None, sort: str = "speedup",
                         order: str = "desc", offset: int = 0, limit: int = 50,
                         with_total: bool = True) -> dict[str, Any]:
        """One page of ``run``'s leaderboard: ``{"total": rows matching the filters, "entries": [...]}``,
        each entry ``{"id", "parent_ids", "generation", "island", "origin" (Origin), "point_key"
        (declared), "created_at", "evaluation" (the latest Evaluation or None)}`` (no source: a page
        does not show it).

        ``filters`` (any of ``FILTERS``; None or "" = no filter): ``status`` of the latest evaluation
        (or ``"unevaluated"``), ``backend`` and ``placement`` of the declared design point, ``island``,
        ``generation``, ``origin`` kind, ``timing`` source (measured|simulated). ``sort`` is one of
        ``SORTS``; rows without the sorted value come last in either ``order``. ``with_total=False``
        leaves ``total`` None (a caller that keeps ``leaderboard_count`` saves a scan)."""
        filters = _given(filters)
        _check_query(filters, sort, order)
        page = self._filtered(self._latest(run, CandidateRow.id, _EV.id), filters)
        page = self._ordered(page, sort, order).offset(max(offset, 0)).limit(max(limit, 0))
        with self._session() as s:
            self._require(s, run)
            total = int(s.scalar(self._count(run, filters)) or 0) if with_total else None
            entries = self._entries(s, s.execute(page).all())
        return {"total": total, "entries": entries}

    def leaderboard_count(self, run: str, filters: Optional[Mapping[str, Any]] = None) -> int:
        """How many of ``run``'s candidates match ``filters`` (as ``leaderboard_page`` takes them)."""
        filters = _given(filters)
        _check_query(filters, "speedup", "desc")
        with self._session() as s:
            self._require(s, run)
            return int(s.scalar(self._count(run, filters)) or 0)

    def _count(self, run: str, filters: Mapping[str, Any]) -> Select[Any]:
        if "status" in filters or "timing" in filters:
            return self._filtered(self._latest(run, func.count()), filters)
        # No filter on the evaluation: count candidates alone, without the join.
        return self._filtered(select(func.count()).where(CandidateRow.run_name == run), filters)

    @staticmethod
    def _entries(s: Session, ids: list[Any]) -> list[dict[str, Any]]:
        """The page's candidates and evaluations, loaded by id in the page's order."""
        c = CandidateRow
        cids, eids = [cid for cid, _ in ids], [eid for _, eid in ids if eid is not None]
        rows = {r.id: r for r in s.execute(select(c.id, c.parent_ids, c.generation, c.island, c.origin_kind,
                                                  c.origin_model, c.origin_patch_type, c.point_key, c.created_at)
                                           .where(c.id.in_(cids)))} if cids else {}
        evs = {r.id: r for r in s.scalars(select(EvaluationRow).where(EvaluationRow.id.in_(eids)))} if eids else {}
        return [{"id": cid, "parent_ids": tuple(rows[cid].parent_ids or ()), "generation": rows[cid].generation,
                 "island": rows[cid].island, "point_key": rows[cid].point_key, "created_at": rows[cid].created_at,
                 "origin": Origin(kind=rows[cid].origin_kind, model=rows[cid].origin_model,
                                  patch_type=rows[cid].origin_patch_type),
                 "evaluation": evaluation_value(evs.get(eid))} for cid, eid in ids]

    def _require(self, s: Session, run: str) -> None:
        if s.get(RunRow, run) is None:
            raise self._no_run(run)

    def _latest_counts(self, s: Session, run: str) -> list[Any]:
        """(status or "unevaluated", timing source, candidates) over the run's latest evaluations."""
        status = func.coalesce(_EV.status, UNEVALUATED)
        return s.execute(self._latest(run, status, _EV.timing_source, func.count())
                         .group_by(status, _EV.timing_source)).all()

    def leaderboard_facets(self, run: str) -> dict[str, list[Any]]:
        """The values each filter can take in ``run`` (sorted), for the filter selects."""
        c = CandidateRow
        with self._session() as s:
            self._require(s, run)
            latest = self._latest_counts(s, run)
            keys = s.scalars(select(c.point_key).where(c.run_name == run).distinct()).all()
            values = {col.key: sorted(s.scalars(select(col).where(c.run_name == run).distinct()).all())
                      for col in (c.island, c.generation, c.origin_kind)}
        fields = [k.split("/") for k in keys if k]
        return {"status": sorted({st for st, _, _ in latest}),
                "backend": sorted({f[0] for f in fields}), "placement": sorted({f[1] for f in fields if len(f) > 1}),
                "island": values["island"], "generation": values["generation"], "origin": values["origin_kind"],
                "timing": sorted({t for _, t, _ in latest if t})}

    def _nodes(self, s: Session, run: str, *where: Any) -> list[dict[str, Any]]:
        c = CandidateRow
        q = self._latest(run, c.id, c.parent_ids, c.generation, c.island, c.origin_kind,
                         func.coalesce(_EV.status, UNEVALUATED), _EV.stage, _EV.fitness).where(*where).order_by(c.seq)
        return [dict(zip(_NODE_KEYS, r)) | {"parent_ids": list(r[1] or ())} for r in s.execute(q).all()]

    def lineage(self, run: str) -> list[dict[str, Any]]:
        """Every candidate of ``run`` as a node of its family tree, in the order they were added:
        ``id``, ``parent_ids``, ``generation``, ``island``, ``origin_kind``, and its latest evaluation's
        ``status`` (or "unevaluated"), ``stage`` and ``fitness`` (the score of an ok candidate)."""
        with self._session() as s:
            self._require(s, run)
            return self._nodes(s, run)

    def family(self, run: str, candidate_id: str, *, max_ancestors: int = 200) -> dict[str, list[dict[str, Any]]]:
        """``ancestors`` (parents, their parents, ..., nearest first, at most ``max_ancestors``) and
        ``children`` of one candidate, as ``lineage`` nodes; without reading the whole run."""
        c = CandidateRow
        with self._session() as s:
            # The JSON text holds each parent id in quotes: a cheap filter, confirmed below.
            maybe = self._nodes(s, run, func.cast(c.parent_ids, Text).contains(f'"{candidate_id}"', autoescape=True))
            children = [n for n in maybe if candidate_id in n["parent_ids"]]
            (me,) = self._nodes(s, run, c.id == candidate_id) or [{"parent_ids": []}]
            ancestors: list[dict[str, Any]] = []
            seen, wanted = {candidate_id}, [p for p in me["parent_ids"] if p != candidate_id]
            while wanted and len(ancestors) < max_ancestors:
                seen |= set(wanted)
                level = self._nodes(s, run, c.id.in_(wanted))
                ancestors += level[: max_ancestors - len(ancestors)]
                wanted = list(dict.fromkeys(p for n in level for p in n["parent_ids"] if p not in seen))
        return {"ancestors": ancestors, "children": children}

    def content_version(self) -> tuple[int, int, int]:
        """Changes whenever a candidate, an evaluation or an LLM call is added (rows are only ever
        appended), so a reader can keep what it computed from them until this changes."""
        q = select(*(select(func.max(col)).scalar_subquery() for col in (CandidateRow.seq, EvaluationRow.id, LLMCallRow.seq)))
        with self._session() as s:
            row = s.execute(q).one()
        return (row[0] or 0, row[1] or 0, row[2] or 0)

    def run_stats(self, run: str) -> dict[str, Any]:
        """``candidates`` (count), ``status_counts`` (every ``Status`` value and ``unevaluated``), the
        ``best`` ok candidate (id, generation, speedup = score, sol, timing_source) or None, and the
        ``llm`` spend (calls, failed, tokens_in, tokens_out, cost_usd)."""
        counts = {st.value: 0 for st in Status} | {UNEVALUATED: 0}
        with self._session() as s:
            self._require(s, run)
            for status, _, n in self._latest_counts(s, run):
                counts[status] = counts.get(status, 0) + n
            best = self._best_entry(s, run)
        usage = self.llm_usage(run)
        return {"candidates": sum(counts.values()), "status_counts": counts, "best": best,
                "llm": {k: usage[k] for k in ("calls", "failed", "tokens_in", "tokens_out", "cost_usd")}}

    def run_summary(self, run: str) -> dict[str, Any]:
        """What the runs list shows of ``run``: its record (without its config, which holds secrets
        such as the shape seed), ``hardware`` (the spec's), ``wall_s`` from creation to the last
        update, and ``run_stats``."""
        with self._session() as s:
            row = s.get(RunRow, run)
            if row is None:
                raise self._no_run(run)
            info = {"name": row.name, "spec_name": row.spec_name, "pattern": row.pattern, "status": row.status,
                    "note": row.note, "created_at": row.created_at, "updated_at": row.updated_at,
                    "hardware": _hardware(row.spec_json)}
        wall = (info["updated_at"] - info["created_at"]).total_seconds()
        return info | {"wall_s": max(wall, 0.0)} | self.run_stats(run)

    def _best_entry(self, s: Session, run: str) -> Optional[dict[str, Any]]:
        q = (self._latest(run, CandidateRow.id, CandidateRow.generation, _EV.id)
             .where(func.coalesce(_EV.status, UNEVALUATED) == Status.OK.value, _EV.fitness.is_not(None))
             .order_by(_EV.fitness.desc(), CandidateRow.generation, CandidateRow.seq).limit(1))
        top = s.execute(q).first()
        if top is None:
            return None
        evaluation = evaluation_value(s.get(EvaluationRow, top[2]))
        source = evaluation.timing_source
        return {"id": top[0], "generation": top[1], "speedup": evaluation.speedup, "sol": evaluation.sol_fraction,
                "timing_source": source.value if source else None}


def _hardware(spec_json: str) -> Optional[str]:
    try:
        value = json.loads(spec_json).get("hardware")
    except (ValueError, AttributeError):
        return None  # a spec we cannot read names no hardware; the run is still listed
    return value if isinstance(value, str) else None
