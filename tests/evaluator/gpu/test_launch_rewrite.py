"""The GPU build's launch rewrite routes every <<<>>> launch through the co-residency check."""

import pytest

from evaluator.gpu.launch_rewrite import rewrite_launches_checked


def test_a_launch_becomes_a_checked_call_with_all_four_config_values():
    out = rewrite_launches_checked("void f(cudaStream_t s) { kern<<<grid(c), 128, 1024, s>>>(c, 3); }\n")
    assert 'cuco_checked_launch_named((kern), "kern", dim3(grid(c)), dim3( 128), (size_t)( 1024), ' \
           '(cudaStream_t)( s), c, 3)' in out
    assert "<<<" not in out


def test_missing_smem_and_stream_default_to_zero():
    out = rewrite_launches_checked("k<<<1, 32>>>();")
    assert out == 'cuco_checked_launch_named((k), "k", dim3(1), dim3( 32), (size_t)(0), (cudaStream_t)(0));'


def test_template_kernels_keep_their_arguments_and_the_name_is_quoted():
    out = rewrite_launches_checked("ns::tk<float, 4><<<g, b, 0, st>>>(x);")
    assert out.startswith('cuco_checked_launch_named((ns::tk<float, 4>), "ns::tk<float, 4>", dim3(g)')


def test_line_numbers_survive_a_launch_split_over_lines_with_comments():
    src = "int a;\nkern<<<g,  // grid\n     b>>>(x,  // first\n          y);\nint after;\n"
    out = rewrite_launches_checked(src)
    assert out.count("\n") == src.count("\n")
    assert out.splitlines()[-1] == "int after;"
    assert "// first" not in out  # a joined comment would swallow the rest of the call
    assert "x,  " in out and "y)" in out


def test_launches_inside_strings_and_comments_are_left_alone():
    src = 'const char* s = "k<<<1,1>>>()"; // k<<<1,1>>>()\n'
    assert rewrite_launches_checked(src) == src


def test_every_launch_is_rewritten():
    src = "a<<<1,1>>>(); if (x) b<<<2,2,0,s>>>(p); c<<<3,3>>>(q);"
    out = rewrite_launches_checked(src)
    assert out.count("cuco_checked_launch_named") == 3


def test_a_malformed_launch_names_its_line():
    with pytest.raises(ValueError, match="line 2"):
        rewrite_launches_checked("int a;\nk<<<1>>>();\n")
