"""The DeepSpeed-Ulysses head -> sequence all-to-all (ulysses_head_to_seq), the inverse of
ulysses_seq_to_head rendered from the same templates: a seeded sample of its valid points builds
(nvcc, nccl backend) and passes emulation at 2 and 4 ranks, and so does one point of every backend
x placement x sync scope (slow set); a missing wait, a wrong peer offset and a dropped chunk fail
emulation every time, on every backend with device-side synchronisation; cost() matches a hand
computation; the gloo reference is the exchange computed by indexing in one process, and undoes
ulysses_seq_to_head's.

No GEMM, so no tensor-core test (see test_ulysses_seq_to_head.py for the zero-FLOP scoring).
scripts/check_all_points.py checks every point."""

from pathlib import Path

import pytest
import torch

import design_space as ds
from tests.kernels.families.family_helpers import assert_sample_passes, sampled
from tests.kernels.families.ulysses_checks import (MUTATIONS, assert_every_combination_passes,
                                                   assert_gloo_reference_is_the_exchange, assert_mutation_fails,
                                                   head_to_seq, seq_to_head)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ulysses_head_to_seq"
PATTERN = ds.get_pattern("ulysses_head_to_seq")


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


@pytest.mark.slow  # 27 emulations (~2 min): the default run keeps the seeded sample
def test_every_backend_placement_and_sync_scope_passes(spec, cases, shared_cache, tmp_path):
    assert_every_combination_passes(PATTERN, spec, cases, shared_cache, tmp_path)


@pytest.mark.parametrize("name", sampled(sorted(MUTATIONS)))
def test_broken_transfer_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    assert_mutation_fails(PATTERN, name, spec, cases, shared_cache, tmp_path)


def test_both_directions_render_from_one_template_set():
    point = ds.DesignPoint.parse_key("copy_engine/stream_overlap/per_peer_signal/copy_engine/64K/1")
    here, there = PATTERN.render(point), ds.get_pattern("ulysses_seq_to_head").render(point)
    assert "pattern: ulysses_head_to_seq" in here and "pattern: ulysses_seq_to_head" in there
    # head_to_seq copies contiguous runs of y straight from the input; seq_to_head packs strided head groups first
    assert "launch_pack(" not in here and "launch_pack(" in there


def test_cost_matches_hand_computation():
    c = PATTERN.cost({"b": 1, "s": 32768, "h": 32, "d": 128}, 8, ds.DType.BF16)
    y = 32768 * 4 * 128 * 2  # y_r [1, 32768, 32/8, 128] bf16: 32 MiB, the same bytes as x_r
    assert (c.flops, c.hbm_bytes, c.comm_bytes, c.collective) == (0.0, 2 * y, y, "alltoall")
    assert (c.out_rows, c.out_cols, c.local_fraction) == (4096, 32 * 128, 1 / 8)  # x_r [4096, 32*128]


def test_gloo_reference_matches_single_process(cases):
    assert_gloo_reference_is_the_exchange(cases, head_to_seq, lambda w: (3, 88, 4 // w, 36),
                                          lambda w: (3, 88 // w, 4, 36))


def test_the_two_exchanges_undo_each_other():
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(2, 6, 8, 3, generator=gen) for _ in range(4)]
    assert all(torch.equal(a, b) for a, b in zip(head_to_seq(seq_to_head(xs, 4), 4), xs))
