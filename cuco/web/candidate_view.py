"""One candidate, and two side by side, as plain dicts (what the templates render and the JSON
twins return): source, diff, design points, stages, checks, build features, the LLM calls that
made it, and its family."""

from __future__ import annotations

import difflib
from typing import Any, Optional
from urllib.parse import urlencode

from candidates_db import Store
from cuco.web.data import NotFound, candidate_url, evaluation_summary, figures, plain, rounded, run_url, spec_of
from design_space import Candidate, Evaluation, StoreError
from design_space.evaluation import Stage

STAGE_ORDER = [s.value for s in (Stage.GUARD, Stage.BUILD, Stage.EMULATE, Stage.VERIFY, Stage.BENCH,
                                 Stage.SIMULATE, Stage.SCORE)]
DIFF_CONTEXT = 3


def _find(store: Store, cid: str) -> tuple[Candidate, str]:
    """(candidate, its run) by full id or a unique prefix; StoreError (a 404) otherwise."""
    try:
        cand = store.get_candidate(cid)
    except StoreError as e:
        if e.problem.startswith("candidates database"):
            raise  # the database failed: not a missing candidate
        raise NotFound(e.problem, "open a candidate from its run's leaderboard (/ lists the runs)") from e
    return cand, store.run_of(cand.id)


def diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[dict[str, str]]:
    """A unified diff as lines tagged ``head``, ``hunk``, ``add``, ``del`` or ``ctx``."""
    kinds = {"+": "add", "-": "del", "@": "hunk", " ": "ctx"}
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm="", n=DIFF_CONTEXT)
    out = []
    for i, text in enumerate(lines):
        kind = "head" if i < 2 else kinds.get(text[:1], "ctx")
        out.append({"kind": kind, "text": text})
    return out


def _node(n: dict[str, Any]) -> dict[str, Any]:
    return {"id": n["id"], "url": candidate_url(n["id"]), "generation": n["generation"], "island": n["island"],
            "status": n["status"], "speedup": rounded(n["fitness"])}


def _stages(ev: Evaluation) -> list[dict[str, Any]]:
    """Every stage that ran, in cascade order, with its seconds; the last one reached is marked."""
    names = [s for s in STAGE_ORDER if s in ev.stage_seconds] + sorted(set(ev.stage_seconds) - set(STAGE_ORDER))
    if ev.stage.value not in names:
        names.append(ev.stage.value)
    return [{"stage": s, "seconds": ev.stage_seconds.get(s), "last": s == ev.stage.value} for s in names]


def _evaluation(ev: Optional[Evaluation], spec: Any) -> Optional[dict[str, Any]]:
    if ev is None:
        return None
    build = ev.build
    return {**evaluation_summary(ev), **figures(ev, spec),
            "stages": _stages(ev), "logs": ev.logs, "observed": list(ev.observed),
            "checks": [c.model_dump(mode="python") for c in ev.checks],
            "timings": [t.model_dump(mode="python") | {"speedup": rounded(t.speedup), "sol": rounded(t.sol_fraction)}
                        for t in ev.timings],
            "build": None if build is None else build.model_dump(mode="python") | {
                "max_registers": build.max_registers, "spills": build.spills},
            "features": None if ev.features is None else ev.features.model_dump(mode="python") | {
                "kind": ev.features.kind},
            "provenance": ev.provenance.model_dump(mode="python")}


def _candidate(cand: Candidate) -> dict[str, Any]:
    return {"id": cand.id, "url": candidate_url(cand.id), "generation": cand.generation, "island": cand.island,
            "origin": cand.origin.label(), "origin_kind": cand.origin.kind.value, "parent_ids": list(cand.parent_ids),
            "parent_urls": [candidate_url(p) for p in cand.parent_ids], "content_hash": cand.content_hash,
            "declared_point": cand.point.key() if cand.point else None,
            "declared": cand.point.model_dump(mode="python") if cand.point else None, "source": cand.source}


def _diff(store: Store, cand: Candidate) -> dict[str, Any]:
    if not cand.parent_ids:
        return {"parent": None, "parent_url": None, "lines": [], "note": "no parent: nothing to compare with"}
    parent_id = cand.parent_ids[0]
    try:
        parent = store.get_candidate(parent_id)
    except StoreError:
        return {"parent": parent_id, "parent_url": None, "lines": [],
                "note": f"parent {parent_id} is not in this database"}
    lines = diff_lines(parent.source, cand.source, parent.id, cand.id)
    return {"parent": parent.id, "parent_url": candidate_url(parent.id), "lines": lines,
            "note": "" if lines else "the source is the same as its parent's"}


def _run_links(store: Store, run: str) -> dict[str, Any]:
    info = store.get_run(run)
    return {"name": run, "url": run_url(run), "status": info.status.value if info else None,
            "lineage": run_url(run, "lineage"), "plots": run_url(run, "plots")}


def candidate_view(store: Store, cid: str) -> dict[str, Any]:
    """Everything stored about one candidate."""
    cand, run = _find(store, cid)
    info = store.get_run(run)
    spec = spec_of(info.spec_json) if info else None
    family = store.family(run, cand.id)
    calls = store.llm_calls(run, candidate_id=cand.id)
    parent = cand.parent_ids[0] if cand.parent_ids else None
    return plain({
        "view": "candidate", "run": _run_links(store, run), "candidate": _candidate(cand),
        "evaluation": _evaluation(store.evaluation(cand.id), spec), "diff": _diff(store, cand),
        "llm_calls": [c.model_dump(mode="python") | {"label": f"{c.provider}:{c.model}"} for c in calls],
        "ancestors": [_node(n) for n in family["ancestors"]], "children": [_node(n) for n in family["children"]],
        "compare_url": "/compare?" + urlencode({"a": parent, "b": cand.id}) if parent else None,
    })


def _side(store: Store, cid: str) -> dict[str, Any]:
    cand, run = _find(store, cid)
    info = store.get_run(run)
    ev = store.evaluation(cand.id)
    return {"run": _run_links(store, run), "candidate": _candidate(cand),
            "evaluation": _evaluation(ev, spec_of(info.spec_json) if info else None)}


def compare_view(store: Store, a: str, b: str) -> dict[str, Any]:
    """Two candidates side by side and the diff from ``a``'s source to ``b``'s."""
    left, right = _side(store, a), _side(store, b)
    lines = diff_lines(left["candidate"]["source"], right["candidate"]["source"], left["candidate"]["id"],
                       right["candidate"]["id"])
    return plain({"view": "compare", "a": left, "b": right,
                  "diff": {"lines": lines, "note": "" if lines else "the two sources are the same"}})
