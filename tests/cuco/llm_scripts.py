"""Scripted fake-LLM replies for the end-to-end runs: real template renders turned into the
replies an LLM would give (a fast-path kernel, diff patches between design points, a patch that
does not apply, a wrong result), keyed on the markers the prompt templates carry."""

from __future__ import annotations

import design_space as ds
from agents import conservative_point
from kernels.evolve_blocks import evolve_regions

PATTERN = ds.get_pattern("allgather_gemm")
HW = ds.get_profile("H100")
CONSERVATIVE = conservative_point(ds.valid_points(PATTERN, HW))
SEEDED = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/16K/2")
TARGETS = [p for p in ds.valid_points(PATTERN, HW)
           if p.backend is ds.Backend.LSA and p not in (CONSERVATIVE, SEEDED)]
B, D = TARGETS[0], TARGETS[len(TARGETS) // 2]


def block(point: ds.DesignPoint) -> str:
    src = PATTERN.render(point)
    (start, end), = evolve_regions(src)[0]
    return src[start:end]


# The end of the allgather_gemm templates' tensor-core tile call (kernels/allgather_gemm/gemm.cuh.j2).
TILE_CALL_END = "B, p.Nl, p.Nl - col0, p.K);"


def fenced(point: ds.DesignPoint) -> str:
    return f"Here is the kernel.\n```cuda\n{PATTERN.render(point)}\n```\nDESIGN-POINT: {point.key()}\n"


def diff(parent: ds.DesignPoint, child: ds.DesignPoint, *, wrong: bool = False) -> str:
    new = block(child)
    if wrong:  # builds and runs, but every tile drops its last k term: a wrong result
        new = new.replace(TILE_CALL_END, TILE_CALL_END.replace("p.K);", "p.K - 1);"))
        assert new != block(child)
    return (f"Move to {child.key()}.\n<<<<<<< SEARCH\n{block(parent)}=======\n{new}>>>>>>> REPLACE\n"
            f"DESIGN-POINT: {child.key()}\n")


def not_compiling(parent: ds.DesignPoint, child: ds.DesignPoint) -> str:
    """A diff to ``child`` that nvcc refuses (a syntax error inside the evolve block)."""
    new = block(child).replace(TILE_CALL_END, TILE_CALL_END.replace("p.K);", "p.K +);"), 1)
    assert new != block(child)
    return (f"<<<<<<< SEARCH\n{block(parent)}=======\n{new}>>>>>>> REPLACE\n"
            f"DESIGN-POINT: {child.key()}\n")


def full_rewrite(parent: ds.DesignPoint, child: ds.DesignPoint) -> str:
    """The whole file of ``child``, keeping the parent's frozen header line."""
    lines = PATTERN.render(child).splitlines(keepends=True)
    lines[1] = PATTERN.render(parent).splitlines(keepends=True)[1]
    return f"```cuda\n{''.join(lines)}\n```\nDESIGN-POINT: {child.key()}\n"  # as fenced() writes it


def not_applying(point: ds.DesignPoint) -> str:
    return (f"<<<<<<< SEARCH\nthis line is nowhere in the parent\n=======\nint nothing;\n>>>>>>> REPLACE\n"
            f"DESIGN-POINT: {point.key()}\n")


def rule(when, text=None, times=None, **reply):
    return {"when": when, "times": times, "reply": {"text": text, **reply} if text is not None else reply}


FAST_WRITE = "cuco-prompt fast_write v1"
FAST_JUDGE = "cuco-prompt fast_judge v1"
REPAIR = "cuco-prompt slow_repair v1"
META = "cuco-prompt slow_meta v1"


def parent(point: ds.DesignPoint, crossover: bool = False) -> str:
    return f"# Parent {'A ' if crossover else ''}(design point {point.key()})"


def full_run_rules() -> list[dict]:
    """Fast path, then slow path from generation 0 = {SEEDED (--point), CONSERVATIVE (fast path)}:
    from the conservative parent a good diff to B; from the seeded parent a patch that does not
    apply, then a repair that moves to D."""
    return [
        rule(FAST_WRITE, fenced(CONSERVATIVE)),
        rule(META, "Sequential points pass; try overlapping placements next."),
        rule(REPAIR, diff(SEEDED, D)),
        rule(parent(CONSERVATIVE), diff(CONSERVATIVE, B)),
        rule(parent(CONSERVATIVE, crossover=True), diff(CONSERVATIVE, B)),
        rule(parent(SEEDED), not_applying(SEEDED)),
        rule(parent(SEEDED, crossover=True), not_applying(SEEDED)),
    ]
