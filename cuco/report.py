"""Rows and reports of what a run stored: the leaderboard and one candidate's details, as
plain data (for ``--json``) and as rich renderables (for the terminal)."""

from __future__ import annotations

import json
from typing import Any, Optional

from design_space import Candidate, Evaluation, KernelSpec, Status, Tier

SIMULATED_NOTE = ("times are SIMULATED by the analytic model (no GPU measured them); correctness is CPU emulation, "
                  "which checks logic, indexing and signalling but not GPU memory ordering")


def _us(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x * 1e6, 2)


def leaderboard_rows(entries: list[tuple[Candidate, Optional[Evaluation]]], spec: KernelSpec) -> list[dict[str, Any]]:
    rows = []
    for i, (cand, ev) in enumerate(entries, 1):
        head = ev.timing_for(spec.headline.name) if ev else None
        rows.append({
            "rank": i,
            "id": cand.id,
            "generation": cand.generation,
            "origin": cand.origin.label(),
            "point": cand.point.key() if cand.point else None,
            "status": ev.status.value if ev else "pending",
            "reason": ev.reason if ev else "",
            "emulated_worlds": list(ev.checked_worlds(Tier.EMULATED)) if ev else [],
            "timing_source": head.source.value if head else None,
            "shape": spec.headline.name,
            "time_us": _us(head.seconds) if head else None,
            "bound_us": _us(head.bound_seconds) if head else None,
            "sol": round(head.sol_fraction, 3) if head else None,
            "speedup": round(ev.speedup, 3) if ev and ev.speedup else None,
            "flags": list(ev.flags) if ev else [],
        })
    return rows


def leaderboard_table(rows: list[dict[str, Any]], title: str):
    from rich.table import Table

    sources = {r["timing_source"] for r in rows if r["timing_source"]}
    label = "/".join(sorted(sources)) or "simulated"
    shape = rows[0]["shape"] if rows else ""
    table = Table(title=title, caption=SIMULATED_NOTE if "simulated" in sources or not sources else None,
                  caption_justify="left")
    right = {"justify": "right", "no_wrap": True}
    for col, kw in (("#", right), ("id", {"no_wrap": True}), ("gen", right), ("design point", {"no_wrap": True}),
                    ("status", {"no_wrap": True}), ("emulated", {"no_wrap": True}),
                    (f"{label} µs\n{shape}", right), ("bound µs", right), ("SOL", right),
                    ("speedup\ngeomean", right)):
        table.add_column(col, **kw)
    for r in rows:
        ok = r["status"] == Status.OK.value
        worlds = ",".join(str(w) for w in r["emulated_worlds"])
        table.add_row(
            str(r["rank"]), r["id"], str(r["generation"]), r["point"] or f"({r['origin']})",
            f"[green]{r['status']}[/]" if ok else f"[red]{r['status']}[/]",
            f"✓ w={worlds}" if worlds else "✗",
            _fmt(r["time_us"]), _fmt(r["bound_us"]), _fmt(r["sol"], 3), _fmt(r["speedup"], 3, "x"),
        )
    return table


def _fmt(x: Optional[float], digits: int = 1, suffix: str = "") -> str:
    return "-" if x is None else f"{x:.{digits}f}{suffix}"


def candidate_report(cand: Candidate, ev: Optional[Evaluation], run: str) -> dict[str, Any]:
    return {
        "run": run,
        "candidate": cand.model_dump(mode="json") | {"content_hash": cand.content_hash},
        "evaluation": ev.model_dump(mode="json") if ev else None,
        "summary": None if ev is None else {
            "status": ev.status.value, "stage": ev.stage.value, "reason": ev.reason,
            "emulated_worlds": list(ev.checked_worlds(Tier.EMULATED)),
            "speedup": ev.speedup, "sol_fraction": ev.sol_fraction,
            "timing_source": ev.timing_source.value if ev.timing_source else None,
        },
    }


def render_candidate(report: dict[str, Any], with_source: bool):
    """Rich renderables for ``cuco show``."""
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.table import Table

    c, ev = report["candidate"], report["evaluation"]
    out = []
    meta = Table.grid(padding=(0, 2))
    for k, v in (("id", c["id"]), ("run", report["run"]), ("generation", c["generation"]),
                 ("origin", "/".join(x for x in c["origin"].values() if x)), ("parents", ", ".join(c["parent_ids"]) or "-"),
                 ("design point", _point_key(c["point"])), ("content hash", c["content_hash"][:16])):
        meta.add_row(f"[bold]{k}", str(v))
    if ev:
        s = report["summary"]
        meta.add_row("[bold]status", f"{s['status']} (stage {s['stage']})")
        if s["reason"]:
            meta.add_row("[bold]reason", s["reason"])
        meta.add_row("[bold]emulated", ", ".join(f"world {w} ✓" for w in s["emulated_worlds"]) or "✗")
        meta.add_row("[bold]flags", "; ".join(ev["flags"]) or "-")
    out.append(Panel(meta, title=f"candidate {c['id']}"))
    if ev:
        out.extend(_evaluation_tables(ev))
        if ev["logs"]:
            out.append(Panel(ev["logs"], title="log (trimmed)"))
    if with_source:
        out.append(Syntax(c["source"], "cuda", line_numbers=True))
    return out


def _point_key(point: Optional[dict]) -> str:
    if not point:
        return "-"
    return (f"{point['backend']}/{point['placement']}/{point['sync_scope']}/{point['issuer']}/"
            f"{point['chunk_bytes'] // 1024}K/{point['comm_ctas']}")


def _evaluation_tables(ev: dict) -> list:
    from rich.table import Table

    tables = []
    if ev.get("build"):
        b = ev["build"]
        t = Table(title=f"build {b['arch']} ({b['comm_backend']}){' cached' if b['cached'] else ''}")
        for col in ("kernel", "registers", "smem B", "stack B", "spills"):
            t.add_column(col)
        for k in b["kernels"]:
            t.add_row(k["name"], str(k["registers"]), str(k["smem_bytes"]), str(k["stack_bytes"]),
                      str(k["spill_stores"] + k["spill_loads"]))
        tables.append(t)
    if ev["timings"]:
        t = Table(title="timings per shape", caption=SIMULATED_NOTE, caption_justify="left")
        for col in ("shape", "world", "source", "time µs", "bound µs", "baseline µs", "SOL", "speedup"):
            t.add_column(col)
        for tm in ev["timings"]:
            sol = tm["bound_seconds"] / tm["seconds"]
            t.add_row(tm["shape"], str(tm["world"]), tm["source"], f"{tm['seconds'] * 1e6:.1f}",
                      f"{tm['bound_seconds'] * 1e6:.1f}", f"{tm['baseline_seconds'] * 1e6:.1f}", f"{sol:.3f}",
                      f"{tm['baseline_seconds'] / tm['seconds']:.3f}x")
        tables.append(t)
    return tables


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)
