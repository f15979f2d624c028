"""Kernel templates of the DeepSpeed-Ulysses all-to-all families (``ulysses_seq_to_head`` and
``ulysses_head_to_seq``): one set of templates, rendered per ``direction``.

Rank r's input (ctx.in[0]) and output (ctx.out[0]) are one [B, S/n, H, D] sequence-sharded and one
[B, S, H/n, D] head-sharded tensor (which is which is the direction). The block rank r sends to
rank j is B * S/n rows of H/n * D contiguous elements (row t = b * S/n + s): from the
sequence-sharded side a row is the head group's segment of a sequence row, from the head-sharded
side it is a row of sequence block j. Transfers move whole rows into the receiver's RECV block of
the sender (wire order, in the symmetric buffer), and every backend unpacks RECV into the output;
the own block is copied straight from the input.

Pieces: ``layout`` (the direction's row maps, SEND/RECV offsets, steps, chunks, signal slots),
``rows`` (row moves: pack, unpack, local; the pack kernel), ``arrival`` (credit, waits, the unpack
kernel), ``push`` (lsa stores and gin puts per issuer), ``host_device`` / ``host_copy_engine`` /
``host_nccl`` (cuco_run per placement), ``side_stream``.
"""

from __future__ import annotations

from design_space.dimensions import Backend, Placement, SyncScope
from design_space.families.ulysses_alltoall import DIRECTIONS, SUPPORTED, excluded
from design_space.patterns import register_renderer, require_renderable
from design_space.point import DesignPoint
from kernels.template_env import render_point


def render_direction(direction: str, point: DesignPoint) -> str:
    """CUDA source of ``point`` for one direction (its values must be in ``SUPPORTED`` and it must
    not be excluded)."""
    name = f"ulysses_{direction}"
    require_renderable(name, SUPPORTED, excluded, point)
    backend, seq_to_head = point.backend, direction == "seq_to_head"
    signals = point.sync_scope is not SyncScope.GLOBAL_BARRIER and backend is not Backend.HOST_NCCL
    # the sender reads SEND: GIN puts take symmetric-buffer sources, the library collectives too,
    # and the copy engines move only contiguous runs (a head group is strided in seq_to_head)
    packed = backend in (Backend.GIN, Backend.HOST_NCCL) or (backend is Backend.COPY_ENGINE and seq_to_head)
    return render_point(
        "ulysses_alltoall", point,
        direction=direction,
        packed=packed,
        pack_kernel=packed and backend is not Backend.GIN,  # GIN senders pack each chunk themselves
        credit=signals,
        credit_in_unpack=signals and backend in (Backend.LSA, Backend.GIN),
        wait="cuco_gin_wait" if backend is Backend.GIN else "cuco_wait",
        # library send/recv pairs name one offset for both ends: RECV blocks are indexed by step
        recv_by_step=backend is Backend.HOST_NCCL and point.placement is Placement.STREAM_OVERLAP,
    )


def _renderer(direction: str):
    return lambda point: render_direction(direction, point)


for _direction in DIRECTIONS:
    register_renderer(f"ulysses_{_direction}", _renderer(_direction))
