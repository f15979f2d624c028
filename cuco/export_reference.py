"""Which torch reference an export carries for ``check.py``, and what its README says about it.

A spec in cuco's own form carries its reference file. A spec `cuco init` wrote over a user's
workload has a three-line adapter (cuco/workload_adapter.py) that needs cuco installed and reads
the user's file beside it; a package that builds and runs without cuco cannot use it. The export
then carries the family's canonical reference (standalone torch: what `cuco init` checked the
user's code against, on the user's own inputs) as ``reference.py`` and the user's file as
``user_reference.py``, and says in which layout the op takes the weights the user keeps otherwise.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cuco.semantic_check import EXAMPLES
from design_space import KernelSpec, get_pattern


@dataclass(frozen=True)
class ExportReference:
    reference: Optional[Path]  # copied as reference.py (cuco's contract: make_inputs, reference)
    user: Optional[Path]  # the user's own workload, copied as user_reference.py
    note: str  # what the README says about them (one paragraph, may be empty)


def _spec_file(spec: KernelSpec, target: str) -> Optional[Path]:
    rel = target.split(":")[0].replace(".", "/") + ".py"
    return next((Path(d) / rel for d in spec.search_path if (Path(d) / rel).is_file()), None)


def _adapter_args(path: Path) -> Optional[dict]:
    """The keyword arguments of the ``Adapter(...)`` call in a written ``cuco_workload.py``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Adapter":
            try:
                return {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
            except ValueError:
                return None
    return None


def _layout_note(pattern: str, args: dict) -> str:
    names = {u: get_pattern(pattern).inputs[i] for i, u in enumerate(args.get("order", ())) if u is not None}
    said = []
    for u in args.get("transposed", ()):
        said.append(f"your argument {u} is kept with its last two axes swapped (nn.Linear's [out, in]): pass "
                    "`w.transpose(-2, -1).contiguous()`")
    merged = args.get("merged", ())
    if merged:
        said.append(f"your arguments {merged[0]} and {merged[1]} are the two halves of `{names.get(merged[0], '?')}`: "
                    "pass them concatenated on the last axis (`torch.cat([w1, w3], -1)`)")
    if not said:
        return ""
    return "; the op takes the family's layout: " + "; ".join(said) + " (once: weights are static)"


def export_reference(spec: KernelSpec) -> ExportReference:
    found = _spec_file(spec, spec.reference)
    if found is None:
        return ExportReference(None, None, " (not found when exporting: the spec folder had moved)")
    if found.name != "cuco_workload.py":
        return ExportReference(found, None, "")
    args, user = _adapter_args(found), found.parent / "reference.py"
    if args is None:  # a traced spec's adapter: its pattern has no canonical reference
        return ExportReference(None, user if user.is_file() else None,
                               " (none standalone: the pattern was generated from your workload's trace, and its "
                               "adapter needs cuco; your workload is `user_reference.py`)")
    canonical = EXAMPLES / spec.pattern / "reference.py"
    return ExportReference(
        canonical if canonical.is_file() else None, user if user.is_file() else None,
        f": the `{spec.pattern}` family's canonical reference, which `cuco init` checked your workload "
        "(`user_reference.py`) against on your own inputs" + _layout_note(spec.pattern, args))
