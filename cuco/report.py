"""Rows and reports of what a run stored: the leaderboard and one candidate's details, as
plain data (for ``--json``) and as rich renderables (for the terminal)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Optional

from design_space import Candidate, Evaluation, KernelSpec, Status, Tier
from design_space.llm import LLMCall

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
                    # Folds first when the terminal is narrow: the point and the figures matter more.
                    ("origin", {"overflow": "fold", "min_width": 12}), ("status", {"no_wrap": True}), ("emulated", {"no_wrap": True}),
                    (f"{label} µs\n{shape}", right), ("bound µs", right), ("SOL", right),
                    ("speedup\ngeomean", right)):
        table.add_column(col, **kw)
    for r in rows:
        ok = r["status"] == Status.OK.value
        worlds = ",".join(str(w) for w in r["emulated_worlds"])
        table.add_row(
            str(r["rank"]), r["id"], str(r["generation"]), r["point"] or "-", _escape(r["origin"]),
            f"[green]{r['status']}[/]" if ok else f"[red]{r['status']}[/]",
            f"✓ w={worlds}" if worlds else "✗",
            _fmt(r["time_us"]), _fmt(r["bound_us"]), _fmt(r["sol"], 3), _fmt(r["speedup"], 3, "x"),
        )
    return table


def _fmt(x: Optional[float], digits: int = 1, suffix: str = "") -> str:
    return "-" if x is None else f"{x:.{digits}f}{suffix}"


def _escape(text: str) -> str:
    from rich.markup import escape
    return escape(text)


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


def render_candidate(report: dict[str, Any], with_source: bool):
    """Rich renderables for ``cuco show``; prompts are shown when the report holds them."""
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.table import Table
    from rich.text import Text

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
            out.append(Panel(Text(ev["logs"]), title="log (trimmed)"))  # Text: brackets in logs are not markup
    calls = report.get("llm_calls") or []
    if calls:
        out.append(llm_calls_table(calls, f"LLM calls for {c['id']}"))
        out.extend(prompt_panels(calls))
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


# --- LLM calls and usage (`cuco show`, `cuco llm`) ---------------------------------------------

def llm_call_row(call: LLMCall, with_prompts: bool = False) -> dict[str, Any]:
    """One call as plain data; the prompt and response only when asked for (they can be 300k chars)."""
    row = call.model_dump(mode="json", exclude={"prompt", "response"})
    row["label"] = f"{call.provider}:{call.model}"
    if with_prompts:
        row |= {"prompt": call.prompt, "response": call.response}
    return row


def llm_calls_table(rows: list[dict[str, Any]], title: str):
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    right = {"justify": "right", "no_wrap": True}
    for col, kw in (("#", right), ("when (UTC)", {"no_wrap": True}), ("purpose", {}), ("candidate", {"no_wrap": True}),
                    ("model", {"overflow": "fold"}), ("prompt chars", right), ("tokens in", right),
                    ("tokens out", right), ("cost $", right), ("latency s", right), ("retries", right),
                    ("error", {"overflow": "fold"})):
        table.add_column(col, **kw)
    for i, r in enumerate(rows, 1):
        table.add_row(str(i), str(r["created_at"])[11:19], _escape(r["purpose"]), r["candidate_id"] or "-",
                      _escape(r["label"]), str(r["prompt_chars"]), str(r["tokens_in"]), str(r["tokens_out"]),
                      f"{r['cost_usd']:.4f}", f"{r['latency_s']:.2f}", str(r["retries"]),
                      f"[red]{_escape(r['error'])}[/]" if r["error"] else "-")
    return table


def llm_usage_tables(usage: dict[str, Any], title: str) -> list:
    """The run's totals, then one row per model and per purpose."""
    from rich.table import Table

    out = []
    for key, groups in (("model", usage["by_model"]), ("purpose", usage["by_purpose"])):
        table = Table(title=f"{title}: by {key}" if key == "model" else None, title_justify="left")
        table.add_column(key, overflow="fold")
        for col in ("calls", "failed", "retries", "tokens in", "tokens out", "max prompt chars", "cost $", "latency s"):
            table.add_column(col, justify="right", no_wrap=True)
        for name, g in list(groups.items()) + ([("[bold]total", usage)] if key == "model" else []):
            table.add_row(name if name == "[bold]total" else _escape(name), str(g["calls"]),
                          f"[red]{g['failed']}[/]" if g["failed"] else "0", str(g["retries"]), str(g["tokens_in"]),
                          str(g["tokens_out"]), str(g["max_prompt_chars"]), f"{g['cost_usd']:.4f}",
                          f"{g['latency_s']:.1f}")
        out.append(table)
    return out


def prompt_panels(rows: list[dict[str, Any]]) -> list:
    """Prompt and response of each call that carries them, as plain text (never rich markup)."""
    from rich.panel import Panel
    from rich.text import Text

    out = []
    for i, r in enumerate(rows, 1):
        if "prompt" not in r:
            continue
        head = f"#{i} {r['purpose']} {r['label']} ({r['id']})"
        out.append(Panel(Text(r["prompt"]), title=Text(f"{head}: prompt"), title_align="left"))
        reply = r["response"] or f"(no response: {r['error'] or 'empty'})"
        out.append(Panel(Text(reply), title=Text(f"{head}: response"), title_align="left"))
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
