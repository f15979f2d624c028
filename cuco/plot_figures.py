"""Drawing the plots of ``cuco.plots`` with matplotlib (Agg), from their JSON data alone, so a figure
draws exactly the numbers its JSON twin holds.

SVG text is drawn as glyph paths and the SVG's comments (where matplotlib repeats each text) are
dropped: a run name is stored text, and no stored text becomes SVG markup. Ids are salted with a
fixed string and the date left out, so the same data gives the same bytes.
"""

from __future__ import annotations

import io
import re
import threading
import warnings
from typing import Any, Callable, Optional

from cuco.shown_text import visible

DPI = 150
SIZE = (8.0, 4.5)  # inches: 1200 x 675 pixels at DPI
RC = {"svg.fonttype": "path", "svg.hashsalt": "cuco-plots", "font.size": 9.0}
METADATA = {"svg": {"Date": None}, "png": {}}
OK_COLOUR, BEST_COLOUR, NOTE_COLOUR = "#2ca02c", "#1f4e9c", "#555555"
STRIP_COLOURS = {
    "unevaluated": "#bbbbbb", "rejected": "#7f7f7f", "build_failed": "#d62728", "emulation_failed": "#ff7f0e",
    "crashed": "#e377c2", "timeout": "#8c564b", "wrong_result": "#9467bd", "ok, no score": "#17becf",
    "ok, simulated (not mixed with measured)": "#98df8a",
}
RASTER_ABOVE = 2000  # markers in one series beyond which the SVG embeds them as an image
_LOCK = threading.Lock()  # rc_context changes process-wide settings: one figure at a time
_COMMENT = re.compile(rb"<!--.*?-->\n?", re.S)  # matplotlib escapes "--" inside, so this cannot overrun


def figure_bytes(name: str, data: dict[str, Any], fmt: str) -> bytes:
    """The figure of plot ``name`` from its data, as ``fmt`` ("svg" or "png") bytes."""
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    buf = io.BytesIO()
    # The default style, whatever the user's matplotlibrc says: the same figure everywhere.
    with _LOCK, matplotlib.style.context("default"), matplotlib.rc_context(RC), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")  # run names in any script
        fig = Figure(figsize=SIZE, layout="constrained")
        FigureCanvasAgg(fig)
        fig.suptitle(_title(data), parse_math=False)
        DRAW[name](fig, data)
        fig.savefig(buf, format=fmt, dpi=DPI, metadata=METADATA[fmt])
    out = buf.getvalue()
    return _COMMENT.sub(b"", out) if fmt == "svg" else out


def _title(data: dict[str, Any], limit: int = 60) -> str:
    run = visible(data["run"])
    return f"{data['title']}: {run if len(run) <= limit else run[:limit - 1] + '…'}"


def _text(ax: Any, x: float, y: float, s: str, **kw: Any) -> None:
    ax.text(x, y, s, transform=ax.transAxes, parse_math=False, **kw)


def _notes(ax: Any, data: dict[str, Any], drawn: bool, keep_ticks: bool = False) -> None:
    """Notes above the axes; with nothing drawn, in the middle of them."""
    if not data["notes"]:
        return
    if drawn:  # above the axes, where no data can hide it
        ax.set_title("\n".join(data["notes"]), loc="left", fontsize=8, color=NOTE_COLOUR, parse_math=False)
    else:
        _text(ax, 0.5, 0.5, "\n".join(data["notes"]), ha="center", va="center", fontsize=11, color=NOTE_COLOUR)
        if keep_ticks:
            return
        ax.set_xticks([])
        ax.set_yticks([])


def _labels(ax: Any, data: dict[str, Any]) -> None:
    ax.set_xlabel(data["x_label"])
    ax.set_ylabel(data["y_label"])


def _integer_x(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def _defined(xs: list[Any], ys: list[Optional[float]]) -> tuple[list[Any], list[float]]:
    pairs = [(x, y) for x, y in zip(xs, ys) if y is not None]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _baseline(ax: Any) -> None:
    ax.axhline(1.0, linestyle=":", color="0.5", linewidth=1, label="baseline (1.0x)")


def _best_over_generations(fig: Any, data: dict[str, Any]) -> None:
    ax = fig.add_subplot()
    _labels(ax, data)
    xs, best = _defined(data["generations"], data["best_so_far"])
    if best:
        ax.step(xs, best, where="post", color=BEST_COLOUR, linewidth=2, label="best so far")
        gx, gy = _defined(data["generations"], data["generation_best"])
        ax.plot(gx, gy, "o", color=OK_COLOUR, label="best of the generation")
        _baseline(ax)
        _integer_x(ax)
        ax.legend(loc="best")
    _notes(ax, data, bool(best))


def _best_over_evaluations(fig: Any, data: dict[str, Any]) -> None:
    ax = fig.add_subplot()
    _labels(ax, data)
    points = data["points"]
    if points:
        ax.scatter([p["index"] for p in points], [p["speedup"] for p in points], s=12, alpha=0.6, color=OK_COLOUR,
                   label="a correct candidate", rasterized=len(points) > RASTER_ABOVE)
        xs, best = _defined(data["index"], data["best_so_far"])
        ax.step(xs, best, where="post", color=BEST_COLOUR, linewidth=2, label="best so far")
        _baseline(ax)
        _integer_x(ax)
        ax.legend(loc="best")
    _notes(ax, data, bool(points))


def _candidates_by_generation(fig: Any, data: dict[str, Any]) -> None:
    main, strip = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    main.set_ylabel(data["y_label"])
    points = data["points"]
    if points:
        main.scatter([p["x"] for p in points], [p["speedup"] for p in points], s=12, alpha=0.6, color=OK_COLOUR,
                     label="correct", rasterized=len(points) > RASTER_ABOVE)
        _baseline(main)
        main.legend(loc="best")
    _notes(main, data, bool(points) or bool(data["strip"]))
    _strip(strip, data)
    gens = [p["generation"] for p in points + data["strip"]]
    if gens:  # whole generation bands, so a lone generation still reads as one
        strip.set_xlim(min(gens) - 0.5, max(gens) + 0.5)
        _integer_x(strip)


def _strip(ax: Any, data: dict[str, Any]) -> None:
    """Candidates with no speedup drawn: one band and one colour per status, below the axis."""
    ax.set_xlabel(data["x_label"])
    ax.set_ylabel("no score")
    ax.set_yticks([])
    ax.set_ylim(len(data["strip_rows"]) - 0.5, -0.5)
    for category, count in data["strip_counts"].items():
        pts = [s for s in data["strip"] if s["category"] == category]
        ax.scatter([s["x"] for s in pts], [s["y"] for s in pts], s=10, color=STRIP_COLOURS[category],
                   label=f"{category} ({count})", rasterized=len(pts) > RASTER_ABOVE)
    if data["strip_counts"]:
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)
    else:
        _text(ax, 0.5, 0.5, "no failures" if data["points"] else "", ha="center", va="center", color=NOTE_COLOUR)


def _coverage(fig: Any, data: dict[str, Any]) -> None:
    import numpy as np

    ax = fig.add_subplot()
    rows, cols = data["rows"], data["columns"]
    grid = np.full((len(rows), len(cols)), np.nan)
    for c in data["cells"]:
        if c["best"] is not None:
            grid[rows.index(c["backend"]), cols.index(c["placement"])] = c["best"]
    if data["cells"] and not np.isnan(grid).all():
        image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", aspect="auto")
        fig.colorbar(image, ax=ax, label=data["colour_label"])
    else:
        ax.imshow(np.zeros_like(grid), cmap="Greys", vmin=0, vmax=1, aspect="auto")
    scored = grid[~np.isnan(grid)]
    span = (float(scored.min()), float(scored.max())) if scored.size else (0.0, 0.0)
    for c in data["cells"]:
        _cell(ax, rows.index(c["backend"]), cols.index(c["placement"]), c, span)
    ax.set_xticks(range(len(cols)), cols, rotation=15)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xticks([j - 0.5 for j in range(1, len(cols))], minor=True)
    ax.set_yticks([i - 0.5 for i in range(1, len(rows))], minor=True)
    ax.grid(which="minor", color="#dddddd", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel(f"{data['column_label']} (cell: candidates tried; best speedup)")
    ax.set_ylabel(data["row_label"])
    _notes(ax, data, bool(data["cells"]), keep_ticks=True)


def _cell(ax: Any, i: int, j: int, cell: dict[str, Any], span: tuple[float, float]) -> None:
    from matplotlib.patches import Rectangle

    if cell["state"] == "scored":
        lo, hi = span
        light = hi > lo and (cell["best"] - lo) / (hi - lo) > 0.6  # dark text on viridis' yellow end
        text, colour = f"n={cell['count']}\n{cell['best']:.2f}x", "black" if light else "white"
    else:
        # tried, no correct candidate (or correct ones with no score drawn): hatched so it reads
        # differently from an untried (blank) cell in colour and in grey print
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#f7f7f7", edgecolor="#e9a0a0",
                               hatch="xx" if cell["state"] == "no_correct" else "..", linewidth=0))
        label = "no correct" if cell["state"] == "no_correct" else "correct, no score"
        text, colour = f"n={cell['count']}\n{label}", "#a01010"
        box = {"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none"}
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color=colour, parse_math=False, bbox=box)
        return
    ax.text(j, i, text, ha="center", va="center", fontsize=7, color=colour, parse_math=False)


def _llm_spend(fig: Any, data: dict[str, Any]) -> None:
    if not data["points"]:
        ax = fig.add_subplot()
        _labels(ax, data)
        _notes(ax, data, False)
        return
    cost, tokens = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    # a cumulative curve starts at zero when the run starts
    t = [0.0] + [p["t"] for p in data["points"]]

    def series(key: str) -> list[float]:
        return [0] + [p[key] for p in data["points"]]

    failed = f", {data['failed']} failed" if data["failed"] else ""
    cost.step(t, series("cost_usd"), where="post", color=BEST_COLOUR, marker=".",
              label=f"{data['calls']} calls{failed}, USD {data['cost_usd']:.4f}")
    cost.set_ylabel(data["y_label"])
    cost.set_ylim(bottom=0)
    cost.legend(loc="upper left")
    tokens.step(t, series("tokens_in"), where="post", label=f"in ({data['tokens_in']})")
    tokens.step(t, series("tokens_out"), where="post", label=f"out ({data['tokens_out']})")
    tokens.set_ylabel(data["tokens_label"])
    tokens.set_xlabel(data["x_label"])
    tokens.set_ylim(bottom=0)
    tokens.legend(loc="upper left", fontsize=7)


DRAW: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "best_over_generations": _best_over_generations,
    "best_over_evaluations": _best_over_evaluations,
    "candidates_by_generation": _candidates_by_generation,
    "coverage": _coverage,
    "llm_spend": _llm_spend,
}
