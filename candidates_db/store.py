"""``Store``: the candidates database behind ``cuco evolve``, the CLI and the web leaderboard.

Every method opens one short session and returns ``design_space`` values, never ORM rows, so
callers cannot hold a row across transactions or trigger lazy loads on a closed session.
A filesystem path means a SQLite file (WAL mode, so the CLI can read while a search writes);
a URL is used as is (PostgreSQL for runs spread over machines); ``engine`` makes the engines.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional, Union

from sqlalchemy import Engine, Select, case, exists, func, select
from sqlalchemy.exc import DatabaseError, IntegrityError
from sqlalchemy.orm import Session, aliased, sessionmaker

from candidates_db.engine import (BUSY_TIMEOUT_S, create_read_only_engine, create_store_engine, url_for, where,
                                  write_lock)
from candidates_db.leaderboard_query import STAGE_DEPTH, LeaderboardQueries
from candidates_db.llm_store import LLMRecords
from candidates_db.migrations import head_revision, migrate, stored_revision, stored_version
from candidates_db.schema import SCHEMA_VERSION, CandidateRow, EvaluationRow, RunRow, json_safe, utcnow
from candidates_db.values import candidate_row, candidate_value, evaluation_row, evaluation_value, run_value
from design_space.candidate import Candidate
from design_space.errors import StoreError
from design_space.evaluation import CUT_BY_MAX_WALL, Evaluation, Status
from design_space.run import RunInfo, RunStatus

MIN_PREFIX = 4
LIST_IDS_FIX = "run `cuco leaderboard <run>` to list candidate ids"


def _first_line(e: BaseException) -> str:
    text = str(getattr(e, "orig", None) or e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _check_readable(engine: Engine) -> None:
    """What a read-only open needs, since it cannot migrate: a cuco database of this schema."""
    with engine.connect() as conn:
        version = stored_version(conn)
        revision = stored_revision(conn) if version == SCHEMA_VERSION else None
    shown = where(engine.url)
    if version is None:
        raise StoreError(f"{shown} is not a cuco candidates database (it has no schema version)",
                         "pass the cuco.db of a run or the URL `cuco evolve --db` wrote to")
    if version != SCHEMA_VERSION:
        newer = version > SCHEMA_VERSION
        raise StoreError(f"candidates database {shown} has schema version {version}, this cuco reads {SCHEMA_VERSION}",
                         "upgrade cuco (pip install -U cuco-kernels) to read it" if newer else
                         "open it once with a writable cuco command (e.g. `cuco leaderboard`) to upgrade it")
    if revision != head_revision():
        raise StoreError(f"candidates database {shown} is at schema revision {revision}, this cuco reads "
                         f"{head_revision()}",
                         "open it once with a writable cuco command (e.g. `cuco leaderboard`) to upgrade it, or "
                         "upgrade cuco (pip install -U cuco-kernels) if another cuco wrote it")


class Store(LeaderboardQueries, LLMRecords):
    """The candidates database. Open with ``Store.open(path_or_url)``; use as a context manager.
    LLM calls and agent steps: see ``llm_store.LLMRecords``."""

    def __init__(self, engine: Engine, *, read_only: bool = False, url: Optional[str] = None) -> None:
        self._engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._closed = False
        self.read_only = read_only
        self.url = url or where(engine.url)

    @classmethod
    def open(cls, url_or_path: Union[str, Path], *, read_only: bool = False) -> "Store":
        """Open (creating or upgrading as needed) the database at a file path or URL.

        ``read_only``: open an existing database of the current schema for reading only (a
        SQLite file with ``mode=ro``, a PostgreSQL session whose transactions are read-only);
        nothing is created, migrated or switched to WAL, and any write raises ``StoreError``."""
        url = url_for(url_or_path, create_folder=not read_only)
        engine = create_read_only_engine(url) if read_only else create_store_engine(url)
        try:
            if read_only:
                _check_readable(engine)
            else:
                migrate(engine)
        except StoreError:
            engine.dispose()
            raise
        except DatabaseError as e:
            engine.dispose()
            full = "full" in _first_line(e).lower()
            fix = ("free some space on its disk, or use another path (--run-dir, --db)" if full else
                   "check that the file is a cuco candidates database and its folder is writable"
                   if url.get_backend_name() == "sqlite"
                   else "check that the server is running and reachable and the URL's user, password and database")
            raise StoreError(f"cannot open the candidates database {where(url)}: {_first_line(e)}", fix) from e
        return cls(engine, read_only=read_only, url=where(url))

    def close(self) -> None:
        self._closed = True
        self._engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """One transaction, committed on exit; a lost connection or a stuck lock is a StoreError."""
        if self._closed:
            raise StoreError(f"the candidates database {self.url} is closed", "open it again with Store.open")
        try:
            with self._sessions.begin() as s:
                yield s
        except (IntegrityError, StoreError):
            raise  # the caller decides what a constraint violation means
        except DatabaseError as e:
            if self.read_only:
                raise StoreError(f"candidates database {self.url} is open read-only: {_first_line(e)}",
                                 "open it without read_only to change it") from e
            raise StoreError(f"candidates database {self.url} failed: {_first_line(e)}",
                             "check the database is reachable (and, for SQLite, that no other process "
                             f"holds a write lock for over {BUSY_TIMEOUT_S} s), then retry") from e

    # --- runs --------------------------------------------------------------------------------

    def create_run(self, info: RunInfo) -> RunInfo:
        """Record a new run; StoreError if the name is taken. Returns the run as stored."""
        data = json_safe(info.model_dump(mode="json"))
        row = RunRow(name=info.name, spec_name=info.spec_name, pattern=info.pattern, spec_hash=info.spec_hash,
                     spec_json=info.spec_json, config=data["config"], status=info.status.value,
                     note=info.note, created_at=info.created_at, updated_at=info.updated_at)
        taken = StoreError(f"a run named {info.name!r} already exists in {self.url}",
                           "resume that run, or pick another run name")
        try:
            with self._session() as s:
                if s.get(RunRow, info.name) is not None:
                    raise taken
                s.add(row)
        except IntegrityError as e:  # another process created it between our check and insert
            raise taken from e
        return self._require_run(info.name)

    def get_run(self, name: str) -> Optional[RunInfo]:
        with self._session() as s:
            row = s.get(RunRow, name)
            return run_value(row) if row is not None else None

    def list_runs(self) -> list[RunInfo]:
        with self._session() as s:
            return [run_value(r) for r in s.scalars(select(RunRow).order_by(RunRow.created_at, RunRow.name))]

    def update_run(self, name: str, *, status: Optional[Union[RunStatus, str]] = None,
                   note: Optional[str] = None, config: Optional[dict[str, Any]] = None) -> RunInfo:
        """Change what is given (``None`` leaves a field alone) and stamp ``updated_at``."""
        with self._session() as s:
            row = s.get(RunRow, name)
            if row is None:
                raise self._no_run(name)
            if status is not None:
                row.status = RunStatus(status).value
            if note is not None:
                row.note = note
            if config is not None:
                row.config = json_safe(dict(config))
            row.updated_at = utcnow()
        return self._require_run(name)

    def _require_run(self, name: str) -> RunInfo:
        run = self.get_run(name)
        if run is None:
            raise self._no_run(name)
        return run

    def _no_run(self, name: str) -> StoreError:
        return StoreError(f"no run named {name!r} in {self.url}", "pass an existing run (`cuco leaderboard <run-dir>` shows the latest run of a folder)")

    # --- candidates --------------------------------------------------------------------------

    def add_candidate(self, run: str, c: Candidate) -> bool:
        """Store ``c`` in ``run``; False (and nothing written) if the run already has its source."""
        return self.add_candidates(run, [c])[0]

    def add_candidates(self, run: str, cands: list[Candidate]) -> list[bool]:
        """Store ``cands`` in ``run`` in ONE transaction (all or none: a process killed meanwhile
        leaves no part of a proposal behind), in order; per candidate False where the run already
        has its source. Writers are serialised, so sequence numbers stay unique across processes."""
        rows = [candidate_row(run, c) for c in cands]
        try:
            with self._session() as s:
                write_lock(s.connection())
                if s.get(RunRow, run) is None:
                    raise self._no_run(run)
                seq = s.scalar(select(func.max(CandidateRow.seq))) or 0
                added, seen = [], set()
                for row in rows:
                    fresh = row.content_hash not in seen and not self._hash_exists(s, run, row.content_hash)
                    seen.add(row.content_hash)
                    if fresh:
                        seq += 1
                        row.seq = seq
                        s.add(row)
                    added.append(fresh)
        except IntegrityError as e:
            raise StoreError(f"a candidate id of {[c.id for c in cands]} is already stored with a different source",
                             "give the new candidates fresh ids (the default)") from e
        return added

    @staticmethod
    def _hash_exists(s: Session, run: str, h: str) -> bool:
        q = select(CandidateRow.id).where(CandidateRow.run_name == run, CandidateRow.content_hash == h)
        return s.scalar(q.limit(1)) is not None

    def has_content_hash(self, run: str, h: str) -> bool:
        with self._session() as s:
            return self._hash_exists(s, run, h)

    def get_candidate(self, id_or_prefix: str) -> Candidate:
        """By full id, or by a unique prefix of at least four characters (ids are case-sensitive)."""
        key = id_or_prefix.strip()
        with self._session() as s:
            row = s.get(CandidateRow, key)
            if row is not None:
                return candidate_value(row)
            if len(key) < MIN_PREFIX:
                raise StoreError(f"candidate id prefix {key!r} is too short and matches no full id",
                                 f"give at least {MIN_PREFIX} characters of the id; {LIST_IDS_FIX}")
            q = select(CandidateRow).where(func.substr(CandidateRow.id, 1, len(key)) == key)
            rows = s.scalars(q.order_by(CandidateRow.id).limit(6)).all()
            if not rows:
                raise StoreError(f"no candidate id starts with {key!r} in {self.url}", LIST_IDS_FIX)
            if len(rows) > 1:
                shown = ", ".join(r.id for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
                raise StoreError(f"candidate id prefix {key!r} is ambiguous: it matches {shown}",
                                 f"give more characters of the id; {LIST_IDS_FIX}")
            return candidate_value(rows[0])

    def candidates(self, run: str, *, generation: Optional[int] = None) -> list[Candidate]:
        """The run's candidates by generation, then in the order they were added."""
        q = select(CandidateRow).where(CandidateRow.run_name == run)
        if generation is not None:
            q = q.where(CandidateRow.generation == generation)
        with self._session() as s:
            return [candidate_value(r) for r in s.scalars(q.order_by(CandidateRow.generation, CandidateRow.seq))]

    def unevaluated(self, run: str) -> list[Candidate]:
        """Candidates with no evaluation yet (what a resumed run must evaluate first)."""
        evaluated = exists().where(EvaluationRow.candidate_id == CandidateRow.id)
        q = select(CandidateRow).where(CandidateRow.run_name == run, ~evaluated)
        with self._session() as s:
            return [candidate_value(r) for r in s.scalars(q.order_by(CandidateRow.generation, CandidateRow.seq))]

    def cut_short(self, run: str) -> list[Candidate]:
        """Candidates whose latest evaluation was cut by the run's own end (``--max-wall``: status
        ``timeout`` with the flag ``cut_by_max_wall``), not by anything they did: a resumed run
        evaluates them again."""
        q, ev = self._with_latest(run)
        q = q.where(ev.status == Status.TIMEOUT.value).order_by(CandidateRow.generation, CandidateRow.seq)
        with self._session() as s:
            return [candidate_value(c) for c, e in s.execute(q).all()
                    if CUT_BY_MAX_WALL in (e.payload or {}).get("flags", ())]

    def max_generation(self, run: str) -> int:
        with self._session() as s:
            value = s.scalar(select(func.max(CandidateRow.generation)).where(CandidateRow.run_name == run))
        return -1 if value is None else int(value)

    def run_of(self, candidate_id: str) -> str:
        with self._session() as s:
            run = s.scalar(select(CandidateRow.run_name).where(CandidateRow.id == candidate_id))
        if run is None:
            raise StoreError(f"no candidate {candidate_id!r} in {self.url}", LIST_IDS_FIX)
        return run

    # --- evaluations -------------------------------------------------------------------------

    def add_evaluation(self, e: Evaluation) -> None:
        """Append ``e`` to the candidate's history; the latest one is the candidate's evaluation."""
        row = evaluation_row(e)
        with self._session() as s:
            if s.get(CandidateRow, e.candidate_id) is None:
                raise StoreError(f"cannot store an evaluation of unknown candidate {e.candidate_id!r}",
                                 "add the candidate (Store.add_candidate) before its evaluation")
            s.add(row)

    def evaluation(self, candidate_id: str) -> Optional[Evaluation]:
        q = select(EvaluationRow).where(EvaluationRow.candidate_id == candidate_id)
        with self._session() as s:
            return evaluation_value(s.scalars(q.order_by(EvaluationRow.id.desc()).limit(1)).first())

    def _with_latest(self, run: str) -> tuple[Select[Any], Any]:
        """Select (candidate, its latest evaluation or NULLs) for every candidate of ``run``."""
        latest = (select(EvaluationRow.candidate_id, func.max(EvaluationRow.id).label("eid"))
                  .join(CandidateRow, CandidateRow.id == EvaluationRow.candidate_id)
                  .where(CandidateRow.run_name == run)
                  .group_by(EvaluationRow.candidate_id).subquery())
        ev = aliased(EvaluationRow)
        q = (select(CandidateRow, ev).where(CandidateRow.run_name == run)
             .outerjoin(latest, latest.c.candidate_id == CandidateRow.id)
             .outerjoin(ev, ev.id == latest.c.eid))
        return q, ev

    def leaderboard(self, run: str, *, limit: Optional[int] = None) -> list[tuple[Candidate, Optional[Evaluation]]]:
        """``ok`` by fitness (best first), then failures by how far they got, then unevaluated."""
        q, ev = self._with_latest(run)
        group = case((ev.status == Status.OK.value, 0), (ev.id.is_not(None), 1), else_=2)
        no_fitness = case((ev.fitness.is_(None), 1), else_=0)  # NULLS LAST on every backend
        depth = case(STAGE_DEPTH, value=ev.stage, else_=-1)
        q = q.order_by(group, no_fitness, ev.fitness.desc(), depth.desc(), CandidateRow.generation, CandidateRow.seq)
        if limit is not None:
            q = q.limit(limit)
        with self._session() as s:
            return [(candidate_value(c), evaluation_value(e)) for c, e in s.execute(q).all()]

    def status_counts(self, run: str) -> dict[str, int]:
        """Candidates per latest status: every ``Status`` value (zeros included) plus ``unevaluated``."""
        latest_q, ev = self._with_latest(run)
        q = latest_q.with_only_columns(ev.status, func.count()).group_by(ev.status)
        counts = {s.value: 0 for s in Status} | {"unevaluated": 0}
        with self._session() as s:
            for status, n in s.execute(q).all():
                counts[status if status is not None else "unevaluated"] = n
        return counts

    def evaluation_counts(self, run: str) -> dict[str, int]:
        """How many evaluations each of ``run``'s candidates has stored (candidates without one are absent)."""
        q = (select(EvaluationRow.candidate_id, func.count()).join(CandidateRow, CandidateRow.id == EvaluationRow.candidate_id)
             .where(CandidateRow.run_name == run).group_by(EvaluationRow.candidate_id))
        with self._session() as s:
            return {cid: int(n) for cid, n in s.execute(q).all()}

    def best(self, run: str) -> Optional[tuple[Candidate, Evaluation]]:
        """The fittest ``ok`` candidate, or None when nothing in the run is correct yet."""
        top = self.leaderboard(run, limit=1)
        if not top or top[0][1] is None or top[0][1].status is not Status.OK:
            return None
        return top[0][0], top[0][1]
