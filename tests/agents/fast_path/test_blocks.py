"""Evolve blocks of the fast path's kernel: kept, inserted around kernel bodies, validated."""

import pytest

from design_space import get_pattern, get_profile, valid_points
from agents import conservative_point
from agents.fast_path.blocks import (
    Blocks, frozen_text, has_markers, marker_problem, regions, unmark, validation_problem, with_blocks,
    wrap_kernel_bodies,
)

ENTRY = 'extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {\n  k<<<1, 32, 0, stream>>>(*ctx);\n  return 0;\n}\n'


@pytest.fixture(scope="module")
def template_source():
    pattern, hw = get_pattern("allgather_gemm"), get_profile("H100")
    return pattern.render(conservative_point(valid_points(pattern, hw)))


def test_the_writers_well_formed_blocks_are_kept(template_source):
    blocks = with_blocks(template_source)
    assert blocks.source == template_source and not blocks.inserted
    assert validation_problem(blocks, template_source) is None


def test_blocks_are_inserted_around_kernel_bodies_and_removing_them_gives_the_code_back(template_source):
    code = unmark(template_source)
    assert not has_markers(code)
    blocks = with_blocks(code)
    assert blocks.inserted and "barrier_kernel, comm_kernel, gemm_kernel" in blocks.note
    assert unmark(blocks.source) == code
    assert validation_problem(blocks, code) is None
    assert "cuco_run" in frozen_text(blocks.source)
    spans, err = regions(blocks.source)
    assert err is None and len(spans) == 3


def test_a_multi_line_body_gets_markers_inside_its_braces_and_a_one_line_kernel_around_it():
    code = ("__global__ void __launch_bounds__(64) big(cuco_ctx c) {\n  int x = 1;\n  (void)x;\n}\n"
            "__global__ void small(cuco_ctx c) { (void)c; }\n" + ENTRY)
    annotated, wrapped = wrap_kernel_bodies(code)
    assert wrapped == ["big", "small"]
    assert "{\n  // EVOLVE-BLOCK-START\n  int x = 1;\n  (void)x;\n  // EVOLVE-BLOCK-END\n}" in annotated
    assert "// EVOLVE-BLOCK-START\n__global__ void small(cuco_ctx c) { (void)c; }\n// EVOLVE-BLOCK-END\n" in annotated
    assert unmark(annotated) == code


def test_braces_in_comments_and_strings_do_not_confuse_the_annotator():
    code = ('__global__ void k(cuco_ctx c) {\n  // a } in a comment\n  const char* s = "}{";\n  (void)s;\n}\n'
            "/* __global__ void ghost() { } */\n" + ENTRY)
    annotated, wrapped = wrap_kernel_bodies(code)
    assert wrapped == ["k"] and unmark(annotated) == code
    assert validation_problem(Blocks(annotated, "", True), code) is None


def test_a_file_without_a_final_newline_round_trips():
    code = ENTRY + "__global__ void k(cuco_ctx c) {\n  (void)c;\n}"
    annotated, wrapped = wrap_kernel_bodies(code)
    assert wrapped == ["k"] and unmark(annotated) == code


def test_broken_writer_markers_are_replaced_by_kernel_body_blocks():
    code = ("// EVOLVE-BLOCK-START\n__global__ void k(cuco_ctx c) {\n  (void)c;\n}\n" + ENTRY)  # never closed
    assert marker_problem(code) == "EVOLVE-BLOCK-START is never closed"
    blocks = with_blocks(code)
    assert blocks.inserted and "unusable (EVOLVE-BLOCK-START is never closed)" in blocks.note
    assert validation_problem(blocks, code) is None and unmark(blocks.source) == unmark(code)


def test_a_marker_sharing_a_line_with_code_is_a_problem():
    code = "__global__ void k(cuco_ctx c) { // EVOLVE-BLOCK-START\n  (void)c;\n  // EVOLVE-BLOCK-END\n}\n" + ENTRY
    assert "shares line 1 with code" in marker_problem(code)


def test_inserted_blocks_that_swallow_the_entry_fail_validation():
    swallowed = "// EVOLVE-BLOCK-START\n" + ENTRY + "// EVOLVE-BLOCK-END\n"
    assert validation_problem(Blocks(swallowed, "", inserted=True), ENTRY) == \
        "the cuco_run entry is inside an evolve block"
    # the writer may keep its launch sequence evolvable, as the pattern templates do
    assert validation_problem(Blocks(swallowed, "", inserted=False), swallowed) is None


def test_code_without_kernels_gets_no_block():
    blocks = with_blocks(ENTRY)
    assert blocks.source == ENTRY and "no __global__ kernel body" in blocks.note
