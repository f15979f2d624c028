"""Rows and reports of what a run stored: the leaderboard and one candidate's details, as
plain data (for ``--json``) and as rich renderables (for the terminal)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Optional

from design_space import Candidate, Evaluation, KernelSpec, Status, Tier
from design_space.llm import LLMCall
from cuco.shown_text import line, shown

SIMULATED_NOTE = ("times are SIMULATED by the analytic model (no GPU measured them); correctness is CPU emulation, "
                  "which checks logic, indexing and signalling but not GPU memory ordering")


def _us(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x * 1e6, 2)


def leaderboard_rows(entries: list[tuple[Candidate, Optional[Evaluation]]], spec: KernelSpec) -> list[dict[str, Any]]:
    """One row per candidate. ``speedup`` and ``sol`` are THE score (design_space.figures: geometric
    means over the spec's shapes); the ``headline_*`` figures are the spec's primary shape, shown
    beside them. ``point`` is the point the code was observed to implement (what was scored)."""
    from design_space.figures import score

    rows = []
    for i, (cand, ev) in enumerate(entries, 1):
        sc = score(ev.timings, headline_shape=spec.headline.name) if ev and ev.timings else None
        head = sc.headline if sc else None
        rows.append({
            "rank": i,
            "id": cand.id,
            "generation": cand.generation,
            "origin": cand.origin.label(),
            "point": (ev.observed_point if ev and ev.observed_point else None) or (cand.point.key() if cand.point else None),
            "declared_point": cand.point.key() if cand.point else None,
            "status": ev.status.value if ev else "pending",
            "reason": ev.reason if ev else "",
            "emulated_worlds": list(ev.checked_worlds(Tier.EMULATED)) if ev else [],
            "timing_source": sc.source.value if sc and sc.source else None,
            "compute": ev.features.kind if ev and ev.features else None,
            "shape": spec.headline.name,
            "time_us": _us(head.seconds) if head else None,
            "bound_us": _us(ev.timing_for(spec.headline.name).bound_seconds) if head else None,
            "headline_speedup": _round(head.speedup) if head else None,
            "headline_sol": _round(head.sol) if head else None,
            "sol": _round(sc.sol) if sc else None,
            "speedup": _round(sc.speedup) if sc else None,
            "flags": list(ev.flags) if ev else [],
        })
    return rows


def _round(x: Optional[float]) -> Optional[float]:
    """Three significant figures: a 0.0172x scalar candidate must not print as 0.017 or 0.02."""
    return None if x is None else float(f"{x:.3g}")


def leaderboard_table(rows: list[dict[str, Any]], title: str, wide: bool = False):
    """The leaderboard as a rich table; every stored value is shown as data (``shown``). By default
    it fits ``terminal.WIDTH``: rank, the whole id, generation, design point (folds when narrow),
    status, SOL and speedup; ``wide`` adds the origin, emulated worlds and headline time and bound."""
    from cuco.terminal import FIGURE, TEXT, WORD, add_id_column, table

    sources = {r["timing_source"] for r in rows if r["timing_source"]}
    label = "/".join(sorted(sources)) or "simulated"
    shape = rows[0]["shape"] if rows else ""
    notes = [SIMULATED_NOTE] if "simulated" in sources or not sources else []
    if not wide:
        notes.append(f"SOL and speedup: geomeans over the spec's shapes; --wide adds origin, emulated worlds, "
                     f"{label} µs and bound on {shape}")
    t = table(title=shown(title), caption=shown("\n".join(notes)) if notes else None)
    ids = [shown(r["id"]) for r in rows]
    t.add_column("#", **FIGURE)
    add_id_column(t, "id", ids)
    t.add_column("gen", **FIGURE)
    t.add_column("design point", **TEXT)
    if wide:
        t.add_column("origin", **TEXT)
    t.add_column("status", **WORD)
    if wide:
        for col, kw in (("emulated", WORD), (shown(f"{label} µs\n{shape}"), FIGURE), ("bound µs", FIGURE)):
            t.add_column(col, **kw)
    t.add_column("SOL" if not wide else "SOL\ngeomean", **FIGURE)
    t.add_column("speedup" if not wide else "speedup\ngeomean", **FIGURE)
    for r, cid in zip(rows, ids):
        t.add_row(*_leaderboard_cells(r, cid, wide))
    return t


def _leaderboard_cells(r: dict[str, Any], cid, wide: bool) -> list:
    ok = r["status"] == Status.OK.value
    cells = [str(r["rank"]), cid, str(r["generation"]), shown(r["point"] or "-")]
    if wide:
        cells.append(shown(r["origin"]))
    cells.append(shown(r["status"], "green" if ok else "red"))
    if wide:
        worlds = ",".join(str(w) for w in r["emulated_worlds"])
        cells += [f"✓ w={worlds}" if worlds else "✗", _fmt(r["time_us"]), _fmt(r["bound_us"])]
    return cells + [_sig(r["sol"]), _sig(r["speedup"], "x")]


def _fmt(x: Optional[float], digits: int = 1, suffix: str = "") -> str:
    return "-" if x is None else f"{x:.{digits}f}{suffix}"


def _sig(x: Optional[float], suffix: str = "") -> str:
    return "-" if x is None else f"{x:.3g}{suffix}"


def candidate_report(cand: Candidate, ev: Optional[Evaluation], run: str,
                     llm_calls: Sequence[LLMCall] = (), with_prompts: bool = False) -> dict[str, Any]:
    return {
        "run": run,
        "llm_calls": [llm_call_row(c, with_prompts) for c in llm_calls],
        "candidate": cand.model_dump(mode="json") | {"content_hash": cand.content_hash},
        "evaluation": ev.model_dump(mode="json") if ev else None,
        "summary": None if ev is None else {
            "status": ev.status.value, "stage": ev.stage.value, "reason": ev.reason,
            "emulated_worlds": list(ev.checked_worlds(Tier.EMULATED)),
            "speedup": ev.speedup, "sol_fraction": ev.sol_fraction,
            "timing_source": ev.timing_source.value if ev.timing_source else None,
        },
    }


def render_candidate(report: dict[str, Any], wide: bool = False):
    """Rich renderables for ``cuco show`` (the source is printed apart: ``print_source``); prompts are
    shown when the report holds them. Stored text is shown as data (``shown``), never as markup."""
    from rich.panel import Panel
    from rich.table import Table

    c, ev = report["candidate"], report["evaluation"]
    out = []
    meta = Table.grid(padding=(0, 2))
    meta.add_column(no_wrap=True)
    meta.add_column(overflow="fold")  # a long unbroken value folds whole, never cut to "…"
    for k, v in (("id", c["id"]), ("run", report["run"]), ("generation", c["generation"]),
                 ("origin", "/".join(x for x in c["origin"].values() if x)), ("parents", ", ".join(c["parent_ids"]) or "-"),
                 ("declared point", _point_key(c["point"])), ("content hash", c["content_hash"][:16])):
        meta.add_row(shown(k, "bold"), shown(v))
    if ev:
        s = report["summary"]
        meta.add_row(shown("observed point", "bold"), shown(ev.get("observed_point") or "-"))
        if ev.get("features"):
            f = ev["features"]
            meta.add_row(shown("code", "bold"), shown(
                f"{'tensor cores' if f['tensor_core'] else 'no tensor cores'}, {f['tensor_core_flop_share']:.0%} of the "
                f"FLOPs through the tile, widest access {f['vector_width_bytes']} B, spills {f['spill_bytes']} B, "
                f"{f['registers']} registers ({f['source']})"))
        meta.add_row(shown("status", "bold"), shown(f"{s['status']} (stage {s['stage']})"))
        if s["reason"]:
            meta.add_row(shown("reason", "bold"), shown(s["reason"]))
        meta.add_row(shown("emulated", "bold"), ", ".join(f"world {w} ✓" for w in s["emulated_worlds"]) or "✗")
        meta.add_row(shown("flags", "bold"), shown("; ".join(ev["flags"]) or "-"))
    out.append(Panel(meta, title=line("candidate ", c["id"])))
    if ev:
        out.extend(evaluation_tables(ev))
        if ev.get("observed"):
            out.append(Panel(shown("\n".join(ev["observed"])), title="what the code was observed to do"))
        if ev["logs"]:
            out.append(Panel(shown(ev["logs"]), title="log (trimmed)"))
    calls = report.get("llm_calls") or []
    if calls:
        out.append(llm_calls_table(calls, f"LLM calls for {c['id']}", wide))
        out.extend(prompt_panels(calls))
    return out


def print_source(source: str) -> None:
    """The source as stored, only with control characters made visible (``source_text``), written
    straight to stdout (not through rich: no padding, wrapping, markup or line numbers), so
    ``cuco show ID --source > kernel.cu`` gives an honest file back byte for byte."""
    import sys

    from cuco.shown_text import source_text

    text = source_text(source)
    if sys.stdout.isatty() and not text.endswith("\n"):
        text += "\n"  # the shell prompt on a line of its own; a file gets the bytes as stored
    sys.stdout.write(text)
    sys.stdout.flush()


def _point_key(point: Optional[dict]) -> str:
    if not point:
        return "-"
    return (f"{point['backend']}/{point['placement']}/{point['sync_scope']}/{point['issuer']}/"
            f"{point['chunk_bytes'] // 1024}K/{point['comm_ctas']}")


def evaluation_tables(ev: dict) -> list:
    """Build stats per kernel and timings per shape of an evaluation (as ``model_dump(mode="json")``)."""
    return [t for t in (build_table(ev), timings_table(ev)) if t is not None]


def build_table(ev: dict):
    from cuco.terminal import FIGURE, TEXT, table

    b = ev.get("build")
    if not b or not b["kernels"]:  # a failed build has no kernels to show
        return None
    t = table(title=shown(f"build {b['arch']} ({b['comm_backend']}){' cached' if b['cached'] else ''}"))
    t.add_column("kernel", **TEXT)
    for col in ("registers", "smem B", "stack B", "spills", "MMA\n(SASS)"):
        t.add_column(col, **FIGURE)
    for k in b["kernels"]:
        t.add_row(shown(k["name"]), str(k["registers"]), str(k["smem_bytes"]), str(k["stack_bytes"]),
                  str(k["spill_stores"] + k["spill_loads"]), "-" if k.get("mma") is None else str(k["mma"]))
    return t


def timings_table(ev: dict):
    from cuco.terminal import FIGURE, TEXT, WORD, table

    if not ev["timings"]:
        return None
    simulated = any(tm["source"] == "simulated" for tm in ev["timings"])
    t = table(title="timings per shape", caption=SIMULATED_NOTE if simulated else None)
    t.add_column("shape", **TEXT)
    for col, kw in (("world", FIGURE), ("source", WORD), ("time µs", FIGURE), ("bound µs", FIGURE),
                    ("baseline µs", FIGURE), ("SOL", FIGURE), ("speedup", FIGURE)):
        t.add_column(col, **kw)
    for tm in ev["timings"]:
        sol = tm["bound_seconds"] / tm["seconds"] if tm["seconds"] > 0 else 0.0
        speedup = tm["baseline_seconds"] / tm["seconds"] if tm["seconds"] > 0 else 0.0
        t.add_row(shown(tm["shape"]), str(tm["world"]), shown(tm["source"]), f"{tm['seconds'] * 1e6:.1f}",
                  f"{tm['bound_seconds'] * 1e6:.1f}", f"{tm['baseline_seconds'] * 1e6:.1f}", f"{sol:.3f}",
                  f"{speedup:.3f}x")
    return t


# --- LLM calls and usage (`cuco show`, `cuco llm`) ---------------------------------------------

def llm_call_row(call: LLMCall, with_prompts: bool = False) -> dict[str, Any]:
    """One call as plain data; the prompt and response only when asked for (they can be 300k chars)."""
    row = call.model_dump(mode="json", exclude={"prompt", "response"})
    row["label"] = f"{call.provider}:{call.model}"
    if with_prompts:
        row |= {"prompt": call.prompt, "response": call.response}
    return row


def llm_calls_table(rows: list[dict[str, Any]], title: str, wide: bool = False):
    """One row per call, each failed call's error in full under the table (errors run long: a
    column would fold them to shreds); ``wide`` puts the error, prompt size, latency and retries in
    the table instead."""
    from rich.console import Group

    from cuco.terminal import FIGURE, TEXT, WORD, add_id_column, table

    t = table(title=shown(title))
    ids = [shown(r["candidate_id"] or "-") for r in rows]
    t.add_column("#", **FIGURE)
    t.add_column("when\n(UTC)", **WORD)
    t.add_column("purpose", **TEXT)
    add_id_column(t, "candidate", ids)
    t.add_column("model", **TEXT)
    extra = (("prompt\nchars", "prompt_chars"), ("latency\ns", "latency_s"), ("retries", "retries")) if wide else ()
    for col in ("tokens\nin", "tokens\nout", "cost $", *(c for c, _ in extra)):
        t.add_column(col, **FIGURE)
    t.add_column("error" if wide else "ok", **(TEXT if wide else WORD))
    for i, (r, cid) in enumerate(zip(rows, ids), 1):
        more = [f"{r[k]:.2f}" if k == "latency_s" else str(r[k]) for _, k in extra]
        failed = shown(r["error"], "red") if wide else shown("✗", "red")
        t.add_row(str(i), shown(str(r["created_at"])[11:19]), shown(r["purpose"]), cid, shown(r["label"]),
                  str(r["tokens_in"]), str(r["tokens_out"]), f"{r['cost_usd']:.4f}", *more,
                  failed if r["error"] else ("-" if wide else "✓"))
    errors = [] if wide else [line((f"#{i} failed: ", "red"), r["error"]) for i, r in enumerate(rows, 1) if r["error"]]
    return Group(t, *errors)


def llm_usage_tables(usage: dict[str, Any], title: str) -> list:
    """The run's totals, then one row per model and per purpose."""
    from cuco.terminal import FIGURE, TEXT, table as house_table

    out = []
    for key, groups in (("model", usage["by_model"]), ("purpose", usage["by_purpose"])):
        table = house_table(title=shown(f"{title}: by {key}") if key == "model" else None)
        table.add_column(key, **TEXT)
        for col in ("calls", "failed", "retries", "tokens\nin", "tokens\nout", "longest\nprompt", "cost $",
                    "latency\ns"):
            table.add_column(col, **FIGURE)
        rows = [(shown(name), g) for name, g in groups.items()]
        if key == "model":
            rows.append((shown("total", "bold"), usage))
        for name, g in rows:
            table.add_row(name, str(g["calls"]),
                          f"[red]{g['failed']}[/]" if g["failed"] else "0", str(g["retries"]), str(g["tokens_in"]),
                          str(g["tokens_out"]), str(g["max_prompt_chars"]), f"{g['cost_usd']:.4f}",
                          f"{g['latency_s']:.1f}")
        out.append(table)
    return out


def prompt_panels(rows: list[dict[str, Any]]) -> list:
    """Prompt and response of each call that carries them, as data (never rich markup)."""
    from rich.panel import Panel

    out = []
    for i, r in enumerate(rows, 1):
        if "prompt" not in r:
            continue
        head = f"#{i} {r['purpose']} {r['label']} ({r['id']})"
        out.append(Panel(shown(r["prompt"]), title=shown(f"{head}: prompt"), title_align="left"))
        reply = r["response"] or f"(no response: {r['error'] or 'empty'})"
        out.append(Panel(shown(reply), title=shown(f"{head}: response"), title_align="left"))
    return out


def usage_line(usage: dict[str, Any]) -> Optional[str]:
    """One line under the leaderboard: what the LLMs cost this run (None when none was called)."""
    if not usage["calls"]:
        return None
    models = ", ".join(f"{m} {g['calls']}" for m, g in usage["by_model"].items())
    return (f"LLM: {usage['calls']} calls ({usage['failed']} failed; {models}), {usage['tokens_in']} tokens in, "
            f"{usage['tokens_out']} out, ${usage['cost_usd']:.4f}")


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)
