"""Dims of the world size in cuco's own steps: the semantic check reads dims that follow the world
as ``"64*n"`` and names any other disagreement, init scales the family's emulation shapes the same
way, the loader checks each world, ``cuco space`` reports each world's value, export writes them."""

import pytest

import design_space as ds
from cuco import export_command, init_workload, semantic_check
from cuco.space_report import space_report
from cuco.spec_loader import check_spec


def _spec(shapes, emulation=({"m": 8, "n": 16, "k": "4*n"},), **kw):
    return ds.KernelSpec(name="t", pattern="gemm_reducescatter", reference="r:reference", inputs="r:make_inputs",
                         shapes=[ds.ShapeCase(name=f"s{i}", dims=d) for i, d in enumerate(shapes)],
                         emulation_shapes=[ds.ShapeCase(name=f"e{i}", dims=d) for i, d in enumerate(emulation)], **kw)


def _report(family_dims: dict, status: str = "match") -> dict:
    return {"form": "function", "inputs": [], "outputs": [],
            "families": {name: {"status": status, "dims": d, "order": [0, 1], "variant": {}, "why": ["x"]}
                         for name, d in family_dims.items()}}


def test_dims_in_proportion_to_the_world_size_are_written_as_expressions_of_n():
    dims, bad = semantic_check.agreed_dims([{"m": 64, "k": 128, "e": 2}, {"m": 64, "k": 256, "e": 4}], (2, 4))
    assert dims == {"m": 64, "k": "64*n", "e": "n"} and bad == []


def test_a_family_computed_at_each_world_with_world_scaled_dims_is_the_match():
    reports = [_report({"gemm_reducescatter": {"m": 64, "n": 48, "k": 128}}),
               _report({"gemm_reducescatter": {"m": 64, "n": 48, "k": 256}})]
    verdict = semantic_check._verdict(reports, ["gemm_reducescatter"], (2, 4))
    assert verdict.match.family == "gemm_reducescatter" and verdict.match.dims == {"m": 64, "n": 48, "k": "64*n"}


def test_other_disagreements_name_the_dim_and_its_values_at_each_world_not_another_family():
    reports = [_report({"allgather_gemm": {"m": 64, "k": 64}, "gemm_reducescatter": {"m": 64, "k": 128}}),
               _report({"allgather_gemm": {"m": 64, "k": 64}, "gemm_reducescatter": {"m": 64, "k": 320}})]
    reports[0]["families"]["allgather_gemm"]["status"] = "differs"
    verdict = semantic_check._verdict(reports, ["allgather_gemm", "gemm_reducescatter"], (2, 4))
    text = verdict.diagnosis()
    assert verdict.match is None and verdict.nearest() == "gemm_reducescatter"
    assert "computes gemm_reducescatter at each world size" in text
    assert "k is 128 at world size 2 and 320 at world size 4" in text and "allgather_gemm" not in text


def test_init_scales_the_familys_emulation_shapes_as_the_workload_scales():
    shapes = [("emu-even", {"m": 128, "n": 128, "k": 64}), ("emu-ragged", {"m": 72, "n": 200, "k": 24})]
    out = init_workload.emulation_shapes("gemm_reducescatter", {"m": 64, "k": "64*n"}, shapes, (2, 4))
    assert out == [("emu-even", {"m": 128, "n": 128, "k": "16*n"}), ("emu-ragged", {"m": 72, "n": 200, "k": "6*n"})]
    assert init_workload.emulation_shapes("gemm_reducescatter", {"k": 512}, shapes, (2, 4)) == shapes


def test_one_per_rank_stays_n_and_a_shape_that_no_longer_fits_is_left_out():
    shapes = [("emu-even", {"t": 12, "h": 256, "f": 32, "e": 8, "k": 2, "skew": 150}),
              ("emu-ragged", {"t": 5, "h": 24, "f": 40, "e": 4, "k": 3, "skew": 200})]
    out = init_workload.emulation_shapes("moe_dispatch_combine", {"e": "n"}, shapes, (2, 4))
    assert out == [("emu-even", {"t": 12, "h": 256, "f": 32, "e": "n", "k": 2, "skew": 150})]  # k=3 > e at 2


def test_the_loader_checks_a_scaled_dim_at_each_world_size_and_shows_its_value_there():
    check_spec(_spec([{"m": 64, "n": 48, "k": "64*n"}]))
    with pytest.raises(ds.SpecError) as e:
        check_spec(_spec([{"m": 64, "n": 48, "k": "2*n+1"}]))
    assert "'s0' (m=64, n=48, k=5 (2*n+1)) does not fit world size 2" in str(e.value)


def test_space_reports_bounds_at_the_world_it_is_asked_for():
    scaled = _spec([{"m": 4096, "n": 8192, "k": "3584*n"}])
    pattern, hw = ds.get_pattern("gemm_reducescatter"), ds.get_profile("H100")
    for world in (2, 8):
        fixed = _spec([{"m": 4096, "n": 8192, "k": 3584 * world}])
        a, b = space_report(scaled, pattern, hw, world, top=3), space_report(fixed, pattern, hw, world, top=3)
        assert a["shapes"][0]["dims"] == {"m": 4096, "n": 8192, "k": 3584 * world}
        assert a["shapes"][0]["dims_written"]["k"] == "3584*n" and "dims_written" not in b["shapes"][0]
        assert a["shapes"][0]["bound_us"] == b["shapes"][0]["bound_us"] and a["top"] == b["top"]


def test_export_writes_each_worlds_dims_beside_the_expression():
    spec = _spec([{"m": 64, "n": 48, "k": "64*n"}])
    pattern = ds.get_pattern(spec.pattern)
    out = export_command._shape(pattern, spec.shapes[0], spec.world_sizes)
    assert out["dims"]["k"] == "64*n" and out["dims_by_world"]["8"] == {"m": 64, "n": 48, "k": 512}
    assert "dims_by_world" not in export_command._shape(pattern, ds.ShapeCase(name="a", dims={"m": 2}), (2,))
    # every dim written in, a flag the shape leaves out too: the package's check.py sets ctx.dims from them
    ag = export_command._shape(ds.get_pattern("allgather_gemm"), ds.ShapeCase(name="a", dims={"m": 8, "n": 8, "k": 4}),
                               (2,))
    assert ag["dims"] == {"m": 8, "n": 8, "k": 4, "bias": 2}
