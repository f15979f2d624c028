"""Before the first candidate: does the user's reference compute what a workload family computes?

``check_workload(path)`` runs the semantic probe (cuco/semantic_probe.py) on gloo at world sizes 2
and 4: the user's own inputs and workload, then every family's canonical reference
(examples/<family>/reference.py) on those same tensors. A family matches when, at every world
size, the user's tensors read as its inputs with global dims on which the worlds agree (a dim
fixed, or in proportion to the world size: ``k`` = 128 at 2 and 256 at 4 is ``"64*n"``, a fixed
slice per rank) and its outputs equal the user's. A family is never picked from a name; when none
matches, the verdict says why for the nearest one (shapes that fit but outputs that differ beat
shapes that fit nothing; a dim the worlds disagree on beats both), in terms a user can act on.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from design_space import dim_expr
from design_space.errors import SpecError
from evaluator.reference import last_lines, launch_jobs
from design_space.patterns import get_pattern, pattern_names

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROBE_TIMEOUT_S = 240.0
# "unscaled": a family computes it at each world size, but a dim neither stays fixed nor follows the
# world; nearer than any family whose outputs differ, so the diagnosis names that dim
_RANK = {"match": 0, "unscaled": 1, "differs": 2, "no_fit": 3}


@dataclass(frozen=True)
class FamilyMatch:
    family: str
    dims: dict  # global dims of the user's workload (sizes, "64*n" for one that grows with the world, flags)
    order: tuple[Optional[int], ...]  # user input index for each family input (None: the family's own)
    variant: dict = field(default_factory=dict)
    unbatched: bool = False  # the user's tensors lack the family's optional leading batch axis (batch 1)
    transposed: tuple[int, ...] = ()  # user inputs whose last two axes are the family's swapped ([out, in])
    merged: tuple[int, ...] = ()  # (i, j): user inputs i and j are one family input's halves (w1 | w3)


@dataclass(frozen=True)
class SemanticVerdict:
    form: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    match: Optional[FamilyMatch]
    reasons: dict  # family -> (status, (why, ...), distance) for every family tried
    input_names: tuple[str, ...] = ()  # the user's names, where known (forward()'s, then lifted parameters)
    # per world size probed: a KernelBench Model's int constructor arguments (None for any other)
    init_args: tuple[tuple[Optional[int], ...], ...] = ()
    worlds: tuple[int, ...] = (2, 4)

    def named(self, index: int) -> str:
        """User input ``index`` as the user names it (``weight (1)``), or by its index."""
        return f"{self.input_names[index]} ({index})" if index < len(self.input_names) else str(index)

    def nearest(self) -> Optional[str]:
        if not self.reasons:
            return None
        return min(self.reasons, key=lambda f: (_RANK.get(self.reasons[f][0], 3), self.reasons[f][2]))

    def diagnosis(self) -> str:
        """Why no family matches, for the nearest one, in one paragraph."""
        near = self.nearest()
        if near is None:
            return "no workload family was tried"
        status, why, _ = self.reasons[near]
        if status == "unscaled":
            return f"the reference computes {near} at each world size, but " + "; ".join(why)
        lead = ("its inputs read as " if status == "differs" else "its inputs do not read as ") + near + "'s"
        shown = list(dict.fromkeys(why))[:2]
        more = f"; and {len(why) - len(shown)} more like it" if len(why) > len(shown) else ""
        return f"the reference does not compute {near} (the nearest family; {lead}): " + "; ".join(shown) + more


def family_entry(name: str) -> dict:
    """What the probe needs of a family: its canonical reference, base dims, flag values (dims as
    the example writes them; ``at_world`` gives a world's ints)."""
    from cuco.spec_loader import load_spec  # noqa: PLC0415

    folder = EXAMPLES / name
    if not (folder / "reference.py").is_file():
        raise SpecError(f"the {name} family has no canonical reference at {folder / 'reference.py'}",
                        "run cuco from its source checkout (the examples folder holds the references)")
    spec = load_spec(folder)
    shapes = [*spec.emulation_shapes, *spec.shapes]
    pattern = get_pattern(name)
    base = pattern.full_dims(spec.emulation_shapes[0].dims)
    flags = {d: [s.dims[d] for s in shapes if d in s.dims] for d in base}
    for d, values in pattern.optional_flags.items():  # every value, the example's shapes may leave it out
        flags[d] = [*flags[d], *values]
    return {"name": name, "reference_path": str(folder / "reference.py"), "base": base, "flags": flags}


def at_world(entry: dict, world: int) -> dict:
    """``entry`` with its dims' values at ``world`` ranks (an example may write ``"n"``)."""
    flags = {d: sorted({dim_expr.value_at(v, world) for v in vs})[:4] for d, vs in entry["flags"].items()}
    return {**entry, "base": dim_expr.resolve(entry["base"], world), "flags": flags}


def _families(only: Optional[Sequence[str]]) -> list[str]:
    names = list(only) if only else [n for n in pattern_names() if (EXAMPLES / n / "reference.py").is_file()]
    for n in names:
        get_pattern(n)  # an unknown family is a SpecError naming the known ones
    return names


def _probe(jobs: list[dict], work: Path) -> list[dict]:
    """Every world size's probe in one worker launch (torch imported once); a report per job."""
    path = os.pathsep.join([str(EXAMPLES.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    failed, out = launch_jobs("cuco.semantic_probe", jobs, work / "jobs.json", PROBE_TIMEOUT_S, "the reference",
                           lambda j: Path(j["out"]).is_file(), env={"PYTHONPATH": path})
    if failed is not None:
        raise SpecError(f"the reference or its input builder failed at world size {failed['world']}: {last_lines(out)}",
                        "run it by hand with torchrun --nproc-per-node 2 (gloo) and fix the error")
    return [json.loads(Path(job["out"]).read_text()) for job in jobs]


def check_workload(path: Path, *, reference: Optional[str] = None, inputs: Optional[str] = None,
                   families: Optional[Sequence[str]] = None, worlds: Sequence[int] = (2, 4),
                   native_dims: Optional[dict] = None) -> SemanticVerdict:
    """Run the user's workload at ``path`` beside every family's canonical reference (see module doc)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise SpecError(f"no file at {path}", "pass the Python file that holds your reference")
    entries = [family_entry(n) for n in _families(families)]
    work = Path(tempfile.mkdtemp(prefix="cuco-semantics-"))
    try:
        reports = _probe([{"path": str(path), "reference": reference, "inputs": inputs, "world": world,
                           "init_file": str(work / f"pg{world}"), "out": str(work / f"report{world}.json"),
                           "families": [at_world(e, world) for e in entries],
                           "native_dims": dim_expr.resolve(native_dims, world) if native_dims else native_dims}
                          for world in worlds], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _verdict(reports, [e["name"] for e in entries], tuple(worlds))


def agreed_dims(per_world: Sequence[dict], worlds: Sequence[int]) -> tuple[dict, list[str]]:
    """The dims the worlds agree on: a dim equal at every world as is, one in proportion to the
    world size (128 at 2, 256 at 4) as ``"64*n"`` (``"n"`` for one per rank); and, for every other
    dim, what it is at each world."""
    out, bad = {}, []
    for k in dict.fromkeys(k for d in per_world for k in d):
        values = [d.get(k) for d in per_world]
        if None not in values and len(set(values)) == 1:
            out[k] = values[0]
        elif None not in values and all(v % w == 0 for v, w in zip(values, worlds)) \
                and len({v // w for v, w in zip(values, worlds)}) == 1:
            out[k] = dim_expr.scaled(values[0] // worlds[0])
        else:
            bad.append(f"{k} is " + " and ".join(f"{v} at world size {w}" for v, w in zip(values, worlds)))
    return out, bad


def _verdict(reports: list[dict], names: list[str], worlds: Sequence[int] = (2, 4)) -> SemanticVerdict:
    reasons, match = {}, None
    for name in names:
        per_world = [r["families"].get(name, {"status": "no_fit", "why": ["not tried"]}) for r in reports]
        worst = max(per_world, key=lambda r: _RANK.get(r["status"], 3))
        if worst["status"] == "match":
            dims, bad = agreed_dims([r["dims"] for r in per_world], worlds)
            if not bad:
                reasons[name] = ("match", (), 0)
                if match is None:
                    match = FamilyMatch(name, dims, tuple(per_world[0]["order"]), dict(per_world[0]["variant"]),
                                        bool(per_world[0].get("unbatched")),
                                        tuple(per_world[0].get("transposed", ())),
                                        tuple(per_world[0].get("merged", ())))
                continue
            worst = {"status": "unscaled", "why": [
                "its dims neither stay fixed nor grow in proportion to the world size: " + "; ".join(bad)
                + " (a dim may be fixed, or c*n for a fixed slice c per rank): build each rank's inputs from the "
                "world size, as tensor parallelism shards them, or keep each rank's slice fixed"]}
        reasons[name] = (worst["status"], tuple(worst.get("why", ())), int(worst.get("distance", 0)))
    first = reports[0]
    return SemanticVerdict(first["form"], tuple(first["inputs"]), tuple(first["outputs"]), match, reasons,
                           tuple(first.get("input_names", ())),
                           tuple(tuple(r.get("init_args", ())) for r in reports), tuple(worlds))
