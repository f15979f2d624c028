"""Apply an LLM's edit to a parent, confined to the evolve blocks.

Three forms:

- ``diff``: SEARCH/REPLACE blocks; each SEARCH must match exactly once, wholly inside one evolve
  block, and is applied in order to the result of the previous ones;
- ``full``: a whole source whose frozen text (everything outside the evolve blocks) equals the
  parent's;
- ``crossover``: a whole source combining two parents; its frozen text must equal one parent's
  (parents rendered at different points differ in the frozen header comment, so either is fine).

Every failure says precisely what went wrong, in words the repair prompt passes back to the LLM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from agents.slow_path.blocks import evolve_regions, first_frozen_difference, frozen_text, line_of


@dataclass(frozen=True)
class PatchResult:
    ok: bool
    source: Optional[str] = None
    error: Optional[str] = None
    parent_index: int = 0  # crossover: which parent's frozen frame the child kept

    @classmethod
    def fail(cls, error: str) -> "PatchResult":
        return cls(ok=False, error=error)


def _parent_problem(parent: str) -> Optional[str]:
    spans, err = evolve_regions(parent)
    if err:
        return f"the parent's evolve markers are broken ({err}): it cannot be patched"
    if not spans:
        return "the parent has no evolve blocks: it cannot be patched"
    return None


def apply_diff(parent: str, blocks: Sequence[tuple[str, str]]) -> PatchResult:
    """Apply SEARCH/REPLACE ``blocks`` (in order) inside the parent's evolve blocks."""
    problem = _parent_problem(parent)
    if problem:
        return PatchResult.fail(problem)
    if not blocks:
        return PatchResult.fail("the reply has no SEARCH/REPLACE block")
    source = parent
    for n, (search, replace) in enumerate(blocks, 1):
        if not search.strip():
            return PatchResult.fail(f"SEARCH block {n} is empty: copy the lines to replace from the evolve block")
        where, error = _locate(source, search, n)
        if error:
            return PatchResult.fail(error)
        source = source[:where] + replace + source[where + len(search):]
        spans, err = evolve_regions(source)
        if err or not spans or frozen_text(source) != frozen_text(parent):
            return PatchResult.fail(f"REPLACE block {n} adds or removes an evolve marker: "
                                    "leave the EVOLVE-BLOCK-START/END lines alone")
    if source == parent:
        return PatchResult.fail("the SEARCH/REPLACE blocks change nothing (every REPLACE equals its SEARCH)")
    return PatchResult(ok=True, source=source)


def _locate(source: str, search: str, n: int) -> tuple[int, Optional[str]]:
    """The offset of the one match of ``search`` inside an evolve block, or an error."""
    spans, _ = evolve_regions(source)
    inside, outside, at = [], [], source.find(search)
    while at >= 0:
        (inside if any(a <= at and at + len(search) <= b for a, b in spans) else outside).append(at)
        at = source.find(search, at + 1)
    if len(inside) == 1:
        return inside[0], None
    if len(inside) > 1:
        lines = ", ".join(str(line_of(source, i)) for i in inside)
        return 0, (f"SEARCH block {n} matches {len(inside)} places inside the evolve blocks (lines {lines}): "
                   "add surrounding lines so it matches exactly one")
    if outside:
        return 0, (f"SEARCH block {n} matches only frozen code (line {line_of(source, outside[0])}), outside "
                   "the evolve blocks: only evolve-block contents may change")
    return 0, f"SEARCH block {n} matches nothing inside an evolve block{_near_miss(source, search, spans)}"


def _near_miss(source: str, search: str, spans: list[tuple[int, int]]) -> str:
    """A hint when the SEARCH text's first line exists up to whitespace (the usual LLM slip)."""
    first = next((ln.strip() for ln in search.splitlines() if ln.strip()), "")
    for a, b in spans:
        for k, ln in enumerate(source[a:b].splitlines()):
            if ln.strip() == first:
                return (f" (its first line matches line {line_of(source, a) + k} only up to whitespace or the "
                        "lines after it differ: copy the text exactly)")
    return ""


def apply_full(parent: str, child: str) -> PatchResult:
    """Accept a full rewrite whose frozen text equals the parent's."""
    problem = _parent_problem(parent) or _child_problem(child)
    if problem:
        return PatchResult.fail(problem)
    diff = first_frozen_difference(child, parent)
    if diff:
        return PatchResult.fail(f"{diff} -- only evolve-block contents may change")
    if child.strip() == parent.strip():
        return PatchResult.fail("the rewrite is identical to the parent")
    return PatchResult(ok=True, source=_with_newline(child))


def apply_crossover(parents: Sequence[str], child: str) -> PatchResult:
    """Accept a child whose frozen text equals one parent's (the first that matches)."""
    problem = _child_problem(child)
    if problem:
        return PatchResult.fail(problem)
    errors = []
    for i, parent in enumerate(parents):
        result = apply_full(parent, child)
        if result.ok:
            return PatchResult(ok=True, source=result.source, parent_index=i)
        errors.append(f"against parent {i + 1}: {result.error}")
    return PatchResult.fail("; ".join(errors))


def _child_problem(child: str) -> Optional[str]:
    spans, err = evolve_regions(child)
    if err:
        return f"the code's evolve markers are broken: {err}"
    if not spans:
        return "the code has no EVOLVE-BLOCK-START/END block: keep the parent's markers"
    return None


def _with_newline(source: str) -> str:
    return source if source.endswith("\n") else source + "\n"
