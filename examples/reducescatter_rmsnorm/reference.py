"""Reference and input builder for reduce-scatter + residual add + RMSNorm (sequence parallelism
after a row-parallel layer), torch + torch.distributed (runs on gloo and NCCL).

Rank r holds P_r [M, N] (the un-reduced output of a row-parallel GEMM done elsewhere), gamma [N]
(the RMSNorm weight, the same on every rank) and R_r [M/n, N] (its rows of the residual stream).
It outputs y_r = h_r * rsqrt(mean(h_r^2, -1) + 1e-6) * gamma when dims["rmsnorm"] == 1, else h_r,
with h_r = (sum_j P_j)[r*M/n:(r+1)*M/n] (+ R_r when dims["residual"] == 1); fp32 math, rounded once.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

EPS = 1e-6
GAMMA_SEED = 20261  # gamma is a model weight: the same on every rank, so not from the per-rank gen


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks, rows and elements (gen is seeded per
    rank); rows differ in scale, so a norm taken over the wrong row shows."""
    m, n = dims["m"], dims["n"]
    rows = m // world
    p = (torch.randn(m, n, generator=gen) + 0.25 * rank) * (0.25 + 4 * torch.rand(m, 1, generator=gen))
    residual = torch.randn(rows, n, generator=gen) * (0.5 + 2 * torch.rand(rows, 1, generator=gen))
    shared = torch.Generator().manual_seed(GAMMA_SEED + n)
    gamma = 1.0 + 0.5 * torch.randn(n, generator=shared)
    return {"p": p.to(dtype), "gamma": gamma.to(dtype), "residual": residual.to(dtype)}


def reference(inputs: dict, dims: dict, group) -> dict:
    p, gamma, residual = inputs["p"], inputs["gamma"], inputs["residual"]
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    acc = torch.promote_types(p.dtype, torch.float32)  # fp32, or fp64 for the tolerance calibration
    # gloo has no reduce-scatter: sum every partial in fp32 (all_reduce, as users write it there)
    # and keep this rank's rows, rounding once at the end; the trace reads it as a reduce-scatter.
    total = p.to(acc).contiguous()
    dist.all_reduce(total, group=group)
    rows = p.shape[0] // world
    h = total[rank * rows:(rank + 1) * rows].clone()
    if dims["residual"] == 1:
        h += residual.to(acc)
    if dims["rmsnorm"] == 1:
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS) * gamma.to(acc)
    return {"y": h.to(p.dtype)}
