"""``cuco leaderboard``, ``cuco show`` and ``cuco llm``: read what a run stored. Stored text is shown
as data (``cuco.shown_text``); ``--json`` prints it exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from candidates_db import Store
from design_space import KernelSpec, StoreError
from cuco.report import (
    candidate_report, leaderboard_rows, leaderboard_table, llm_call_row, llm_calls_table, llm_usage_tables,
    print_source, prompt_panels, render_candidate, to_json, usage_line,
)
from cuco.shown_text import shown
from cuco.terminal import is_wide


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
        usage = store.llm_usage(info.name)
    if json_out:
        print(to_json({"run": info.name, "status": info.status.value, "status_counts": counts,
                       "llm_usage": usage, "leaderboard": rows}))
        return
    console.print(leaderboard_table(rows, f"leaderboard: {info.name} ({info.status.value})", wide=is_wide(console)))
    line = usage_line(usage)
    if line:
        console.print(shown(line))
        console.print(shown(f"details: cuco llm {run}" + (f" --db {db}" if db else "")))


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
                 console, with_prompts: bool = False) -> None:
    with _find_store(candidate, run, db) as store:
        cand = store.get_candidate(candidate)
        run_name = store.run_of(cand.id)
        report = candidate_report(cand, store.evaluation(cand.id), run_name,
                                  store.llm_calls(run_name, candidate_id=cand.id), with_prompts)
    if json_out:
        print(to_json(report))
    elif with_source:
        print_source(report["candidate"]["source"])
    else:
        for item in render_candidate(report, is_wide(console)):
            console.print(item)


def _candidate_id(store: Store, candidate: str) -> str:
    """A stored candidate's full id from a prefix; otherwise the text as given, because a call
    may have served a candidate that was never stored (rejected before evaluation)."""
    try:
        return store.get_candidate(candidate).id
    except StoreError:
        return candidate.strip()


def llm_command(run: str, *, db: Optional[str], candidate: Optional[str], json_out: bool, with_prompts: bool,
                console) -> None:
    """The run's LLM usage (totals, by model, by purpose), its calls, and the agents' steps."""
    store, name = _open(None if db else run, db)
    with store:
        info = _single_run(store, name if db is None else run)
        cid = _candidate_id(store, candidate) if candidate else None
        usage = store.llm_usage(info.name)
        calls = [llm_call_row(c, with_prompts) for c in store.llm_calls(info.name, candidate_id=cid)]
        steps = store.agent_steps(info.name)
    if json_out:
        print(to_json({"run": info.name, "candidate": cid, "usage": usage, "calls": calls, "agent_steps": steps}))
        return
    if not usage["calls"]:
        console.print(shown(f"run {info.name!r} made no LLM call (the template proposer needs none); "
                            "pass --llm openai:<model> or anthropic:<model> to `cuco evolve` to use one"))
    else:
        for table in llm_usage_tables(usage, f"LLM usage: {info.name}"):
            console.print(table)
    if steps:
        console.print(_steps_table(steps))
    if candidate and not calls:
        console.print(shown(f"no LLM call served candidate {cid}"))
    if calls:
        console.print(llm_calls_table(calls, "LLM calls" + (f" for {cid}" if cid else ""), is_wide(console)))
        for panel in prompt_panels(calls):
            console.print(panel)


def _steps_table(steps: list[dict]):
    from cuco.terminal import FIGURE, TEXT, add_id_column, table

    t = table(title="agent steps")
    ids = [shown(st["candidate_id"] or "-") for st in steps]
    for col, kw in (("agent", TEXT), ("step", FIGURE), ("node", TEXT), ("iter", FIGURE), ("status", TEXT)):
        t.add_column(col, **kw)
    add_id_column(t, "candidate", ids)
    t.add_column("summary / reason", **TEXT)
    for st, cid in zip(steps, ids):
        text = " — ".join(x for x in (st["summary"], st["reason"]) if x)
        t.add_row(shown(st["agent"]), str(st["step"]), shown(st["node"]), str(st["iteration"]),
                  shown(st["status"] or "-"), cid, shown(text or "-"))
    return t
