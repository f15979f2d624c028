"""The runs list and a run's leaderboard as plain dicts (what the templates render and the JSON
twins return).

A run's counts, best score and filter values scan every candidate of the run, so they are kept
per run until the database's content version changes (``Store.content_version``: rows are only
ever appended); a page of rows is always read fresh.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from candidates_db import Store
from cuco.web.data import (
    NotFound, candidate_url, duration, evaluation_summary, figures, plain, rounded, run_url, spec_of,
)
from cuco.web.params import BoardQuery
from design_space import KernelSpec
from design_space.run import RunInfo, RunStatus

CACHE_ENTRIES = 256  # (run, what) pairs: stats, spec, facets and a total per filter set seen
COLUMNS = (  # (sort key or None, header): the leaderboard's columns, in order
    (None, "#"), (None, "id"), ("generation", "gen"), ("island", "island"), (None, "origin"),
    (None, "design point"), ("status", "status"), (None, "emulated"), (None, "timing"),
    (None, "headline µs"), ("sol", "SOL"), ("speedup", "speedup"), ("created", "added"),
)


class RunCache:
    """Per-run results that change only when rows are added, keyed by the content version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[tuple[str, str], tuple[tuple[int, ...], Any]] = {}

    def get(self, version: tuple[int, ...], run: str, what: str, compute: Callable[[], Any]) -> Any:
        """The cached value of ``what`` for ``run`` at ``version`` (read it before the run's rows:
        rows added meanwhile then only make the entry stale), computing it when missing."""
        with self._lock:
            hit = self._data.get((run, what))
        if hit is not None and hit[0] == version:
            return hit[1]
        value = compute()
        with self._lock:
            if len(self._data) >= CACHE_ENTRIES:
                self._data.clear()
            self._data[(run, what)] = (version, value)
        return value


def need_run(store: Store, run: str) -> RunInfo:
    info = store.get_run(run)
    if info is None:
        names = ", ".join(repr(r.name) for r in store.list_runs()[:10]) or "(none)"
        raise NotFound(f"no run named {run!r} in {store.url}", f"open one from the runs list (/): {names}")
    return info


def _run_header(store: Store, run: str, cache: RunCache,
                version: tuple[int, ...]) -> tuple[dict[str, Any], Optional[KernelSpec]]:
    """The run's record (fresh: its status changes without new rows), its cached statistics, and
    its spec (None when this cuco cannot read it)."""
    info = need_run(store, run)
    stats = cache.get(version, run, "stats", lambda: store.run_stats(run))
    spec = cache.get(version, run, "spec", lambda: spec_of(info.spec_json))
    wall = max((info.updated_at - info.created_at).total_seconds(), 0.0)
    best = stats["best"]
    return plain({
        "name": info.name, "url": run_url(info.name), "spec_name": info.spec_name, "pattern": info.pattern,
        "status": info.status.value, "running": info.status is RunStatus.RUNNING, "note": info.note,
        "hardware": spec.hardware if spec else None, "world_sizes": list(spec.world_sizes) if spec else [],
        "shapes": [s.name for s in spec.shapes] if spec else [], "headline_shape": spec.headline.name if spec else None,
        "created_at": info.created_at, "updated_at": info.updated_at, "wall_s": wall, "wall": duration(wall),
        "candidates": stats["candidates"], "status_counts": stats["status_counts"], "llm": stats["llm"],
        "best": None if best is None else best | {"speedup": rounded(best["speedup"]), "sol": rounded(best["sol"]),
                                                  "url": candidate_url(best["id"])},
        "links": {"leaderboard": run_url(info.name), "lineage": run_url(info.name, "lineage"),
                  "plots": run_url(info.name, "plots")},
    }), spec


def runs_view(store: Store, cache: RunCache) -> dict[str, Any]:
    """Every run in the database, the most recently updated first."""
    version = store.content_version()
    runs = sorted(store.list_runs(), key=lambda r: r.updated_at, reverse=True)
    return {"view": "runs", "database": store.url,
            "runs": [_run_header(store, r.name, cache, version)[0] for r in runs]}


def _row(entry: dict[str, Any], rank: int, spec: Any) -> dict[str, Any]:
    """One leaderboard row; built of JSON values directly (a page has many rows)."""
    ev = entry["evaluation"]
    summary = evaluation_summary(ev)
    return {
        "rank": rank, "id": entry["id"], "url": candidate_url(entry["id"]), "generation": entry["generation"],
        "island": entry["island"], "origin": entry["origin"].label(), "origin_kind": entry["origin"].kind.value,
        "parent_ids": list(entry["parent_ids"]), "declared_point": entry["point_key"],
        "point": summary["observed_point"] or entry["point_key"], "created_at": entry["created_at"].isoformat(),
        **summary, **figures(ev, spec),
    }


def _rows(store: Store, run: str, q: BoardQuery, spec: Any, cache: RunCache,
          version: tuple[int, ...]) -> tuple[int, list[dict[str, Any]]]:
    """The total (kept per filter set until rows are added: counting scans the run) and one page."""
    key = "total:" + repr(sorted(q.filters.items()))
    total = cache.get(version, run, key, lambda: store.leaderboard_count(run, q.filters))
    page = store.leaderboard_page(run, filters=q.filters, sort=q.sort, order=q.order, offset=q.offset,
                                  limit=q.per_page, with_total=False)
    return total, [_row(e, q.offset + i + 1, spec) for i, e in enumerate(page["entries"])]


def _pages(run: str, q: BoardQuery, total: int) -> dict[str, Any]:
    last = max((total + q.per_page - 1) // q.per_page, 1)
    near = sorted({1, last, *range(max(q.page - 2, 1), min(q.page + 2, last) + 1)})
    links = [{"page": p, "url": run_url(run, query=q.params(page=p)), "current": p == q.page} for p in near]
    return {"page": q.page, "last": last, "links": links,
            "prev": run_url(run, query=q.params(page=q.page - 1)) if q.page > 1 else None,
            "next": run_url(run, query=q.params(page=q.page + 1)) if q.page < last else None}


def leaderboard_view(store: Store, run: str, q: BoardQuery, cache: RunCache, poll_s: float) -> dict[str, Any]:
    """A run's leaderboard page: the run, one page of rows, the filters and their possible values."""
    version = store.content_version()
    header, spec = _run_header(store, run, cache, version)
    total, rows = _rows(store, run, q, spec, cache, version)
    facets = cache.get(version, run, "facets", lambda: store.leaderboard_facets(run))
    columns = [{"key": key, "title": title, "sorted": key == q.sort and key is not None,
                "order": q.order if key == q.sort else None,
                "url": run_url(run, query=q.sort_params(key)) if key else None} for key, title in COLUMNS]
    return {"view": "leaderboard", "run": header, "total": total, "page": q.page, "per_page": q.per_page,
            "rows": rows, "filters": q.filters, "sort": q.sort, "order": q.order, "facets": plain(facets),
            "columns": columns, "pagination": _pages(run, q, total), "poll_s": poll_s,
            "rows_url": run_url(run, "rows", q.params()), "query": q.params()}


def rows_view(store: Store, run: str, q: BoardQuery, cache: RunCache) -> dict[str, Any]:
    """What a live leaderboard polls: the page's rows, the total and the run's header (status,
    best, candidates, spend, wall time)."""
    version = store.content_version()
    header, spec = _run_header(store, run, cache, version)
    total, rows = _rows(store, run, q, spec, cache, version)
    return {"view": "rows", "run": header, "total": total, "rows": rows}

