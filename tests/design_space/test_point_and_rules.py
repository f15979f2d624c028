"""Design points validate themselves with reasons; rules are data."""

import pytest

import design_space as ds


def _point(**kw):
    base = dict(backend="lsa", placement="fused_persistent", sync_scope="per_tile_signal", issuer="warp",
                chunk_bytes=65536, comm_ctas=8)
    return ds.DesignPoint(**{**base, **kw})


def test_valid_point_round_trips_through_its_key():
    p = _point()
    assert ds.DesignPoint.parse_key(p.key()) == p
    assert p.key() == "lsa/fused_persistent/per_tile_signal/warp/64K/8"


def test_breaking_a_rule_names_the_rule_and_the_reason():
    with pytest.raises(ds.DesignPointError) as info:
        _point(sync_scope="global_barrier")
    assert info.value.violations == ("fused_persistent_needs_fine_signals",)
    assert "grid-wide barrier" in str(info.value)


def test_every_broken_rule_is_reported():
    with pytest.raises(ds.DesignPointError) as info:
        _point(backend="copy_engine", issuer="warp", sync_scope="global_barrier")
    assert set(info.value.violations) == {"copy_engine_pairs_with_copy_engine_issuer",
                                          "fused_persistent_needs_fine_signals",
                                          "copy_engine_cannot_run_inside_a_kernel"}


def test_hardware_rules_need_the_target():
    p = _point(backend="multimem")  # fine without hardware
    with pytest.raises(ds.DesignPointError, match="multimem_needs_hopper_and_nvswitch"):
        p.check_hardware(ds.get_profile("A100"))
    p.check_hardware(ds.get_profile("H100"))
    with pytest.raises(ds.DesignPointError, match="comm_ctas_leave"):
        _point(comm_ctas=32).check_hardware(ds.get_profile("A100"))


@pytest.mark.parametrize("bad", ["lsa/fused", "lsa/fused_persistent/per_tile_signal/warp/3K/8",
                                 "nvshmem/fused_persistent/per_tile_signal/warp/64K/8",
                                 "lsa/fused_persistent/per_tile_signal/warp/64K/7"])
def test_malformed_keys_raise_design_point_errors(bad):
    with pytest.raises(ds.DesignPointError) as info:
        ds.DesignPoint.parse_key(bad)
    assert info.value.fix


def test_every_rule_has_a_reason_and_unique_name():
    names = [r.name for r in ds.RULES]
    assert len(names) == len(set(names))
    assert all(len(r.reason) > 30 for r in ds.RULES)


def test_space_holds_only_valid_points_and_respects_restrictions():
    pattern, hw = ds.get_pattern("allgather_gemm"), ds.get_profile("A100")
    points = ds.valid_points(pattern, hw)
    assert points and all(not ds.violations(p, hw) for p in points)
    assert all(p.comm_ctas <= hw.sms // 4 for p in points)
    only = ds.valid_points(pattern, hw, {"placement": ["fused_persistent"], "issuer": ["cta"]})
    assert only and {p.placement.value for p in only} == {"fused_persistent"}
    with pytest.raises(ds.SpecError):
        ds.valid_points(pattern, hw, {"placement": ["teleport"]})


def test_neighbours_move_one_dimension_at_a_time():
    pattern = ds.get_pattern("allgather_gemm")
    values = ds.dimension_values(pattern)
    p = _point()
    for dim, q in ds.neighbours(p, values):
        changed = [d for d in ds.DIMENSIONS if getattr(p, d) != getattr(q, d)]
        assert changed == [dim]
    chunks = {q.chunk_bytes for d, q in ds.neighbours(p, values) if d == "chunk_bytes"}
    assert chunks == {16384, 262144}
