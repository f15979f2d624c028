"""cuco: co-design computation and communication in multi-GPU CUDA kernels.

The public API is imported lazily so that ``import cuco`` (and ``cuco --help``) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["EvolveOptions", "RunSummary", "evolve", "load_spec"]

if TYPE_CHECKING:
    from design_space import KernelSpec
    from cuco.loop import RunSummary


def evolve(spec: "KernelSpec | str", run_dir: Any = None, *, progress: Any = None, **options: Any) -> "RunSummary":
    """Search (or resume) ``spec``: a ``KernelSpec`` built in code, or the path of a spec folder.

    ``run_dir``: where the run's database and checkpoints live (default ``runs/<spec name>``).
    ``progress``: a callable given every ``cuco.loop.Event`` (``kind``: prepare, resume,
    generation, evaluated, stopped, complete; ``message``; for ``evaluated`` the ``candidate`` and
    its ``evaluation``); ``None`` prints one line per event to stderr when it is a terminal and
    stays silent otherwise; ``False`` is always silent. Other options are those of
    ``cuco.loop.EvolveOptions`` (generations, population, workers, seed, max_wall_s, db_url,
    run_name, seed_points, llm, gpu, ...). Returns a ``RunSummary``: ``print(summary)`` is a short
    report, ``summary.best`` the best correct (Candidate, Evaluation) or None.
    """
    from pathlib import Path

    from cuco.loop import EvolveOptions, evolve as _evolve
    from cuco.spec_loader import check_spec, load_spec

    if not hasattr(spec, "pattern"):
        spec = load_spec(spec)  # type: ignore[arg-type]
    check_spec(spec)  # type: ignore[arg-type]
    run_dir = Path(run_dir) if run_dir is not None else Path("runs") / spec.name  # type: ignore[union-attr]
    return _evolve(spec, EvolveOptions(run_dir=run_dir, **options), _progress(progress))  # type: ignore[arg-type]


def _progress(progress: Any):
    """The event callback for ``progress`` (see ``evolve``)."""
    import sys

    if callable(progress):
        return progress
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return lambda event: None

    def line(event: Any) -> None:
        if event.kind == "evaluated" and event.evaluation is not None:
            ev, cand = event.evaluation, event.candidate
            speed = f" {ev.speedup:.2f}x" if ev.speedup else ""
            print(f"cuco: gen {cand.generation} {cand.id} {ev.status.value}{speed}", file=sys.stderr, flush=True)
        else:
            print(f"cuco: {event.message}", file=sys.stderr, flush=True)
    return line


def __getattr__(name: str) -> Any:
    if name in ("EvolveOptions", "RunSummary"):
        from cuco import loop
        return getattr(loop, name)
    if name == "load_spec":
        from cuco.spec_loader import load_spec
        return load_spec
    raise AttributeError(name)
