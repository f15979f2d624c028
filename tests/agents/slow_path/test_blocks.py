"""The evolve-block helpers mirror the guard's exactly (agents may not import the evaluator)."""

import pytest

import design_space as ds
from agents.slow_path import blocks
from evaluator import guard

from .conftest import H100, render


def _sources():
    out = []
    for name in ds.pattern_names():
        pattern = ds.get_pattern(name)
        points = ds.valid_points(pattern, H100)
        out += [pattern.render(p) for p in points[:: max(1, len(points) // 3)][:3]]
    return out


BROKEN = [
    "a\n// EVOLVE-BLOCK-START\nb\n",
    "a\n// EVOLVE-BLOCK-END\nb\n",
    "// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-START\nx\n// EVOLVE-BLOCK-END\n",
    "no markers at all\n",
    "x\n// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-END\ny  \n",
]


@pytest.mark.parametrize("source", _sources() + BROKEN)
def test_evolve_regions_and_frozen_text_match_the_guards(source):
    assert blocks.evolve_regions(source) == guard.evolve_regions(source)
    assert blocks.frozen_text(source) == guard.frozen_text(source)


def test_frozen_lines_number_the_lines_outside_the_blocks():
    src = "a\n// EVOLVE-BLOCK-START\nb\nc\n// EVOLVE-BLOCK-END\nd\n"
    assert blocks.frozen_lines(src) == [(1, "a"), (2, "// EVOLVE-BLOCK-START"), (5, "// EVOLVE-BLOCK-END"), (6, "d")]
    assert blocks.evolve_text(src) == "b\nc\n"


def test_first_frozen_difference_names_the_line():
    parent = render()
    child = parent.replace("struct Problem {", "struct Problem2 {")
    line = child.splitlines().index("struct Problem2 {") + 1
    assert blocks.first_frozen_difference(child, parent).startswith(f"frozen code changed at line {line}:")
    assert blocks.first_frozen_difference(parent, parent) is None


def test_blank_lines_at_the_end_of_a_file_are_not_frozen_code():
    import design_space as ds
    from kernels.evolve_blocks import frozen_text
    src = ds.get_pattern("allgather_gemm").render(ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/16K/2"))
    assert frozen_text(src + "\n\n") == frozen_text(src) == frozen_text(src.rstrip("\n"))
    assert frozen_text(src + "int extra;\n") != frozen_text(src)
