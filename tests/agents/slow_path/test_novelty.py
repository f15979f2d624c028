"""Novelty: normalised token-3-shingle Jaccard separates renamed copies from real rewrites."""

import re
import time

import design_space as ds
from agents.slow_path.novelty import NoveltyIndex, is_novel, similarity, tokens

from .conftest import H100, PATTERN, render


def _renamed(src: str) -> str:
    """Every identifier the candidate defines renamed, comments rewritten, whitespace changed."""
    for old, new in (("chunk_rows", "rows_per_piece"), ("num_chunks", "piece_count"), ("push_chunks", "send_all"),
                     ("gemm_tile", "tile_mm"), ("run_tiles", "walk"), ("Span", "Piece"), ("acc", "sum")):
        src = re.sub(rf"\b{old}\b", new, src)
    src = re.sub(r"//[^\n]*", "// reworded comment", src)
    return src.replace("  ", "    ")


def test_tokens_drop_comments_and_map_identifiers_but_keep_cuda_and_the_comm_api():
    toks = tokens('// hello\n__global__ void k(int n) { cuco_put_warp(c, p); s = "x"; } /* c */')
    assert toks == ["__global__", "void", "ID", "(", "int", "ID", ")", "{", "cuco_put_warp", "(", "ID", ",", "ID",
                    ")", ";", "ID", "=", "STR", ";", "}"]


def test_a_renamed_variables_copy_is_a_near_duplicate():
    src = render()
    assert similarity(src, _renamed(src)) == 1.0
    assert not is_novel(_renamed(src), [src], 0.92)


def test_a_real_rewrite_is_novel():
    src = render("lsa/sequential/global_barrier/cta/64K/4")
    rewrite = render("gin/split_put_wait/per_tile_signal/cta/64K/4")
    assert similarity(src, rewrite) < 0.8
    assert is_novel(rewrite, [src, _renamed(src)], 0.92)


def test_only_the_evolve_blocks_are_compared_when_both_have_them():
    a = "frame one\n// EVOLVE-BLOCK-START\nint x = 1;\n// EVOLVE-BLOCK-END\n"
    b = "a completely different frame with many words\n// EVOLVE-BLOCK-START\nint y = 1;\n// EVOLVE-BLOCK-END\n"
    assert similarity(a, b) == 1.0


def test_fifty_kernels_are_compared_pairwise_quickly():
    points = ds.valid_points(PATTERN, H100)
    sources = [PATTERN.render(p) for p in points[:: len(points) // 50][:50]]
    index = NoveltyIndex()
    start = time.perf_counter()
    for i, src in enumerate(sources):
        index.nearest(src, sources[:i] + sources[i + 1:])
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"50x49 comparisons took {elapsed:.2f} s"  # ~0.1 s measured on the 2-core machine
    score, where = index.nearest(_renamed(sources[7]), sources)
    assert (score, where) == (1.0, 7)
