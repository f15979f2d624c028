"""Calls back to back: on a GPU a rank may start call e + 1 while a peer is still in call e (an
exported op called layer after layer; no barrier between calls). Every family whose ranks write
into a peer's memory, or rewrite memory a peer reads, waits until that peer entered the call
(evaluator/runtime/cuco_enter.h); the ring pays a slot's credit only once the fill it frees has
landed. Dropping either passes the emulator's two fenced calls and fails its third, which follows
back to back; a GIN source reused before its flush fails too (puts land only when no rank can move)."""

from pathlib import Path

import pytest

import design_space as ds
from cuco.spec_loader import load_spec
from tests.kernels.families.family_helpers import emulate_only, mutate, reference_cases, sampled

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ENTER = "cuco_wait_entered(c, peer);"
ALL_ENTERED = "cuco_wait_all_entered(c);"
CTA_ENTERED = "cuco_cta_wait_all_entered(c, "  # CTA-collective; its argument stays as (void)(...)
CE_ENTER = "cuco_ce_wait_entered(c, peer, s);"
# (example, point, the guard's text: dropped with its line when it ends one, else replaced by (void)0
# or, for a call whose argument stays, by (void)(
DROPS = [
    ("allgather_gemm", "lsa/split_put_wait/per_tile_signal/cta/4K/2", ENTER),
    ("allgather_gemm", "gin/fused_persistent/per_tile_signal/thread/4K/2", "cuco_gin_wait_entered(c, peer);"),
    ("allgather_gemm", "multimem/fused_persistent/per_peer_signal/warp/4K/2", ALL_ENTERED),
    ("allgather_gemm", "copy_engine/split_put_wait/global_barrier/copy_engine/4K/1", CE_ENTER),
    ("gemm_allgather", "lsa/fused_persistent/per_tile_signal/thread/4K/2", ENTER),
    ("gemm_allgather", "gin/fused_persistent/per_tile_signal/warp/4K/2", "cuco_gin_wait_entered(c, peer);"),
    ("gemm_allgather", "copy_engine/split_put_wait/global_barrier/copy_engine/4K/1", CTA_ENTERED),
    ("gemm_reducescatter", "lsa/fused_persistent/per_tile_signal/thread/4K/2", ENTER),
    ("gemm_reducescatter", "multimem/split_put_wait/per_peer_signal/warp/4K/2", CTA_ENTERED),
    ("gemm_reducescatter", "copy_engine/split_put_wait/per_peer_signal/copy_engine/4K/1", CE_ENTER),
    ("reducescatter_rmsnorm", "lsa/split_put_wait/per_tile_signal/thread/4K/2", "cuco_wait_entered(c, owner);"),
    ("reducescatter_rmsnorm", "multimem/fused_persistent/per_tile_signal/warp/4K/2", CTA_ENTERED),
    # the ring: a worker skipping a masked block pays its credit before the fill has landed (shown
    # where puts land late, GIN; with LSA stores the emulator's one schedule does not run into it)
    ("ring_attention", "gin/fused_persistent/per_tile_signal/thread/64K/2", "  wait_fill(c, p, G);\n"),
    # a GIN source reused before its flush
    ("ring_attention", "gin/fused_persistent/per_tile_signal/thread/64K/2", "cuco_gin_flush(c, GIN_CTX);"),
]
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


@pytest.mark.parametrize("example, key, needle", sampled(DROPS, [f"{e}-{k.split('/')[0]}-{n.strip()[:16]}"
                                                                for e, k, n in DROPS]))
def test_a_dropped_back_to_back_guard_fails_emulation(example, key, needle, shared_cache, tmp_path):
    spec = load_spec(EXAMPLES / example)
    pattern = ds.get_pattern(spec.pattern)
    cases = reference_cases(spec, shared_cache)
    intact = pattern.render(ds.DesignPoint.parse_key(key))
    assert emulate_only(intact, spec, cases, shared_cache, tmp_path / "intact").status is ds.Status.OK
    gone = "" if needle.endswith("\n") else "(void)(" if needle.endswith(", ") else "(void)0;"
    broken = emulate_only(mutate(intact, needle, gone), spec, cases, shared_cache, tmp_path / "broken")
    assert broken.status in FAILED, broken.reason


@pytest.mark.parametrize("example, key", [("allgather_gemm", "lsa/split_put_wait/per_peer_signal/cta/4K/2"),
                                          ("gemm_allgather", "gin/fused_persistent/per_tile_signal/warp/4K/2")])
def test_the_entry_protocol_is_traced_as_its_own_kind_and_left_out_of_the_observed_point(example, key, shared_cache,
                                                                                         tmp_path):
    from evaluator import observed_point
    spec = load_spec(EXAMPLES / example)
    point = ds.DesignPoint.parse_key(key)
    source = ds.get_pattern(spec.pattern).render(point)
    out = emulate_only(source, spec, reference_cases(spec, shared_cache), shared_cache, tmp_path)
    assert out.status is ds.Status.OK, out.reason
    for run in out.traces:
        for rank in run.ranks:  # one announcement to every peer a call, and waits on them
            assert rank["enter.calls"] == run.calls * (run.world - 1)
            assert rank["enter_wait.calls"] > 0
    seen = observed_point.observe(out.traces, source, point)
    assert seen.point is not None and seen.point.sync_scope is point.sync_scope, seen.evidence
    assert not seen.contradictions, seen.contradictions
