"""What the two DeepSpeed-Ulysses all-to-all test files share (one set of templates renders both
directions): the source mutations per backend with device-side synchronisation, the emulation of
every backend x placement x sync scope, and the single-process computation of the exchange."""

import random

import numpy as np
import torch

import design_space as ds
from evaluator import emulate
from tests.kernels.families.family_helpers import emulate_only, mutate

FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}

_WAIT = "  cuco_wait(c, arrive_slot(p, k, src, q), c.epoch);\n"  # the unpack's per-chunk wait
# (point, text, replacement): every backend with device-side synchronisation loses a wait, stores
# its block into the receiver's RECV block of the wrong source, and drops its last chunk.
MUTATIONS = {
    "lsa-missing-wait": ("lsa/fused_persistent/per_tile_signal/warp/4K/2", _WAIT, ""),
    "gin-missing-wait": ("gin/stream_overlap/per_tile_signal/warp/4K/2",
                         "  cuco_gin_wait(c, arrive_slot(p, k, src, q), c.epoch);\n", ""),
    "copy_engine-missing-wait": ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1", _WAIT, ""),
    "lsa-wrong-peer-offset": ("lsa/stream_overlap/per_peer_signal/thread/4K/1",
                              "cuco_put_thread(c, peer, recv_off(p, p.rank, t),",
                              "cuco_put_thread(c, peer, recv_off(p, peer, t),"),
    "gin-wrong-peer-offset": ("gin/split_put_wait/per_tile_signal/cta/4K/2",
                              "cuco_gin_put(c, gin_ctx_of(peer), peer, recv_off(p, p.rank, t0),",
                              "cuco_gin_put(c, gin_ctx_of(peer), peer, recv_off(p, peer, t0),"),
    "copy_engine-wrong-peer-offset": ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1",
                                      "cuco_ce_put(c, peer, recv_off(p, p.rank, ",
                                      "cuco_ce_put(c, peer, recv_off(p, peer, "),
    "lsa-dropped-chunk": ("lsa/sequential/global_barrier/cta/4K/2", "for (int64_t f = cta; f < n; f += ncta)",
                          "for (int64_t f = cta; f + 1 < n; f += ncta)"),
    "gin-dropped-chunk": ("gin/fused_persistent/per_peer_signal/warp/4K/2", "f < n; f += (int64_t)ncta * warps)",
                          "f + 1 < n; f += (int64_t)ncta * warps)"),
    "copy_engine-dropped-chunk": ("copy_engine/sequential/global_barrier/copy_engine/4K/1",
                                  "  for (int64_t q = 0; q < k.per_peer; ++q) {\n    const int64_t t0",
                                  "  for (int64_t q = 0; q + 1 < k.per_peer; ++q) {\n    const int64_t t0"),
}


def assert_mutation_fails(pattern, name, spec, cases, cache, work) -> None:
    key, old, new = MUTATIONS[name]
    intact = pattern.render(ds.DesignPoint.parse_key(key))
    assert emulate_only(intact, spec, cases, cache, work / "intact").status is ds.Status.OK
    broken = emulate_only(mutate(intact, old, new), spec, cases, cache, work / "broken")
    assert broken.status in FAILED, f"{name}: {broken.status.value} {broken.reason}"


def assert_every_combination_passes(pattern, spec, cases, cache, work) -> None:
    """One point of every backend x placement x sync scope (4K chunks: several per block) emulates."""
    combos: dict = {}
    for p in ds.valid_points(pattern, ds.get_profile("H100")):
        combos.setdefault((p.backend.value, p.placement.value, p.sync_scope.value), []).append(p)
    rng = random.Random(7)
    failures = []
    for combo in sorted(combos):
        p = rng.choice([q for q in combos[combo] if q.chunk_bytes == 4096])
        out = emulate_only(pattern.render(p), spec, cases, cache, work / p.key().replace("/", "_"))
        if out.status is not ds.Status.OK:
            failures.append(f"{p.key()}: {out.status.value} {out.reason}")
    # lsa and gin 9 each (sequential is global only, fused_persistent never global), copy_engine 7
    # (never fused), host_nccl 2 (sequential or stream_overlap, global)
    assert len(combos) == 27 and not failures, failures


def tensor(tf) -> torch.Tensor:
    return torch.from_numpy(emulate.as_float32(tf.path, tf.dtype, tf.shape).copy())


def seq_to_head(xs: list, world: int) -> list:
    """Every rank's y [B, S, H/n, D] from every rank's x [B, S/n, H, D], by indexing alone."""
    hl = xs[0].shape[2] // world
    return [torch.cat([x[:, :, r * hl:(r + 1) * hl] for x in xs], dim=1) for r in range(world)]


def head_to_seq(ys: list, world: int) -> list:
    """Every rank's x [B, S/n, H, D] from every rank's y [B, S, H/n, D], by indexing alone."""
    sl = ys[0].shape[1] // world
    return [torch.cat([y[:, r * sl:(r + 1) * sl] for y in ys], dim=2) for r in range(world)]


def assert_gloo_reference_is_the_exchange(cases, exchange, in_shape, out_shape) -> None:
    """The gloo runs of the ragged shape at both world sizes against ``exchange`` in one process:
    a pure data movement, so bit-exact; and the inputs differ across ranks and positions."""
    for world in (2, 4):
        case = next(c for c in cases if c.world == world and c.shape.name == "emu-ragged")
        inputs = [tensor(rank.inputs[0]) for rank in case.ranks]
        assert tuple(inputs[0].shape) == in_shape(world)
        for rank, expected in zip(case.ranks, exchange(inputs, world)):
            out = tensor(rank.outputs[0])
            assert tuple(out.shape) == out_shape(world)
            assert np.array_equal(out.numpy(), expected.numpy())
        assert not torch.equal(inputs[0], inputs[1]) and inputs[0].std() > 0.5
