"""Reference and input builder for the DeepSpeed-Ulysses all-to-all, heads -> sequence (torch +
torch.distributed): the inverse of ulysses_seq_to_head, after attention.

Rank r holds y_r [B, S, H/n, D]: every position of the sequence for its head group r. It ends
with x_r [B, S/n, H, D]: its own shard of the sequence, every head, where head group j comes from
rank j: x_r[:, :, j*H/n:(j+1)*H/n] = y_j[:, r*S/n:(r+1)*S/n]. One all_to_all; runs on gloo and
NCCL. Any leading dims before [S, H/n, D] pass through (no batch axis is the B = 1 case).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

# A workload without the batch axis ([S, H/n, D]) is this family's at b = 1: cuco's semantic check
# (cuco/semantic_probe.py) reads its tensors with a leading batch of 1.
OPTIONAL_BATCH_DIM = "b"


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks, positions and heads (gen is seeded per rank)."""
    b, s, h, d = dims["b"], dims["s"], dims["h"], dims["d"]
    hl = h // world
    # per-rank and per-position offsets too, so a block from the wrong rank or sequence block cannot pass
    pos = torch.arange(s).view(1, s, 1, 1) / s
    y = torch.randn(b, s, hl, d, generator=gen) + 0.25 * rank + pos
    return {"y": y.to(dtype)}


def head_to_seq(y: torch.Tensor, group) -> torch.Tensor:
    """[..., S, H/n, D] -> [..., S/n, H, D]: sequence block j goes to rank j, head groups arrive in rank order."""
    world = dist.get_world_size(group)
    send = [part.contiguous() for part in y.chunk(world, dim=-3)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat(recv, dim=-2)


def reference(inputs: dict, dims: dict, group) -> dict:
    return {"x": head_to_seq(inputs["y"], group)}
