"""The plugin pattern's reference and input builder (cuco's own contract)."""

import torch
import torch.distributed as dist


def make_inputs(dims, rank, world, dtype, gen):
    x = torch.randn(dims["seq"] // world, dims["hidden"], generator=gen) + 0.25 * rank
    w = torch.randn(dims["hidden"], dims["ffn"] // world, generator=gen) / dims["hidden"] ** 0.5
    return {"x": x.to(dtype), "w": w.to(dtype)}


def reference(inputs, dims, group):
    x, w = inputs["x"], inputs["w"]
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, x.contiguous(), group=group)
    return {"y": (torch.cat(parts).float() @ w.float()).to(x.dtype)}
