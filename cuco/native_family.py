"""Which family a reference in cuco's own form computes (``reference(inputs, dims, group)`` beside
``make_inputs(dims, rank, world, dtype, gen)``).

Its builder takes a family's dims by name, so each family is checked on its own: the reference's
inputs built at that family's example dims, then the semantic check (cuco/semantic_check.py)
against that family alone. A family lacking a dim the builder or reference reads by name
(``dims["k"]``) is not tried. Families are tried in order of how alike their canonical reference's
communication is to this one's (the same kinds of calls first; a reduce-scatter and an all-reduce
count as alike, since gloo references write one as the other), and the first whose outputs agree
is the spec's. The collectives only order the tries: nothing is picked from them.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from cuco.init_templates import EXAMPLES, example_spec
from cuco.init_workload import how_it_matched, verdict_or_error
from design_space import SpecError, get_pattern, pattern_names
from kernels.seed_analysis import choose_pattern, reference_calls

# kinds a gloo reference may write for one another (gloo has no reduce_scatter)
_ALIKE = {"reducescatter": "reduction", "allreduce": "reduction"}


def _kinds(calls) -> frozenset[str]:
    return frozenset(_ALIKE.get(c.kind, c.kind) for c in calls)


def dims_read(source: str, functions: tuple[str, ...]) -> frozenset[str]:
    """Dim names ``functions`` read from their ``dims`` argument (the builder's first parameter, the
    reference's second) as ``dims["k"]`` or ``dims.get("k")``."""
    tree, out = ast.parse(source), set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in functions:
            continue
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        index = 0 if node.name == functions[-1] else 1
        if len(params) <= index:
            continue
        var = params[index]
        for sub in ast.walk(node):
            key = None
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id == var:
                key = sub.slice
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "get" \
                    and isinstance(sub.func.value, ast.Name) and sub.func.value.id == var and sub.args:
                key = sub.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.add(key.value)
    return frozenset(out)


def candidates(calls, needs: frozenset[str] = frozenset()) -> list[str]:
    """Families with an example whose dims hold ``needs`` and whose canonical reference shares a kind
    of call with ``calls``: the same set of kinds first, then more overlap first."""
    want, ranked = _kinds(calls), []
    for name in pattern_names():
        ref = EXAMPLES / name / "reference.py"
        if not ref.is_file() or not needs <= set(get_pattern(name).dims):
            continue
        have = _kinds(reference_calls(ref.read_text(), "reference"))
        if have & want:
            ranked.append((have != want, -len(have & want), name))
    return [name for *_, name in sorted(ranked)]


def native_family(path: Path, source: str, reference: str, inputs: str,
                  override: Optional[str]) -> tuple[str, str]:
    """(family, why) for the native reference ``reference`` in ``path``; a SpecError with the nearest
    family's mismatch (and what else was tried) when none computes it."""
    calls = reference_calls(source, reference)
    what = f"{path.name}:{reference}"
    if override is not None:
        names = [get_pattern(override).name]
    else:
        names = candidates(calls, dims_read(source, (reference, inputs)))
        if not names:  # no call, or calls no family with an example makes: choose_pattern says which
            return choose_pattern(calls, source, what, None)
    errors: list[SpecError] = []
    for name in names:
        base = example_spec(name)
        if base is None:  # a plugin pattern without an example: nothing to check it against
            return name, "chosen with --pattern" if override else f"from {', '.join(c.name for c in calls)}"
        try:
            verdict = verdict_or_error(path, reference=reference, inputs=inputs, pattern=name,
                                       native_dims=dict(base.emulation_shapes[0].dims))
        except SpecError as e:
            errors.append(e)
            continue
        how = "chosen with --pattern" if override else f"from {', '.join(dict.fromkeys(c.name for c in calls))}"
        return name, f"{how}; {how_it_matched(verdict)}"
    first = errors[0]
    tried = f" (also tried, communicating alike: {', '.join(names[1:])})" if len(names) > 1 else ""
    raise SpecError(first.problem + tried, first.fix + (", or pass --pattern NAME to check it against one family"
                                                        if override is None else ""))
