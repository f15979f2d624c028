"""Every valid design point of the all-gather+GEMM family builds (nvcc, sm_90, nccl backend) and
passes emulation at 2 and 4 ranks; CI checks a seeded sample, scripts/check_all_points.py all.
Removing a wait or barrier fails emulation, every time."""

import os

import pytest

import design_space as ds
from cuco.point_sweep import sweep_workload

SAMPLE = int(os.environ.get("CUCO_FAMILY_SAMPLE", "10"))
SEED = int(os.environ.get("CUCO_FAMILY_SEED", "2026"))
PATTERN = ds.get_pattern("allgather_gemm")


def test_seeded_sample_of_the_family_builds_and_emulates(example_spec, shared_cache):
    row = sweep_workload(example_spec, shared_cache, hardware=("H100",), sample=SAMPLE, seed=SEED, workers=2).rows[0]
    assert row.valid == len(ds.valid_points(PATTERN, ds.get_profile("H100")))
    assert len(row.verdicts) == SAMPLE
    assert row.failures == [], [f"{v.point.key()}: {v.status} {v.reason}" for v in row.failures]


def _drop_lines(src: str, *needles: str) -> str:
    out = [ln for ln in src.splitlines() if not any(n in ln for n in needles)]
    assert len(out) < len(src.splitlines()), f"mutation found nothing to remove: {needles}"
    return "\n".join(out) + "\n"


# (point, what to remove): every placement x sync scope the family renders
MUTATIONS = [
    ("lsa/sequential/global_barrier/cta/4K/2", ("barrier_kernel<<<",)),
    ("lsa/stream_overlap/global_barrier/warp/4K/8", ("barrier_kernel<<<",)),
    ("lsa/stream_overlap/global_barrier/warp/4K/8", ("cudaStreamWaitEvent(stream, g_join, 0);  // wait late",)),
    ("lsa/stream_overlap/per_peer_signal/warp/64K/2", ("cuco_wait(",)),
    ("lsa/stream_overlap/per_tile_signal/thread/4K/1", ("cuco_wait(",)),
    ("lsa/split_put_wait/global_barrier/cta/16K/4", ("barrier_kernel<<<",)),
    ("lsa/split_put_wait/per_peer_signal/cta/16K/8", ("cuco_wait(",)),
    ("lsa/split_put_wait/per_tile_signal/warp/4K/8", ("cuco_wait(",)),
    ("lsa/fused_persistent/per_peer_signal/cta/4K/1", ("cuco_wait(",)),
    ("lsa/fused_persistent/per_tile_signal/warp/4K/4", ("cuco_wait(",)),
]


@pytest.mark.parametrize("key, needles", MUTATIONS, ids=[f"{k}-{n[0][:20]}" for k, n in MUTATIONS])
def test_removing_synchronisation_fails_emulation(example_evaluator, key, needles):
    point = ds.DesignPoint.parse_key(key)
    intact = ds.Candidate(origin=ds.Origin(kind="template"), source=PATTERN.render(point), point=point)
    assert example_evaluator.evaluate(intact).status is ds.Status.OK
    broken = ds.Candidate(origin=ds.Origin(kind="manual"), source=_drop_lines(intact.source, *needles))
    ev = example_evaluator.evaluate(broken)
    assert ev.status is ds.Status.WRONG_RESULT, ev.reason
    assert any(c.unwritten > 0 for c in ev.checks if not c.ok)


def test_a_missing_wait_fails_every_time(example_evaluator):
    point = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/4K/2")
    broken = _drop_lines(PATTERN.render(point), "cuco_wait(")
    statuses = {example_evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=broken)).status
                for _ in range(10)}
    assert statuses == {ds.Status.WRONG_RESULT}


def _replace(src: str, old: str, new: str) -> str:
    assert old in src, f"mutation found nothing to replace: {old!r}"
    return src.replace(old, new)


# (point, old text, new text, statuses that count as caught): the other backends' synchronisation,
# a wrong destination offset and a dropped chunk
BACKEND_MUTATIONS = [
    ("gin/stream_overlap/per_tile_signal/warp/4K/2", "  cuco_gin_wait(c, slot, at_least);", "", {"wrong_result"}),
    ("gin/split_put_wait/global_barrier/cta/16K/2", "barrier_kernel<<<1, 32, 0, g_side>>>(c);", "", {"wrong_result"}),
    ("multimem/fused_persistent/per_peer_signal/cta/4K/2", "  cuco_wait(c, slot, at_least);", "", {"wrong_result"}),
    ("copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1", "  cuco_wait(c, slot, at_least);", "",
     {"wrong_result"}),
    ("host_nccl/stream_overlap/global_barrier/cta/4K/1", "cudaStreamWaitEvent(stream, g_chunk_done[ch], 0);", "",
     {"wrong_result"}),
    ("lsa/split_put_wait/per_tile_signal/cta/4K/2", "(size_t)(c.rank * p.shard + r0) * row_bytes",
     "(size_t)r0 * row_bytes", {"wrong_result", "timeout"}),
    ("lsa/stream_overlap/global_barrier/warp/4K/2", "ch < nch; ++ch) comm_launch", "ch + 1 < nch; ++ch) comm_launch",
     {"wrong_result"}),
    ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1", "ch < nch; ++ch) comm_launch",
     "ch + 1 < nch; ++ch) comm_launch", {"timeout"}),
]


@pytest.mark.parametrize("key, old, new, caught", BACKEND_MUTATIONS,
                         ids=[f"{k.split('/')[0]}-{k.split('/')[1]}-{o.strip()[:18]}" for k, o, _, _ in BACKEND_MUTATIONS])
def test_broken_transfers_of_every_backend_fail_emulation(example_evaluator, key, old, new, caught):
    point = ds.DesignPoint.parse_key(key)
    source = PATTERN.render(point)
    assert example_evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="template"), source=source,
                                                   point=point)).status is ds.Status.OK
    ev = example_evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=_replace(source, old, new)))
    assert ev.status.value in caught, ev.reason


def test_every_backend_renders_its_own_mechanism():
    calls = {"lsa": "cuco_put_", "gin": "cuco_gin_put(", "multimem": "cuco_mm_st2(", "copy_engine": "cuco_ce_put(",
             "host_nccl": "cuco_coll_allgather("}
    points = ds.valid_points(PATTERN, ds.get_profile("H100"))
    for backend, call in calls.items():
        mine = [p for p in points if p.backend.value == backend]
        assert mine, backend
        for p in mine[:: max(1, len(mine) // 20)]:
            src = PATTERN.render(p)
            assert call in src, (p.key(), call)
            others = [c for b, c in calls.items() if b != backend and c in src.split("EVOLVE-BLOCK-START")[1]]
            assert not others, (p.key(), others)
