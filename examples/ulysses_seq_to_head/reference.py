"""Reference and input builder for the DeepSpeed-Ulysses all-to-all, sequence -> heads (torch +
torch.distributed).

Rank r holds x_r [B, S/n, H, D]: its shard of the sequence, every head. It ends with
y_r [B, S, H/n, D]: every position of the sequence for its head group r, where sequence block j
comes from rank j: y_r[:, j*S/n:(j+1)*S/n] = x_j[:, :, r*H/n:(r+1)*H/n]. One all_to_all; runs on
gloo and NCCL. Any leading dims before [S/n, H, D] pass through (a reference without the batch
axis, [S/n, H, D], is the B = 1 case).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

# A workload without the batch axis ([S/n, H, D]) is this family's at b = 1: cuco's semantic check
# (cuco/semantic_probe.py) reads its tensors with a leading batch of 1.
OPTIONAL_BATCH_DIM = "b"


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks, positions and heads (gen is seeded per rank)."""
    b, s, h, d = dims["b"], dims["s"], dims["h"], dims["d"]
    # a per-rank and a per-head offset too, so a block from the wrong rank or head group cannot pass
    x = torch.randn(b, s // world, h, d, generator=gen) + 0.25 * rank + 0.1 * torch.arange(h).view(1, 1, h, 1)
    return {"x": x.to(dtype)}


def seq_to_head(x: torch.Tensor, group) -> torch.Tensor:
    """[..., S/n, H, D] -> [..., S, H/n, D]: head group j goes to rank j, sequence blocks arrive in rank order."""
    world = dist.get_world_size(group)
    send = [part.contiguous() for part in x.chunk(world, dim=-2)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat(recv, dim=-3)


def reference(inputs: dict, dims: dict, group) -> dict:
    return {"y": seq_to_head(inputs["x"], group)}
