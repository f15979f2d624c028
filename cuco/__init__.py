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


def evolve(spec: "KernelSpec | str", run_dir: Any = None, **options: Any) -> "RunSummary":
    """Search (or resume) ``spec`` — a ``KernelSpec`` built in code or a path to a spec folder.

    Options are those of ``cuco.loop.EvolveOptions`` (generations, population, workers, seed,
    max_wall_s, db_url, run_name, seed_points, ...). Returns a ``RunSummary``.
    """
    from pathlib import Path

    from cuco.loop import EvolveOptions, evolve as _evolve
    from cuco.spec_loader import check_spec, load_spec

    if not hasattr(spec, "pattern"):
        spec = load_spec(spec)  # type: ignore[arg-type]
    check_spec(spec)  # type: ignore[arg-type]
    run_dir = Path(run_dir) if run_dir is not None else Path("runs") / spec.name  # type: ignore[union-attr]
    return _evolve(spec, EvolveOptions(run_dir=run_dir, **options))  # type: ignore[arg-type]


def __getattr__(name: str) -> Any:
    if name in ("EvolveOptions", "RunSummary"):
        from cuco import loop
        return getattr(loop, name)
    if name == "load_spec":
        from cuco.spec_loader import load_spec
        return load_spec
    raise AttributeError(name)
