"""A run's family tree as data for a server-rendered SVG: one column per generation, one node per
candidate (coloured by its score; failures and unevaluated candidates in their own colours), one
edge per parent link. The template draws it; the JSON twin returns the same nodes and edges."""

from __future__ import annotations

from typing import Any

from candidates_db import Store
from cuco.web.data import candidate_url, plain, rounded, run_url
from cuco.web.views import need_run

COLUMN_GAP = 150  # px between generations (room for a label right of each node)
ROW_GAP = 30  # px between candidates of one generation
MARGIN = 50
RADIUS = 9
BULGE = 12  # px an edge that skips generations arcs up per generation skipped, clear of the nodes between
# Score colours, worst to best (a light-to-dark green ramp), then the colours of the other states.
SCORE_COLORS = ("#d9f0a3", "#addd8e", "#78c679", "#31a354", "#006837")
FAILED_COLOR = "#d7301f"
UNEVALUATED_COLOR = "#9e9e9e"
OK_NO_SCORE_COLOR = "#fdd49e"


def _color(node: dict[str, Any], low: float, high: float) -> str:
    if node["status"] == "unevaluated":
        return UNEVALUATED_COLOR
    if node["status"] != "ok":
        return FAILED_COLOR
    if node["fitness"] is None:
        return OK_NO_SCORE_COLOR
    share = 0.0 if high <= low else (node["fitness"] - low) / (high - low)
    return SCORE_COLORS[min(int(share * len(SCORE_COLORS)), len(SCORE_COLORS) - 1)]


def _legend(low: float, high: float) -> list[dict[str, str]]:
    items = []
    if high >= low:
        step = (high - low) / len(SCORE_COLORS)
        items = [{"color": c, "label": f"ok, speedup {low + i * step:.3g}–{low + (i + 1) * step:.3g}x"}
                 for i, c in enumerate(SCORE_COLORS)] if high > low else [{"color": SCORE_COLORS[-1],
                                                                           "label": f"ok, speedup {high:.3g}x"}]
    return items + [{"color": OK_NO_SCORE_COLOR, "label": "ok, no score"},
                    {"color": FAILED_COLOR, "label": "failed"}, {"color": UNEVALUATED_COLOR, "label": "unevaluated"}]


def _place(nodes: list[dict[str, Any]]) -> tuple[dict[str, tuple[int, int]], list[int]]:
    """(x, y) of each node: generations left to right; within one, by island, then best first."""
    generations = sorted({n["generation"] for n in nodes})
    column = {g: i for i, g in enumerate(generations)}
    rows: dict[int, list[dict[str, Any]]] = {g: [] for g in generations}
    for n in nodes:
        rows[n["generation"]].append(n)
    where = {}
    for g, members in rows.items():
        members.sort(key=lambda n: (n["island"], n["fitness"] is None, -(n["fitness"] or 0.0)))
        for i, n in enumerate(members):
            where[n["id"]] = (MARGIN + column[g] * COLUMN_GAP, MARGIN + i * ROW_GAP)
    return where, generations


def _edge(parent: str, child: str, where: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """A parent link as an SVG cubic path; one skipping generations arcs over the nodes in between."""
    (x1, y1), (x2, y2) = where[parent], where[child]
    if x1 == x2:  # a parent of the same generation: loop out to the left, clear of the column
        return {"from": parent, "to": child, "path": f"M{x1},{y1} C{x1 - 40},{y1} {x2 - 40},{y2} {x2},{y2}"}
    half = (x2 - x1) / 2
    lift = BULGE * max(round(abs(x2 - x1) / COLUMN_GAP) - 1, 0)
    path = f"M{x1},{y1} C{x1 + half:.0f},{y1 - lift} {x2 - half:.0f},{y2 - lift} {x2},{y2}"
    return {"from": parent, "to": child, "path": path}


def _label(n: dict[str, Any]) -> str:
    if n["status"] == "ok" and n["fitness"] is not None:
        return f"{n['fitness']:.3g}x"
    return n["status"]


def lineage_view(store: Store, run: str) -> dict[str, Any]:
    """The run's family tree: nodes with positions and colours, parent edges, a legend."""
    info = need_run(store, run)
    nodes = store.lineage(run)
    scores = [n["fitness"] for n in nodes if n["status"] == "ok" and n["fitness"] is not None]
    low, high = (min(scores), max(scores)) if scores else (0.0, -1.0)
    where, generations = _place(nodes)
    out_nodes = [{"id": n["id"], "url": candidate_url(n["id"]), "x": where[n["id"]][0], "y": where[n["id"]][1],
                  "r": RADIUS, "color": _color(n, low, high), "status": n["status"], "generation": n["generation"],
                  "island": n["island"], "origin": n["origin_kind"], "speedup": rounded(n["fitness"]),
                  "label": _label(n)} for n in nodes]
    edges = [_edge(p, n["id"], where) for n in nodes for p in n["parent_ids"] if p in where]
    tallest = max((y for _, y in where.values()), default=MARGIN)
    return plain({
        "view": "lineage", "run": {"name": info.name, "url": run_url(info.name), "status": info.status.value,
                                   "plots": run_url(info.name, "plots")},
        "width": MARGIN * 2 + len(generations) * COLUMN_GAP, "height": tallest + MARGIN,
        "generations": [{"generation": g, "x": MARGIN + i * COLUMN_GAP} for i, g in enumerate(generations)],
        "nodes": out_nodes, "edges": edges, "legend": _legend(low, high),
    })
