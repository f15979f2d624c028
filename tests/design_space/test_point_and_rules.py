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
        _point(backend="copy_engine", issuer="warp", sync_scope="global_barrier", comm_ctas=1)
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


# Per rule: a point that breaks it, the profile it is checked on (None: intrinsic), and its
# neighbour (one or two values changed) that keeps every rule.
RULE_CASES = {
    "copy_engine_pairs_with_copy_engine_issuer": (
        "copy_engine/stream_overlap/per_tile_signal/cta/64K/1", None,
        "copy_engine/stream_overlap/per_tile_signal/copy_engine/64K/1"),
    "fused_persistent_needs_fine_signals": (
        "lsa/fused_persistent/global_barrier/warp/64K/8", None, "lsa/fused_persistent/per_peer_signal/warp/64K/8"),
    "copy_engine_cannot_run_inside_a_kernel": (
        "copy_engine/fused_persistent/per_tile_signal/copy_engine/64K/1", None,
        "copy_engine/split_put_wait/per_tile_signal/copy_engine/64K/1"),
    "sequential_synchronises_once": (
        "lsa/sequential/per_peer_signal/cta/64K/8", None, "lsa/sequential/global_barrier/cta/64K/8"),
    "host_nccl_is_host_driven": (
        "host_nccl/split_put_wait/global_barrier/cta/64K/1", None, "host_nccl/stream_overlap/global_barrier/cta/64K/1"),
    "multimem_needs_hopper_and_nvswitch": (
        "multimem/fused_persistent/per_tile_signal/warp/64K/8", "A100",
        "lsa/fused_persistent/per_tile_signal/warp/64K/8"),
    "comm_ctas_leave_three_quarters_to_compute": (
        "lsa/fused_persistent/per_tile_signal/warp/64K/32", "A100", "lsa/fused_persistent/per_tile_signal/warp/64K/16"),
    "host_side_comm_takes_one_comm_cta": (
        "host_nccl/sequential/global_barrier/cta/64K/8", None, "host_nccl/sequential/global_barrier/cta/64K/1"),
    "peer_memory_backends_stay_in_one_node": (
        "lsa/fused_persistent/per_tile_signal/warp/64K/8", "H100:2x8:ib400",
        "gin/fused_persistent/per_tile_signal/warp/64K/8"),
    "gin_needs_a_network": (
        "gin/split_put_wait/per_peer_signal/thread/64K/4", "H100-PCIe:1x4:none",
        "lsa/split_put_wait/per_peer_signal/thread/64K/4"),
}


def _breaks(key, hw_name):
    """The names of the rules ``key`` breaks (on ``hw_name`` when given)."""
    try:
        point = ds.DesignPoint.parse_key(key)
    except ds.DesignPointError as e:
        return set(e.violations)
    if hw_name is None:
        return set()
    try:
        point.check_hardware(ds.get_profile(hw_name))
    except ds.DesignPointError as e:
        return set(e.violations)
    return set()


def test_every_registered_rule_has_a_case():
    assert set(RULE_CASES) == {r.name for r in ds.RULES}


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_a_point_breaking_the_rule_is_refused_with_its_name(rule):
    bad, hw_name, _ = RULE_CASES[rule]
    assert _breaks(bad, hw_name) == {rule}


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_the_neighbouring_point_passes(rule):
    _, hw_name, good = RULE_CASES[rule]
    assert _breaks(good, hw_name) == set()


def test_hardware_rules_follow_the_profile_topology():
    lsa = _point()
    lsa.check_hardware(ds.get_profile("H100"))
    lsa.check_hardware(ds.get_profile("H100-PCIe"))  # LSA works over PCIe P2P inside a node
    with pytest.raises(ds.DesignPointError, match="multimem_needs"):
        _point(backend="multimem").check_hardware(ds.get_profile("H100-PCIe"))
    for backend in ("gin", "host_nccl"):
        kw = dict(backend=backend, comm_ctas=1, issuer="cta", placement="stream_overlap",
                  sync_scope="global_barrier") if backend == "host_nccl" else dict(backend=backend)
        _point(**kw).check_hardware(ds.get_profile("A100:4x8:roce200"))


def test_multi_node_space_keeps_only_network_backends():
    pattern = ds.get_pattern("allgather_gemm")
    one = ds.valid_points(pattern, ds.get_profile("H100"))
    two = ds.valid_points(pattern, ds.get_profile("H100:2x8:ib400"))
    assert all(p.backend in (ds.Backend.GIN, ds.Backend.HOST_NCCL) for p in two)
    assert len(two) < len(one)


def test_neighbours_move_one_dimension_at_a_time():
    pattern = ds.get_pattern("allgather_gemm")
    values = ds.dimension_values(pattern)
    p = _point()
    for dim, q in ds.neighbours(p, values):
        changed = [d for d in ds.DIMENSIONS if getattr(p, d) != getattr(q, d)]
        assert changed == [dim]
    chunks = {q.chunk_bytes for d, q in ds.neighbours(p, values) if d == "chunk_bytes"}
    assert chunks == {16384, 262144}
