"""Load a ``KernelSpec`` from a spec folder or file, and check it against its pattern."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

from pydantic import ValidationError

from design_space import KernelSpec, SpecError, get_pattern, get_profile


def load_spec(path: str | Path) -> KernelSpec:
    """``path`` is a folder holding ``spec.py`` or a ``.py`` file defining ``SPEC = KernelSpec(...)``."""
    p = Path(path)
    file = p / "spec.py" if p.is_dir() else p
    if not file.is_file():
        raise SpecError(f"no spec at {path}", "pass a folder containing spec.py, or a .py file that defines SPEC")
    name = f"cuco_user_spec_{abs(hash(file.resolve()))}"
    folder = str(file.resolve().parent)
    sys.path.insert(0, folder)
    try:
        module_spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
        module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    except ValidationError as e:
        raise SpecError(f"invalid spec in {file}: {_first_error(e)}", "fix the named field of KernelSpec") from None
    except Exception as e:  # the user's file: any error is a spec error
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise SpecError(f"{file} failed to load: {type(e).__name__}: {e} (line {where.lineno})",
                        "fix the spec file so `python " + str(file) + "` runs") from None
    finally:
        sys.path.remove(folder)
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, KernelSpec):
        raise SpecError(f"{file} does not define SPEC = KernelSpec(...)", "add a module-level SPEC to the file")
    if folder not in spec.search_path:
        spec = KernelSpec.model_validate({**spec.model_dump(), "search_path": (*spec.search_path, folder)})
    check_spec(spec)
    return spec


def check_spec(spec: KernelSpec) -> None:
    """Raise ``SpecError`` when the spec does not fit its pattern or hardware."""
    pattern = get_pattern(spec.pattern)
    hw = get_profile(spec.hardware)
    for world in spec.world_sizes:
        problem = hw.world_problem(world)
        if problem:
            raise SpecError(problem, "lower world_sizes or name a bigger topology, e.g. "
                                     f"hardware='{hw.name.split(':')[0]}:2x{hw.gpus_per_node}:ib400'")
    for case in (*spec.shapes, *spec.emulation_shapes):
        missing = [d for d in pattern.dims if d not in case.dims and d not in pattern.optional_flags]
        if missing:
            raise SpecError(f"shape {case.name!r} lacks dimension(s) {missing} of pattern {pattern.name}",
                            f"give every shape the dims {[d for d in pattern.dims if d not in pattern.optional_flags]}")
    checks = [(c, w) for c in spec.shapes for w in spec.world_sizes]
    checks += [(c, w) for c in spec.emulation_shapes for w in spec.emulation_world_sizes]
    for case, world in checks:
        problems = pattern.dim_problems(case.at(world), world)  # a dim of n is checked at each world
        if problems:
            shown = f" ({case.shown(world)})" if case.scales else ""
            raise SpecError(f"shape {case.name!r}{shown} does not fit world size {world}: {'; '.join(problems)}",
                            "change the shape or the world sizes so they divide")


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    return f"{loc}: {err.get('msg', '')}" if loc else err.get("msg", str(e))
