"""Dims written as integer expressions of the world size n (``"64*n"``: a fixed slice per rank):
parsed without eval, refused with their fix, resolved per world; int-only shapes unchanged."""

import pytest
from pydantic import ValidationError

import design_space as ds
from design_space import dim_expr


def _spec(shape_dims, **kw):
    base = dict(name="t", pattern="gemm_reducescatter", shapes=[ds.ShapeCase(name="a", dims=shape_dims)],
                emulation_shapes=[ds.ShapeCase(name="e", dims={"m": 8, "n": 8, "k": 8})],
                reference="ref:reference", inputs="ref:make_inputs")
    return ds.KernelSpec(**{**base, **kw})


def test_a_dim_written_with_n_resolves_at_each_world_size():
    s = ds.ShapeCase(name="a", dims={"m": 64, "k": "64*n", "e": "n", "x": "n*32+8", "y": "(n + 1) // 2 * 4"})
    assert s.at(1) == {"m": 64, "k": 64, "e": 1, "x": 40, "y": 4}
    assert s.at(4) == {"m": 64, "k": 256, "e": 4, "x": 136, "y": 8}
    assert s.scales and s.resolved(8) == ds.ShapeCase(name="a", dims=s.at(8))
    assert s.shown() == "m=64, k=64*n, e=n, x=n*32+8, y=(n + 1) // 2 * 4"
    assert s.shown(2).startswith("m=64, k=128 (64*n), e=2 (n)")


def test_int_only_shapes_and_specs_keep_their_repr_equality_and_dump():
    s = ds.ShapeCase(name="a", dims={"m": 8, "n": 8, "k": 8})
    assert repr(s) == "ShapeCase(name='a', dims={'m': 8, 'n': 8, 'k': 8})"  # a verdict ledger keys on it
    assert s == ds.ShapeCase(name="a", dims={"m": 8, "n": 8, "k": 8}) and not s.scales
    assert s.resolved(4) is s and s.at(4) == {"m": 8, "n": 8, "k": 8}
    assert s.model_dump() == {"name": "a", "dims": {"m": 8, "n": 8, "k": 8}}
    assert "shapes=(ShapeCase(name='a', dims={'m': 8, 'n': 8, 'k': 8}),)" in repr(_spec({"m": 8, "n": 8, "k": 8}))
    assert list(ds.ShapeCase.model_fields) == ["name", "dims"]


def test_a_scaled_spec_round_trips_through_json():
    spec = _spec({"m": 64, "n": 48, "k": "64*n"})
    again = ds.KernelSpec.model_validate_json(spec.model_dump_json())
    assert again == spec and again.headline.dims["k"] == "64*n" and again.headline.at(spec.target_world)["k"] == 512


@pytest.mark.parametrize("bad,named", [
    ("64*m", "'m'"), ("n**2", "'n**2'"), ("2.5*n", "'2.5'"), ("1/n", "'1/n'"), ("__import__('os')", "__import__"),
    ("n if n else 1", "if"), ("", "not an expression"), ("64*", "not an expression"), ("True*n", "'True'"),
])
def test_expressions_outside_the_grammar_are_refused_with_the_fix(bad, named):
    with pytest.raises(ValidationError) as e:
        ds.ShapeCase(name="a", dims={"k": bad})
    text = str(e.value)
    assert named in text and "fix: write an integer expression of the world size n" in text


@pytest.mark.parametrize("bad,said", [
    ("n-2", "k='n-2' is -1 at world size n=1"),
    ("32-n", "k='32-n' is 0 at world size n=32"),
    ("64//(n-1)", "divides by zero at n=1"),
    ("n//2", "k='n//2' is 0 at world size n=1"),
])
def test_a_dim_not_positive_at_some_world_size_is_refused_naming_it(bad, said):
    with pytest.raises(ValidationError) as e:
        ds.ShapeCase(name="a", dims={"k": bad})
    assert said in str(e.value) and "fix:" in str(e.value)


def test_int_dims_are_still_refused_when_not_positive_as_before():
    with pytest.raises(ValidationError, match="dimensions must be positive, got k=0"):
        ds.ShapeCase(name="a", dims={"k": 0})


def test_a_constant_string_reads_as_its_int_and_an_expression_is_kept_stripped():
    assert ds.ShapeCase(name="a", dims={"k": " 64 ", "e": " n "}).dims == {"k": 64, "e": "n"}
    assert ds.ShapeCase(name="a", dims={"k": "40-n"}).at(32) == {"k": 8}


def test_linear_reads_the_per_rank_coefficient_and_scaled_writes_it_back():
    assert dim_expr.linear("64*n") == (64, 0) and dim_expr.linear("n*32+8") == (32, 8)
    assert dim_expr.linear("n") == (1, 0) and dim_expr.linear(5) == (0, 5)
    assert dim_expr.linear("n*n") is None and dim_expr.linear("(n+1)//2") is None
    assert [dim_expr.scaled(*x) for x in ((64, 0), (1, 0), (2, -1), (3, 8), (0, 7))] == ["64*n", "n", "2*n-1",
                                                                                      "3*n+8", 7]
