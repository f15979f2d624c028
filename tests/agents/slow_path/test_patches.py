"""Patches confined to evolve blocks, with a precise error for every way they can fail."""

from agents.slow_path.patches import apply_crossover, apply_diff, apply_full

from .conftest import render

PARENT = render()


def test_a_diff_inside_an_evolve_block_applies():
    r = apply_diff(PARENT, [("#define CHUNK_BYTES 65536", "#define CHUNK_BYTES 262144")])
    assert r.ok and r.error is None
    assert "#define CHUNK_BYTES 262144" in r.source and "65536" not in r.source.split("EVOLVE-BLOCK-START")[1][:200]


def test_several_blocks_apply_in_order():
    r = apply_diff(PARENT, [("#define COMM_THREADS 256", "#define COMM_THREADS 128"),
                            ("#define COMM_THREADS 128", "#define COMM_THREADS 512")])
    assert r.ok and "#define COMM_THREADS 512" in r.source


def test_a_search_matching_nothing_is_named_by_its_number():
    r = apply_diff(PARENT, [("#define COMM_THREADS 256", "#define COMM_THREADS 128"), ("no such line", "x")])
    assert not r.ok and r.error == "SEARCH block 2 matches nothing inside an evolve block"


def test_a_near_miss_says_which_line_differs_only_in_whitespace():
    r = apply_diff(PARENT, [("#define   COMM_THREADS 256\n", "x")])
    assert not r.ok and r.error.startswith("SEARCH block 1 matches nothing inside an evolve block")
    assert "line" not in r.error  # the first line differs inside, not just in indentation
    indented = apply_diff(PARENT, [("    #define COMM_THREADS 256", "x")])
    assert "matches line" in indented.error and "copy the text exactly" in indented.error


def test_a_search_matching_frozen_code_is_refused():
    r = apply_diff(PARENT, [("struct Problem {", "struct Problem2 {")])
    assert not r.ok and r.error.startswith("SEARCH block 1 matches only frozen code (line ")


def test_an_ambiguous_search_lists_its_matches():
    r = apply_diff(PARENT, [("__syncthreads();", "__syncwarp();")])
    assert not r.ok and r.error.startswith("SEARCH block 1 matches ") and "places inside the evolve blocks" in r.error


def test_an_empty_search_and_a_no_op_and_no_blocks_fail():
    assert apply_diff(PARENT, [("  \n", "x")]).error.startswith("SEARCH block 1 is empty")
    assert apply_diff(PARENT, [("#define COMM_THREADS 256", "#define COMM_THREADS 256")]).error.startswith(
        "the SEARCH/REPLACE blocks change nothing")
    assert apply_diff(PARENT, []).error == "the reply has no SEARCH/REPLACE block"


def test_a_replace_that_adds_a_marker_is_refused():
    r = apply_diff(PARENT, [("#define COMM_THREADS 256", "#define COMM_THREADS 256\n// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-START")])
    assert not r.ok and r.error.startswith("REPLACE block 1 adds or removes an evolve marker")


def test_a_parent_without_blocks_cannot_be_patched():
    error = apply_diff("int x;\n", [("int x;", "int y;")]).error
    assert error == "the parent has no evolve blocks: it cannot be patched"


def test_a_full_rewrite_keeping_the_frozen_text_applies():
    child = PARENT.replace("#define COMM_THREADS 256", "#define COMM_THREADS 128")
    assert apply_full(PARENT, child).ok
    assert apply_full(PARENT, child.rstrip("\n")).source.endswith("\n")


def test_a_full_rewrite_changing_frozen_code_names_the_line():
    child = PARENT.replace("  int64_t M, N, K, Nl, shard;", "  int64_t M, N, K, Nl, shard, extra;")
    line = child.splitlines().index("  int64_t M, N, K, Nl, shard, extra;") + 1
    r = apply_full(PARENT, child)
    assert not r.ok and r.error.startswith(f"frozen code changed at line {line}: expected ")


def test_a_full_rewrite_without_markers_or_identical_fails():
    assert apply_full(PARENT, "int main() {}\n").error.startswith("the code has no EVOLVE-BLOCK-START/END block")
    assert "evolve markers are broken" in apply_full(PARENT, PARENT.replace("// EVOLVE-BLOCK-END", "")).error
    assert apply_full(PARENT, PARENT).error == "the rewrite is identical to the parent"


def test_a_crossover_keeps_either_parents_frame():
    other = render("lsa/stream_overlap/per_peer_signal/warp/16K/8")
    child = other.replace("#define COMM_THREADS 256", "#define COMM_THREADS 128")
    r = apply_crossover([PARENT, other], child)
    assert r.ok and r.parent_index == 1
    bad = apply_crossover([PARENT, other], child.replace("struct Problem {", "struct P {"))
    assert not bad.ok and bad.error.startswith("against parent 1: frozen code changed at line ")
    assert "; against parent 2: frozen code changed" in bad.error
