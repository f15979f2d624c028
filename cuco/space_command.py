"""``cuco space``: show a spec's design space on a hardware profile, or check one design point.
The data comes from ``cuco.space_report``; this module renders it with rich."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from cuco.report import to_json
from cuco.shown_text import line, shown
from cuco.space_report import point_report, space_report
from cuco.spec_loader import load_spec
from cuco.terminal import FIGURE, TEXT, WORD, table
from design_space import get_pattern, get_profile

SIMULATED_TIMES = ("every time here is SIMULATED: an analytic-model estimate (roofline + alpha-beta collectives, "
                   "design_space/model.py, docs/model.md) for code with the templates' features (tensor-core "
                   "tile), not a measurement")
_NUMERIC = {"chunk_bytes": "bytes per transfer chunk (and per signal); keys write KiB",
            "comm_ctas": "CTAs (one SM each) given to communication; each SM taken stretches compute by "
                         "N_SM / (N_SM - s)"}


def run_space(spec_path: Path, *, hardware: Optional[str], world: Optional[int], shape: Optional[str], top: int,
              point: Optional[str], json_out: bool, console) -> None:
    spec = load_spec(spec_path)
    hw = get_profile(hardware or spec.hardware)
    pattern = get_pattern(spec.pattern)
    n = world or spec.target_world
    if point is not None:
        report = point_report(point, spec, pattern, hw, n)
        if json_out:
            print(to_json(report))
        else:
            _print_point(report, console)
        return
    report = space_report(spec, pattern, hw, n, shape, top)
    if json_out:
        print(to_json(report))
        return
    for renderable in space_renderables(report):
        console.print(renderable)


def space_renderables(r: dict[str, Any]) -> list:
    # the spec's name, description and shape names are the spec author's text: shown as data
    head = line(("cuco space ", "bold"), f"{r['spec']} ({r['pattern']}) on {r['hardware']}, "
                f"world {r['world']}, {r['dtype']}")
    out: list = [head, shown(r["description"], "dim")]
    if r["restrictions"]:
        out.append(shown(f"spec restrictions: {r['restrictions']}", "dim"))
    out += [_dimensions_table(r), _rules_table(r)]
    out.append(_exclusions(r))
    out.append(_valid_line(r))
    out += [_bounds_table(r), _top_table(r)]
    return out


def _dimensions_table(r: dict[str, Any]):
    t = table(title=f"dimensions: values the {r['pattern']} templates render")
    t.add_column("dimension", **WORD)
    t.add_column("value", **TEXT)
    t.add_column("meaning on the hardware", **TEXT)
    for dim in r["dimensions"]:
        skipped = f" [dim](not rendered: {', '.join(dim['not_rendered'])})[/]" if dim["not_rendered"] else ""
        if dim["name"] in _NUMERIC:
            t.add_row(dim["name"], " ".join(v["value"] for v in dim["values"]), _NUMERIC[dim["name"]] + skipped)
            continue
        for i, v in enumerate(dim["values"]):
            last = i == len(dim["values"]) - 1
            t.add_row(dim["name"] if i == 0 else "", v["value"], v["doc"] + (skipped if last else ""),
                      end_section=last)
    return t


def _rules_table(r: dict[str, Any]):
    t = table(title=f"rules on {r['hardware']}: points of the {r['product']}-point product each removes")
    t.add_column("rule", **WORD)  # the longest rule name leaves 18 columns for why at 80
    t.add_column("removes", **FIGURE)
    t.add_column("only it", **FIGURE)
    t.add_column("why", **TEXT)
    for rule in r["rules"]:
        name = rule["name"] + ("\n[dim](hardware)[/]" if rule["needs_hardware"] else "")
        t.add_row(name, str(rule["removes"]), str(rule["only_this_rule"]), rule["reason"])
    return t


def _exclusions(r: dict[str, Any]):
    from rich.text import Text

    if not r["family_exclusions"]:
        return Text(f"family exclusions: none (the {r['pattern']} templates render every point the rules allow)")
    t = table(title=f"family exclusions: points no rule breaks that the {r['pattern']} templates do not render")
    for col, kw in (("removes", FIGURE), ("example", TEXT), ("why", TEXT)):
        t.add_column(col, **kw)
    for g in r["family_exclusions"]:
        t.add_row(str(g["count"]), g["example"], g["reason"])
    return t


def _valid_line(r: dict[str, Any]):
    from rich.text import Text

    parts = []
    for b in r["valid_per_backend"]:
        if not b["rendered"]:
            continue
        why = f" (removed by {', '.join(b['removed_by'])})" if b["removed_by"] else ""
        parts.append(f"{b['backend']} {b['count']}{why}")
    absent = [b["backend"] for b in r["valid_per_backend"] if not b["rendered"]]
    tail = f"; not rendered by the templates: {', '.join(absent)}" if absent else ""
    text = Text.assemble(("valid points: ", "bold"), (str(r["valid"]), "bold green"),
                         f" of {r['product']} (removed by rules {r['removed_by_rules']}); per backend: "
                         f"{', '.join(parts) or 'none'}{tail}")
    return text


def _bounds_table(r: dict[str, Any]):
    t = table(title=f"bound per shape at world {r['world']} (simulated µs)", caption=SIMULATED_TIMES)
    for col, kw in (("shape", TEXT), ("T_comp", FIGURE), ("T_comm", FIGURE), ("bound", FIGURE),
                    ("host-\ndriven\nbaseline", FIGURE), ("speedup\nceiling", FIGURE),
                    ("best valid point\non this shape", TEXT), ("its\nspeedup", FIGURE)):
        t.add_column(col, **kw)
    for s in r["shapes"]:
        written = s.get("dims_written", {})  # a dim of the world size shows its value here and its expression
        dims = " ".join(f"{k}={v}" + (f" ({written[k]})" if isinstance(written.get(k), str) else "")
                        for k, v in s["dims"].items())
        bound = f"{s['bound_us']:.1f} {'comp' if s['bound_by'] == 'compute' else 'comm'}"
        t.add_row(line(f"{s['shape']}\n", (dims, "dim")), f"{s['t_comp_us']:.1f}", f"{s['t_comm_us']:.1f}", bound, f"{s['baseline_us']:.1f}",
                  f"{s['ceiling']:.3g}x", shown(s["best_point"] or "-"), f"{s['best_speedup']:.3g}x"
                  if s["best_speedup"] else "-")
    return t


def _top_table(r: dict[str, Any]):
    top = r["top"]
    t = table(title=shown(f"best {len(top['points'])} points by score (geomean speedup over the spec's shapes)"),
              caption=SIMULATED_TIMES)
    for col, kw in (("#", FIGURE), ("design point", TEXT), ("score", FIGURE), ("SOL\ngeomean", FIGURE),
                    (shown(f"µs on\n{top['shape']}"), FIGURE), ("its\nspeedup", FIGURE), ("its\nSOL", FIGURE)):
        t.add_column(col, **kw)
    for p in top["points"]:
        t.add_row(str(p["rank"]), p["point"], f"{p['score']:.3g}x", f"{p['sol']:.3g}", f"{p['simulated_us']:.1f}",
                  f"{p['speedup']:.3g}x", f"{p['shape_sol']:.3g}")
    return t


def _print_point(r: dict[str, Any], console) -> None:
    console.print(f"[green]valid[/]: {r['point']} for {r['pattern']} on {r['hardware']}, world {r['world']}")
    t = table(title="simulated estimate per shape", caption=SIMULATED_TIMES)
    for col, kw in (("shape", TEXT), ("simulated µs", FIGURE), ("bound µs", FIGURE), ("baseline µs", FIGURE),
                    ("speedup", FIGURE), ("SOL", FIGURE)):
        t.add_column(col, **kw)
    for s in r["shapes"]:
        t.add_row(shown(s["shape"]), f"{s['simulated_us']:.1f}", f"{s['bound_us']:.1f}", f"{s['baseline_us']:.1f}",
                  f"{s['speedup']:.3g}x", f"{s['sol']:.3g}")
    console.print(t)


def _fmt(x: Optional[float], digits: int = 1, suffix: str = "") -> str:
    return "-" if x is None else f"{x:.{digits}f}{suffix}"
