"""The plots of one run, as data and as figures. ``cuco plot`` writes them as SVG and PNG files, the
web leaderboard serves them, and ``plot_data`` is their JSON twin: the same numbers the figures draw.

Every speedup drawn comes from one timing source. A run holding both (a GPU measured some
candidates, the analytic model simulated others) shows the measured ones, says so, and draws the
simulated ones in the "no score" strip: a simulated 2x and a measured 2x are not the same claim.
The figures themselves are drawn by ``cuco.plot_figures`` (matplotlib, imported only when drawing).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from design_space.dimensions import Backend, Placement
from design_space.errors import ConfigError, StoreError
from design_space.evaluation import Evaluation, Status, TimingSource
from design_space.llm import LLMCall

PLOTS: dict[str, str] = {
    "best_over_generations": "Best speedup over generations",
    "best_over_evaluations": "Best speedup over evaluations",
    "candidates_by_generation": "All candidates by generation",
    "coverage": "Design-space coverage: backend x placement",
    "llm_spend": "LLM spend over time",
}
FORMATS = ("svg", "png")
UNDECLARED = "undeclared"  # a candidate that declares no design point
UNEVALUATED = "unevaluated"
OK_SIMULATED = "ok, simulated (not mixed with measured)"
OK_NO_SCORE = "ok, no score"
# Strip categories in the order they are stacked and listed (how far a candidate got, best last).
STRIP_ORDER = (UNEVALUATED, Status.REJECTED.value, Status.BUILD_FAILED.value, Status.EMULATION_FAILED.value,
               Status.CRASHED.value, Status.TIMEOUT.value, Status.WRONG_RESULT.value, OK_NO_SCORE, OK_SIMULATED)
JITTER = 0.6  # width of the band a generation's candidates spread over
ALL_ROWS = 2**31 - 1  # a page that holds the whole run
CACHE_RUNS = 8
_CACHE: dict[tuple, tuple[Any, "_Facts"]] = {}
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Row:
    """One candidate as the plots see it."""

    id: str
    generation: int
    status: str  # the latest evaluation's status, or "unevaluated"
    speedup: Optional[float]  # the score drawn (from the run's shown timing source), or None
    strip: Optional[str]  # why no speedup is drawn (a STRIP_ORDER category); None when one is
    backend: str
    placement: str


@dataclass(frozen=True)
class _Facts:
    """What every plot of a run is computed from: read once, drawn many times."""

    run: str
    started: datetime
    rows: tuple[_Row, ...]  # in the order the run stored them (candidate seq)
    source: Optional[str]  # the timing source of every speedup drawn
    calls: tuple[LLMCall, ...]


def _unknown(name: str) -> ConfigError:
    return ConfigError(f"unknown plot {name!r}", f"use one of: {', '.join(PLOTS)}")


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def _score(e: Optional[Evaluation]) -> Optional[tuple[str, float]]:
    """(timing source, speedup) of a correct, scored evaluation; None otherwise."""
    if e is None or e.status is not Status.OK:
        return None
    s, source = e.fitness, e.timing_source
    if s is None or source is None or not math.isfinite(s) or s <= 0:
        return None
    return source.value, s


def _row(entry: dict[str, Any], source: Optional[str]) -> _Row:
    e: Optional[Evaluation] = entry["evaluation"]
    score = _score(e)
    speedup = score[1] if score and score[0] == source else None
    if speedup is not None:
        strip = None
    elif score:
        strip = OK_SIMULATED  # only ever simulated: measured is shown whenever any exists
    elif e is None:
        strip = UNEVALUATED
    else:
        strip = OK_NO_SCORE if e.status is Status.OK else e.status.value
    fields = (entry["point_key"] or "").split("/")
    where = (fields[0], fields[1]) if len(fields) > 1 else (UNDECLARED, UNDECLARED)
    return _Row(entry["id"], entry["generation"], e.status.value if e else UNEVALUATED, speedup, strip, *where)


def _read(store: Any, info: Any) -> _Facts:
    # "created" order is the order the run stored its candidates; entries carry no source text.
    entries = store.leaderboard_page(info.name, sort="created", order="asc", limit=ALL_ROWS)["entries"]
    sources = {s[0] for s in (_score(e["evaluation"]) for e in entries) if s}
    source = next((t.value for t in (TimingSource.MEASURED, TimingSource.SIMULATED) if t.value in sources), None)
    rows = tuple(_row(e, source) for e in entries)
    return _Facts(info.name, _utc(info.created_at), rows, source, tuple(store.llm_calls(info.name)))


def _load(store: Any, run: str) -> _Facts:
    """The run's facts; kept while the database's content version is unchanged (rows are only ever
    appended), so the web's five images and JSON of one plots page read the run once."""
    info = store.get_run(run)
    if info is None:
        names = ", ".join(repr(r.name) for r in store.list_runs()) or "(none)"
        raise StoreError(f"no run named {run!r} in {store.url}", f"use one of: {names}")
    key = (store.url, run, info.created_at)
    version = store.content_version()  # read first: rows added meanwhile only make the entry stale
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit[0] == version:
        return hit[1]
    facts = _read(store, info)
    with _CACHE_LOCK:
        _CACHE.pop(key, None)
        _CACHE[key] = (version, facts)
        while len(_CACHE) > CACHE_RUNS:
            _CACHE.pop(next(iter(_CACHE)))  # the least recently computed
    return facts


# --- data of each plot ---------------------------------------------------------------------------

def _y_label(source: Optional[str]) -> str:
    return f"speedup vs baseline ({source})" if source else "speedup vs baseline"


def _notes(f: _Facts) -> list[str]:
    notes = []
    if not f.rows:
        notes.append("empty: this run has no candidates yet")
    elif f.source is None:
        notes.append("no correct candidate with a score yet")
    hidden = sum(r.strip == OK_SIMULATED for r in f.rows)
    if hidden:
        notes.append(f"measured and simulated are not mixed: measured shown ({hidden} simulated not drawn)")
    return notes


def _header(f: _Facts, name: str) -> dict[str, Any]:
    return {"plot": name, "title": PLOTS[name], "run": f.run, "timing_source": f.source,
            "y_label": _y_label(f.source), "notes": _notes(f), "empty": not f.rows}


def _best_over_generations(f: _Facts) -> dict[str, Any]:
    gens = [r.generation for r in f.rows]
    generations = list(range(min(gens), max(gens) + 1)) if gens else []
    best: dict[int, float] = {}
    for r in f.rows:
        if r.speedup is not None:
            best[r.generation] = max(best.get(r.generation, r.speedup), r.speedup)
    so_far: Optional[float] = None
    best_so_far = []
    for g in generations:
        if g in best:
            so_far = best[g] if so_far is None else max(so_far, best[g])
        best_so_far.append(so_far)
    return _header(f, "best_over_generations") | {
        "x_label": "generation", "generations": generations,
        "generation_best": [best.get(g) for g in generations], "best_so_far": best_so_far, "best": so_far}


def _best_over_evaluations(f: _Facts) -> dict[str, Any]:
    points, best_so_far = [], []
    so_far: Optional[float] = None
    for i, r in enumerate(f.rows, 1):
        if r.speedup is not None:
            points.append({"index": i, "id": r.id, "speedup": r.speedup})
            so_far = r.speedup if so_far is None else max(so_far, r.speedup)
        best_so_far.append(so_far)
    return _header(f, "best_over_evaluations") | {
        "x_label": "evaluation (the order the run stored candidates in)", "evaluations": len(f.rows),
        "index": list(range(1, len(f.rows) + 1)), "best_so_far": best_so_far, "points": points, "best": so_far}


def _unit(text: str, salt: str) -> float:
    """A fixed number in [-0.5, 0.5) from ``text``: the same jitter every time a plot is drawn."""
    digest = hashlib.sha256(f"{salt}:{text}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 - 0.5


def _candidates_by_generation(f: _Facts) -> dict[str, Any]:
    points, strip = [], []
    for r in f.rows:
        x = r.generation + JITTER * _unit(r.id, "x")
        if r.speedup is not None:
            points.append({"id": r.id, "generation": r.generation, "x": x, "speedup": r.speedup})
        else:
            row = STRIP_ORDER.index(r.strip)
            strip.append({"id": r.id, "generation": r.generation, "x": x, "category": r.strip,
                          "y": row + JITTER * _unit(r.id, "y")})
    counts = Counter(s["category"] for s in strip)
    return _header(f, "candidates_by_generation") | {
        "x_label": "generation", "points": points, "strip": strip, "strip_rows": list(STRIP_ORDER),
        "strip_counts": {k: counts[k] for k in STRIP_ORDER if counts[k]}}


def _coverage(f: _Facts) -> dict[str, Any]:
    rows, columns = [b.value for b in Backend], [p.value for p in Placement]
    # values this cuco does not know (a newer writer's) get their own row or column, then undeclared
    rows += sorted({r.backend for r in f.rows} - set(rows) - {UNDECLARED})
    columns += sorted({r.placement for r in f.rows} - set(columns) - {UNDECLARED})
    if any(r.backend == UNDECLARED for r in f.rows):
        rows.append(UNDECLARED)
        columns.append(UNDECLARED)
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for r in f.rows:
        cell = cells.setdefault((r.backend, r.placement), {
            "backend": r.backend, "placement": r.placement, "count": 0, "correct": 0, "best": None})
        cell["count"] += 1
        cell["correct"] += r.status == Status.OK.value
        if r.speedup is not None:
            cell["best"] = r.speedup if cell["best"] is None else max(cell["best"], r.speedup)
    for cell in cells.values():
        scored, correct = cell["best"] is not None, cell["correct"] > 0
        cell["state"] = "scored" if scored else "correct_unscored" if correct else "no_correct"
    order = sorted(cells, key=lambda k: (rows.index(k[0]), columns.index(k[1])))
    return _header(f, "coverage") | {
        "rows": rows, "columns": columns, "row_label": "backend", "column_label": "placement",
        "colour_label": "best " + _y_label(f.source), "cells": [cells[k] for k in order],
        "tried": len(cells), "candidates": len(f.rows)}


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0


def _llm_spend(f: _Facts) -> dict[str, Any]:
    calls = sorted(f.calls, key=lambda c: _utc(c.created_at))
    start = min([f.started] + [_utc(c.created_at) for c in calls[:1]])
    span = (_utc(calls[-1].created_at) - start).total_seconds() if calls else 0.0
    unit, scale = ("s", 1.0) if span < 120 else ("min", 60.0) if span < 7200 else ("h", 3600.0)
    cost = tokens_in = tokens_out = 0
    points = []
    for c in calls:
        cost, tokens_in, tokens_out = cost + _finite(c.cost_usd), tokens_in + c.tokens_in, tokens_out + c.tokens_out
        points.append({"id": c.id, "t": (_utc(c.created_at) - start).total_seconds() / scale,
                       "cost_usd": cost, "tokens_in": tokens_in, "tokens_out": tokens_out})
    return {"plot": "llm_spend", "title": PLOTS["llm_spend"], "run": f.run, "empty": not calls,
            "notes": [] if calls else ["no LLM calls in this run"], "time_unit": unit,
            "x_label": f"time since the run started ({unit})", "y_label": "cumulative LLM cost (USD)",
            "tokens_label": "cumulative tokens", "calls": len(calls), "failed": sum(not c.ok for c in calls),
            "cost_usd": float(cost), "tokens_in": tokens_in, "tokens_out": tokens_out, "points": points}


_BUILDERS = {
    "best_over_generations": _best_over_generations,
    "best_over_evaluations": _best_over_evaluations,
    "candidates_by_generation": _candidates_by_generation,
    "coverage": _coverage,
    "llm_spend": _llm_spend,
}


# --- the public interface ------------------------------------------------------------------------

def plot_data(store: Any, run: str) -> dict[str, dict]:
    """JSON-ready data of every plot of ``run`` (name -> data), the numbers the figures draw."""
    facts = _load(store, run)
    return {name: build(facts) for name, build in _BUILDERS.items()}


def _check(name: str, fmt: str) -> None:
    if name not in PLOTS:
        raise _unknown(name)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown plot format {fmt!r}", f"use one of: {', '.join(FORMATS)}")


def render(store: Any, run: str, name: str, fmt: str = "svg") -> bytes:
    """Plot ``name`` of ``run`` as SVG (text drawn as paths, deterministic bytes) or PNG."""
    _check(name, fmt)
    return _draw(_load(store, run), name, fmt)


def _draw(facts: _Facts, name: str, fmt: str) -> bytes:
    from cuco.plot_figures import figure_bytes

    return figure_bytes(name, _BUILDERS[name](facts), fmt)


def run_plot(run: Optional[str], *, db: Optional[str], out: Optional[Path] = None, console: Any) -> list[Path]:
    """``cuco plot RUN [--db URL] [--out DIR]``: every plot as ``<out>/<name>.svg`` and ``.png``
    (default out: ``<run folder>/plots``, or ``./plots`` with --db); prints one line per file."""
    from cuco.browse import _open, _single_run
    from cuco.shown_text import shown

    store, name = _open(None if db else run, db)
    with store:
        facts = _load(store, _single_run(store, name if db is None else run).name)
    folder = Path(out) if out is not None else Path(run) / "plots" if not db else Path("plots")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the plots folder {folder}: {e}",
                          "pass --out DIR in a folder you can write") from e
    written = []
    for plot in PLOTS:
        for fmt in FORMATS:
            path = folder / f"{plot}.{fmt}"
            path.write_bytes(_draw(facts, plot, fmt))
            console.print(shown(f"wrote {path}"))
            written.append(path)
    return written
