"""``cuco evolve``: the main job with rich progress and a final leaderboard. Event messages, reasons
and names carry stored text (LLM replies, candidate logs): they are shown as data (``shown_text``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence

from design_space import DesignPoint, Status
from cuco.agent_wiring import LLMSettings, configured_names, enable_hint
from cuco.loop import Event, EvolveOptions, evolve
from cuco.report import leaderboard_rows, leaderboard_table, to_json
from cuco.shown_text import line, shown
from cuco.spec_loader import load_spec
from cuco.terminal import is_wide


class _Progress:
    """Prints one line per evaluated candidate and keeps a per-generation progress bar."""

    def __init__(self, console, quiet: bool) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        self.console, self.quiet = console, quiet
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=True, disable=quiet)
        self.task = None

    def __call__(self, e: Event) -> None:
        if self.quiet:
            return
        if e.kind == "generation":
            if self.task is not None:
                self.progress.remove_task(self.task)
            self.task = self.progress.add_task(f"generation {e.generation}", total=max(e.total, 1))
            self.progress.start()
        elif e.kind == "evaluated" and e.evaluation is not None and e.candidate is not None:
            self._line(e)
            if self.task is not None:
                self.progress.advance(self.task)
        else:
            self.progress.stop()
            self.console.print(shown(e.message, "dim"))

    def _line(self, e: Event) -> None:
        ev, c = e.evaluation, e.candidate
        point = ev.observed_point or (c.point.key() if c.point else "-")
        if ev.status is Status.OK and ev.timings and ev.speedup is not None:
            # the same figures as the leaderboard and `cuco space` (design_space.figures)
            compute = f", {ev.features.kind}" if ev.features else ""
            detail = (f"speedup {ev.speedup:.3g}x  SOL {ev.sol_fraction:.3g}  geomean over shapes "
                      f"({ev.timing_source.value}{compute})")
        else:
            detail = " ".join(ev.reason.split())[:90]  # one line, whatever the reason holds
        color = "green" if ev.status is Status.OK else "red"
        self.progress.console.print(line(f"gen {c.generation:>2}  {c.id}  {point:<48} ",
                                         (f"{ev.status.value:<16}", color), f" {detail}"))

    def stop(self) -> None:
        self.progress.stop()


def run_evolve(spec_path: Path, *, run_dir: Optional[Path], run_name: Optional[str], db: Optional[str],
               generations: int, population: int, workers: Optional[int], seed: int, points: Sequence[str],
               max_wall: Optional[float], top: int, json_out: bool, keep_work: bool, console,
               gpu: str = "auto", llm: Optional[LLMSettings] = None, launcher: str = "local",
               launcher_address: Optional[str] = None, gpus: str = "", config_file: Optional[Path] = None,
               ahead: int = 0) -> int:
    """Run the search and print its leaderboard; the exit status: 0, or 1 when candidates were
    evaluated and none is correct (the most common reason is said)."""
    spec = load_spec(spec_path)
    seed_points = tuple(DesignPoint.parse_key(p) for p in points)
    options = EvolveOptions(run_dir=run_dir or Path("runs") / spec.name, run_name=run_name, db_url=db,
                            generations=generations, population=population,
                            workers=workers or max(1, os.cpu_count() or 1), seed=seed, max_wall_s=max_wall,
                            keep_work=keep_work, seed_points=seed_points, gpu=gpu, llm=llm or LLMSettings(),
                            launcher=launcher, launcher_address=launcher_address, gpus=gpus,
                            config_file=str(config_file) if config_file else None, ahead=ahead)
    if not json_out:
        console.print(line(("cuco evolve", "bold"), f" {spec.name} ({spec.pattern}) on {spec.hardware}, world "
                           f"{spec.target_world} -> {options.run_dir}"))
        names = configured_names(options.llm.names)
        console.print(shown('proposers: ' + ', '.join(names) + ' + design-space templates' if names else enable_hint(),
                            "dim"))
    progress = _Progress(console, quiet=json_out)
    try:
        summary = evolve(spec, options, on_event=progress)
    finally:
        progress.stop()
    from candidates_db import Store
    with Store.open(summary.database) as store:
        board = store.leaderboard(summary.run.name)
        rows = leaderboard_rows(board[:top], spec)
    failed = _all_failed(board)
    if json_out:
        print(to_json({"run": summary.run.name, "status": summary.run.status.value, "note": summary.run.note,
                       "database": summary.database, "status_counts": summary.status_counts, "leaderboard": rows,
                       **({"all_failed": failed} if failed else {})}))
        return 1 if failed else 0
    console.print(leaderboard_table(rows, f"leaderboard: {summary.run.name} ({summary.run.status.value})",
                                    wide=is_wide(console)))
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.status_counts.items()) if v)
    console.print(shown(f"{summary.evaluated_now} evaluated now in {summary.wall_s:.0f} s; stored: {counts}"))
    if summary.best:
        best, ev = summary.best
        point = best.point.key() if best.point else "(no declared point)"
        console.print(shown(f"best: {best.id} {point}, {ev.speedup or 0:.3f}x geomean speedup over the host-driven "
                            f"baseline ({ev.timing_source.value if ev.timing_source else 'untimed'})"))
        console.print(shown(f"details: cuco show {best.id} --run {options.run_dir}"))
        console.print(shown(f"its source: cuco show {best.id} --run {options.run_dir} --source > {best.id}.cu"))
    if failed:
        import sys
        from cuco.shown_text import visible
        print(visible(f"error: {failed} -- fix: look at one with `cuco show ID --run {options.run_dir}`; a reference "
                      "or spec problem fails every candidate alike"), file=sys.stderr)
        return 1
    return 0


def _all_failed(board) -> str:
    """When candidates were evaluated and none is ok: how many, and their most common reason ('' otherwise)."""
    from collections import Counter

    done = [ev for _, ev in board if ev is not None]
    if not done or any(ev.status is Status.OK for ev in done):
        return ""
    reasons = Counter(f"{ev.status.value}: {ev.reason.split(' (', 1)[0][:160]}" for ev in done)
    reason, n = reasons.most_common(1)[0]
    return f"all {len(done)} evaluated candidates failed; the most common reason ({n} of them): {reason}"
