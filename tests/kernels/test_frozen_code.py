"""``frozen_code``: what the guard compares between a child and its parent. Comments and whitespace
that separates no tokens do not count; any change to the code outside the blocks does."""

import random

import pytest

import design_space as ds
from kernels.evolve_blocks import frozen_code, frozen_text
from design_space.space import valid_points

PARENT = """#include "cuco_comm.h"
// design point: lsa/sequential
#define F(x) ((x) + 1)
static __device__ int helper(int a, int b) { return a + b - -1; }
// EVOLVE-BLOCK-START
static __device__ int body(int a) { return a * 2; }
// EVOLVE-BLOCK-END
static const char* NAME = "two  spaces";
extern "C" int cuco_run(const cuco_ctx* c, cudaStream_t s) {
  cuco_barrier(c);
// EVOLVE-BLOCK-START
  int z = body(1);
// EVOLVE-BLOCK-END
  return helper(z, 0);
}
"""


def _child(old: str, new: str) -> str:
    assert old in PARENT
    return PARENT.replace(old, new, 1)


@pytest.mark.parametrize("old,new", [
    ("// design point: lsa/sequential", "// design point: gin/fused_persistent"),
    ("return a + b - -1;", "return a+b - -1;"),
    ("static __device__ int helper(int a, int b) {", "static __device__ int  helper( int a,int b ){"),
    ("  cuco_barrier(c);", "\tcuco_barrier(c);   /* a new comment */\n\n"),
    ("return a * 2;", "return a << 1; /* block contents may change */"),
])
def test_comments_whitespace_and_block_contents_do_not_count(old, new):
    assert frozen_code(_child(old, new)) == frozen_code(PARENT)


@pytest.mark.parametrize("old,new", [
    ("  cuco_barrier(c);", "  // cuco_barrier(c);"),  # a frozen call commented out
    ("return a + b - -1;", "return a + b--1;"),  # tokens joined: a different program
    ("#define F(x) ((x) + 1)", "#define F (x) ((x) + 1)"),  # function-like macro becomes object-like
    ('"two  spaces"', '"two spaces"'),  # literal contents are data
    ("int helper(int a", "long helper(int a"),
    # a line comment ending in a backslash swallows the #define below it (the compiler splices first)
    ("// design point: lsa/sequential", "// design point: lsa/sequential \\"),
    # code moved from after a block to before it
    ("  cuco_barrier(c);\n// EVOLVE-BLOCK-START\n  int z = body(1);\n// EVOLVE-BLOCK-END\n",
     "// EVOLVE-BLOCK-START\n  int z = body(1);\n// EVOLVE-BLOCK-END\n  cuco_barrier(c);\n"),
])
def test_any_change_to_the_code_outside_the_blocks_counts(old, new):
    assert frozen_code(_child(old, new)) != frozen_code(PARENT)


def test_a_comment_opened_in_one_block_and_closed_in_the_next_hides_the_frozen_code_between():
    child = _child("return a * 2; }", "return a * 2; } /*").replace("  int z = body(1);", "*/ int z = body(1);")
    assert frozen_code(child) != frozen_code(PARENT)


def test_broken_markers_have_no_frozen_code():
    assert frozen_code(PARENT.replace("// EVOLVE-BLOCK-END\nstatic const", "static const", 1)) is None


def test_frozen_text_still_sees_comments_for_the_agents():
    child = _child("// design point: lsa/sequential", "// design point: gin/fused_persistent")
    assert frozen_text(child) != frozen_text(PARENT)


@pytest.mark.parametrize("family", ["allgather_gemm", "gemm_reducescatter", "gemm_allreduce",
                                    "moe_dispatch_combine", "ring_attention", "kv_cache_transfer"])
def test_every_render_of_a_family_shares_its_frozen_code(family):
    pattern = ds.get_pattern(family)
    points = valid_points(pattern, ds.get_profile("H100"))
    sample = random.Random(13).sample(points, min(25, len(points)))
    codes = {frozen_code(pattern.render(p)) for p in sample}
    assert len(codes) == 1 and None not in codes
