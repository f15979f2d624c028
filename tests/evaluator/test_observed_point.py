"""The observed design point: what the emulator's trace says a candidate's code does, checked
against what it declares."""

from design_space import DesignPoint
from evaluator.emulate import RunTrace
from evaluator.observed_point import disagreement, observe

LSA_FUSED = DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/16K/2")
CE_OVERLAP = DesignPoint.parse_key("copy_engine/stream_overlap/per_peer_signal/copy_engine/64K/1")


def trace(world=2, calls=2, **per_rank) -> RunTrace:
    rank = {"calls": calls, **per_rank}
    return RunTrace(world=world, dims={"m": 64, "n": 64, "k": 64}, calls=calls, ranks=tuple(dict(rank) for _ in range(world)))


# what the lsa fused template's run looks like (per rank, over two calls)
FUSED = dict(**{"put_cta.calls": 4, "put_cta.bytes": 48576, "put_cta.max_bytes": 16008, "signal.calls": 4,
                "wait.calls": 6, "wait.slots": 6, "peer.calls": 1024, "mma.calls": 8, "mma.bytes": 2 * 64 * 64 * 64,
                "launches": 2, "comm_launches": 2, "mma_launches": 2, "fused_launches": 2, "max_comm_blocks": 2})
CE = dict(**{"ce_copy.calls": 2, "ce_copy.bytes": 48576, "ce_copy.max_bytes": 24288, "signal.calls": 2,
             "wait.calls": 4, "wait.slots": 1, "launches": 6, "side_launches": 2, "side_copies": 2,
             "comm_launches": 2, "max_comm_blocks": 1})


def test_an_honest_declaration_agrees_with_the_trace():
    obs = observe([trace(**FUSED)], "", LSA_FUSED)
    assert obs.point == LSA_FUSED and obs.contradictions == () and disagreement(LSA_FUSED, obs) is None


def test_lsa_code_declaring_the_copy_engine_is_refused_naming_both_points():
    obs = observe([trace(**FUSED)], "", CE_OVERLAP)
    why = disagreement(CE_OVERLAP, obs)
    assert why and CE_OVERLAP.key() in why and "lsa/fused_persistent" in why and "backend" in why


def test_the_backend_is_the_mechanism_that_moved_the_most_bytes():
    both = {**CE, "put_thread.calls": 1, "put_thread.bytes": 100, "put_thread.max_bytes": 100}
    obs = observe([trace(**both)], "", None)
    assert obs.point.backend.value == "copy_engine" and obs.point.issuer.value == "copy_engine"


def test_side_stream_work_is_never_sequential_and_fused_needs_one_launch():
    seq = DesignPoint.parse_key("copy_engine/sequential/global_barrier/copy_engine/64K/1")
    obs = observe([trace(**CE)], "", seq)
    assert any(c.startswith("placement") for c in obs.contradictions)
    assert observe([trace(**CE)], "", CE_OVERLAP).contradictions == ()


def test_the_codes_own_constants_decide_chunk_and_comm_ctas_whatever_it_declares():
    src = "#define CHUNK_BYTES 262144\n#define COMM_CTAS 8\n"
    lie = LSA_FUSED.model_copy(update={"chunk_bytes": 4096, "comm_ctas": 1})
    a, b = observe([trace(**FUSED)], src, LSA_FUSED), observe([trace(**FUSED)], src, lie)
    assert a.point == b.point and a.point.chunk_bytes == 262144 and a.point.comm_ctas == 8


def test_what_the_emulation_cannot_settle_is_said():
    obs = observe([trace(**FUSED)], "", LSA_FUSED)
    assert any(u.startswith("comm_ctas") for u in obs.unsettled)


def test_no_communication_gives_no_point():
    obs = observe([trace(launches=2)], "", None)
    assert obs.point is None and "no communication observed" in obs.evidence


def test_the_tile_share_is_per_rank_and_call():
    obs = observe([trace(**FUSED)], "", LSA_FUSED)
    assert obs.tile_flops_per_rank == FUSED["mma.bytes"] / 2  # two calls


def test_the_tile_share_is_read_per_mean_rank_and_on_the_busiest_rank():
    # a KV-transfer-like run: rank 0 computes, rank 1 only receives
    busy, idle = {**FUSED, "calls": 2}, {**FUSED, "calls": 2, "mma.bytes": 0}
    run = RunTrace(world=2, dims={"m": 64, "n": 64, "k": 64}, calls=2, ranks=(busy, idle))
    obs = observe([run], "", LSA_FUSED)
    assert obs.tile_flops_busiest == FUSED["mma.bytes"] / 2 and obs.tile_flops_per_rank == FUSED["mma.bytes"] / 4


def test_more_ctas_moving_data_than_the_comm_ctas_claimed_is_refused_outside_a_fused_kernel():
    seq = DesignPoint.parse_key("lsa/sequential/global_barrier/cta/16K/1")
    moved = {**FUSED, "fused_launches": 0, "launches": 4, "wait.calls": 0, "barrier.calls": 2, "max_xfer_blocks": 4}
    obs = observe([trace(**moved)], "#define COMM_CTAS 1\n", seq)
    assert any(c.startswith("comm_ctas: 4 CTAs moved data") for c in obs.contradictions), obs.contradictions
    honest = observe([trace(**moved)], "#define COMM_CTAS 4\n", seq.model_copy(update={"comm_ctas": 4}))
    assert not any(c.startswith("comm_ctas") for c in honest.contradictions)
    # in a fused kernel compute CTAs may move their own results: no claim to check there
    assert not any(c.startswith("comm_ctas") for c in observe([trace(**{**FUSED, "max_xfer_blocks": 4})], "",
                                                                    LSA_FUSED).contradictions)
