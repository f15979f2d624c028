"""``cuco leaderboard`` and ``cuco show``: read what a run stored."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from candidates_db import Store
from design_space import KernelSpec, StoreError
from cuco.report import candidate_report, leaderboard_rows, leaderboard_table, render_candidate, to_json


def _open(run: Optional[str], db: Optional[str]) -> tuple[Store, Optional[str]]:
    """(store, run name or None) from a run folder, a database URL, or both."""
    if db:
        return Store.open(db), run
    if run is None:
        raise StoreError("no run given", "pass --run RUN_DIR or --db URL")
    path = Path(run)
    if not (path / "cuco.db").is_file():
        raise StoreError(f"no run database at {path / 'cuco.db'}",
                         "pass the folder `cuco evolve` printed (default runs/<spec name>) or --db URL")
    return Store.open(path / "cuco.db"), None


def _single_run(store: Store, name: Optional[str]):
    runs = store.list_runs()
    if name is not None:
        run = store.get_run(name)
        if run is None:
            raise StoreError(f"no run named {name!r}", f"use one of: {', '.join(r.name for r in runs) or '(none)'}")
        return run
    if not runs:
        raise StoreError("the database holds no run yet", "start one with `cuco evolve <spec>`")
    return max(runs, key=lambda r: r.updated_at)


def leaderboard_command(run: str, *, db: Optional[str], limit: int, json_out: bool, console) -> None:
    store, name = _open(None if db else run, db)
    with store:
        info = _single_run(store, name if db is None else run)
        spec = KernelSpec.model_validate_json(info.spec_json)
        rows = leaderboard_rows(store.leaderboard(info.name, limit=limit), spec)
        counts = store.status_counts(info.name)
    if json_out:
        print(to_json({"run": info.name, "status": info.status.value, "status_counts": counts, "leaderboard": rows}))
    else:
        console.print(leaderboard_table(rows, f"leaderboard: {info.name} ({info.status.value})"))


def _find_store(candidate: str, run: Optional[str], db: Optional[str]) -> Store:
    if run or db:
        return _open(run, db)[0]
    for path in sorted(Path("runs").glob("*/cuco.db")):
        store = Store.open(path)
        try:
            store.get_candidate(candidate)
            return store
        except StoreError:
            store.close()
    raise StoreError(f"candidate {candidate!r} not found under ./runs", "pass --run RUN_DIR or --db URL")


def show_command(candidate: str, *, run: Optional[str], db: Optional[str], with_source: bool, json_out: bool,
                 console) -> None:
    with _find_store(candidate, run, db) as store:
        cand = store.get_candidate(candidate)
        report = candidate_report(cand, store.evaluation(cand.id), store.run_of(cand.id))
    if json_out:
        print(to_json(report))
        return
    for item in render_candidate(report, with_source):
        console.print(item)
