#!/usr/bin/env python3
"""How the fair model (issue 14) changes the simulated speedups, against the model at a git revision.

    .venv/bin/python benchmarks/model_fairness.py [--rev 0fce729] [--hardware H100] [--no-code]

For every workload of examples/, every shape of its sweep at the spec's target world size, on
one profile: the best simulated speedup over all valid points

- of the OLD model (design_space/{model,collectives,hardware}.py at ``--rev``, loaded read-only
  with ``git show`` into a temporary package) with the "overlap gain <=" figure it printed
  (``best_gain``);
- of the NEW model for a tensor-core candidate (``TENSOR_CORE_TYPICAL``) and for a scalar one
  (``SCALAR_TYPICAL``), with the new model's ceiling and the baseline's own overlap limit
  ((T_comp + T_comm) / max of the two, launches aside).

Then per workload the best score (geometric mean of the per-shape speedups, design_space/figures.py)
over all valid points, old and new. Every time is simulated; nothing runs on a GPU.

Last, per workload, what the code earns (unless ``--no-code``): the new model's best point is
rendered, built and emulated through the real cascade, and the table shows the share of the
workload's FLOPs that ran through the tensor-core tile (the emulator's count), whether the SASS
has MMA instructions, and the score the stage gave the candidate (about 30 s per workload).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import design_space as ds  # noqa: E402
from design_space.code_features import SCALAR_TYPICAL, TENSOR_CORE_TYPICAL  # noqa: E402
from design_space.figures import geomean  # noqa: E402
from design_space.model import ShapeModel  # noqa: E402

MODULES = ("hardware", "collectives", "model")  # in import order
OLD_REV = "0fce729"  # the last commit before the fair model and the tensor-core tile


def load_old_model(rev: str, folder: Path):
    """The model at ``rev`` as package ``old_model`` (its own hardware profiles and collectives)."""
    package = folder / "old_model"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in MODULES:
        text = subprocess.run(["git", "show", f"{rev}:design_space/{name}.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        for other in MODULES:
            text = text.replace(f"design_space.{other} ", f"old_model.{other} ")
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(folder))
    return importlib.import_module("old_model.hardware"), importlib.import_module("old_model.model")


def load_specs():
    for file in sorted((ROOT / "examples").glob("*/spec.py")):
        spec = importlib.util.spec_from_file_location(f"_fairness_{file.parent.name}", file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module.SPEC


def shape_rows(spec, hw, old_hw, old_model):
    """Per shape: old best speedup and printed gain, new best (tensor core, scalar), ceilings;
    plus every point's speedups per shape (for the scores)."""
    pattern, world, dtype = ds.get_pattern(spec.pattern), spec.target_world, spec.dtype
    points = ds.valid_points(pattern, hw, spec.restrictions)
    rows, per_point = [], {"old": [], "tc": [], "scalar": []}
    for case in spec.shapes:
        cost = pattern.cost(case.at(world), world, dtype)
        old_base = old_model.baseline_time(cost, world, old_hw, dtype.value)
        old = [old_base / old_model.simulate(cost, p, world, old_hw, dtype.value) for p in points]
        old_gain = old_model.estimate(cost, points[0], world, old_hw, dtype.value).best_gain
        new = {}
        for key, features in (("tc", TENSOR_CORE_TYPICAL), ("scalar", SCALAR_TYPICAL)):
            shape = ShapeModel(cost, world, hw, dtype.value, features)
            new[key] = [shape.baseline / shape.simulate(p) for p in points]
        overlap = (shape.baseline_comp + shape.baseline_comm) / max(shape.baseline_comp, shape.baseline_comm)
        rows.append((spec.name, case.name, max(old), old_gain, max(new["tc"]), max(new["scalar"]), shape.ceiling,
                     overlap))
        per_point["old"].append(old)
        per_point["tc"].append(new["tc"])
        per_point["scalar"].append(new["scalar"])
    scores = {k: max(geomean(list(col)) for col in zip(*v)) for k, v in per_point.items()}
    return rows, scores


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default=OLD_REV, help=f"git revision of the old model (default {OLD_REV})")
    ap.add_argument("--hardware", default="H100")
    ap.add_argument("--no-code", action="store_true", help="skip emulating each workload's best render")
    args = ap.parse_args()
    hw = ds.get_profile(args.hardware)
    with tempfile.TemporaryDirectory() as tmp:
        old_hw_module, old_model = load_old_model(args.rev, Path(tmp))
        old_hw = old_hw_module.get_profile(args.hardware)
        print(f"simulated best speedup over all valid points, {hw.name}, target world of each spec; "
              f"old = model at {args.rev}\n")
        head = (f"{'workload':<22}{'shape':<24}{'old best':>9}{'old gain<=':>11}{'new TC':>8}{'new scalar':>11}"
                f"{'ceiling':>9}{'overlap':>9}")
        print(head)
        print("-" * len(head))
        scores, over_old, over_new = [], 0, 0
        for spec in load_specs():
            rows, score = shape_rows(spec, hw, old_hw, old_model)
            for name, shape, old, gain, tc, scalar, ceiling, overlap in rows:
                over_old += old > gain * (1 + 1e-9)
                over_new += max(tc, scalar) > ceiling * (1 + 1e-9)
                print(f"{name:<22}{shape:<24}{old:>8.3f}x{gain:>10.3f}x{tc:>7.3f}x{scalar:>10.3f}x"
                      f"{ceiling:>8.3f}x{overlap:>8.3f}x")
            scores.append((spec.name, score))
        total = sum(len(s.shapes) for s in load_specs())
        print(f"\nshapes whose best speedup exceeds the printed limit: old {over_old} of {total} "
              f"(vs its 'overlap gain <='), new {over_new} of {total} (vs the ceiling)\n")
        print(f"{'workload':<22}{'old score':>10}{'new TC score':>14}{'new scalar score':>18}   (best geomean speedup)")
        for name, s in scores:
            print(f"{name:<22}{s['old']:>9.3f}x{s['tc']:>13.3f}x{s['scalar']:>17.3f}x")
    if not args.no_code:
        code_rows(hw)
    return 0


def code_rows(hw) -> None:
    """Each workload's best point (tensor-core assumption) through the real cascade."""
    import kernels  # noqa: F401,PLC0415  (registers the renderers)
    from evaluator.cascade import Evaluator, EvaluatorConfig  # noqa: PLC0415

    print(f"\n{'workload':<22}{'best point (model)':<50}{'status':>8}{'TC FLOP share':>15}{'SASS MMA':>10}"
          f"{'score':>8}")
    from cuco.spec_loader import load_spec  # noqa: PLC0415  (sets the spec's reference up as a run does)

    with tempfile.TemporaryDirectory() as cache:
        for folder in sorted(p.parent for p in (ROOT / "examples").glob("*/spec.py")):
            spec = load_spec(folder)
            pattern = ds.get_pattern(spec.pattern)
            best = max(ds.valid_points(pattern, hw, spec.restrictions), key=lambda p: _tc_score(spec, pattern, hw, p))
            ev = Evaluator(spec, EvaluatorConfig(cache_dir=Path(cache)))
            ev.prepare()
            result = ev.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=pattern.render(best), point=best))
            f = result.features
            mma = sum(k.mma or 0 for k in result.build.kernels) if result.build else 0
            share = f"{f.tensor_core_flop_share:.3f}" if f else "-"
            score = f"{result.speedup:.3f}x" if result.speedup else "-"
            print(f"{spec.name:<22}{best.key():<50}{result.status.value:>8}{share:>15}{mma:>10}{score:>8}")


def _tc_score(spec, pattern, hw, point) -> float:
    speedups = []
    for case in spec.shapes:
        world = spec.target_world
        shape = ShapeModel(pattern.cost(case.at(world), world, spec.dtype), world, hw, spec.dtype.value,
                           TENSOR_CORE_TYPICAL)
        speedups.append(shape.baseline / shape.simulate(point))
    return geomean(speedups)


if __name__ == "__main__":
    sys.exit(main())
