"""Reference and input builder for row-parallel GEMM + all-reduce (+ RMSNorm), torch +
torch.distributed (runs on gloo and NCCL).

Rank r holds A_r [M, K/n] (its slice of the activations' hidden dimension), B_r [K/n, N] (its rows
of a row-parallel weight, e.g. an attention output or MLP down projection) and gamma [N] (the
RMSNorm weight, the same on every rank). Every rank outputs Y = sum_j A_j @ B_j [M, N], or
RMSNorm(Y) * gamma (eps 1e-6, per row, fp32 math) when dims["rmsnorm"] == 1, or Y + gamma when
dims["rmsnorm"] == 3: the [N] vector is then the layer's bias, added once after the sum as a
row-parallel layer (Megatron-LM, vLLM) adds it.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

EPS = 1e-6
GAMMA_SEED = 20260  # gamma is a model weight: the same on every rank, so not from the per-rank gen


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: random, non-uniform across ranks and elements (gen is seeded per rank)."""
    m, n, k = dims["m"], dims["n"], dims["k"]
    kl = k // world
    a = torch.randn(m, kl, generator=gen) + 0.25 * rank
    b = torch.randn(kl, n, generator=gen) / k**0.5
    shared = torch.Generator().manual_seed(GAMMA_SEED + n)
    gamma = 1.0 + 0.5 * torch.randn(n, generator=shared)
    return {"a": a.to(dtype), "b": b.to(dtype), "gamma": gamma.to(dtype)}


def rmsnorm(y: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """RMSNorm over the last dimension in fp32."""
    y = y.float()
    return y * torch.rsqrt(y.pow(2).mean(dim=-1, keepdim=True) + EPS) * gamma.float()


def reference(inputs: dict, dims: dict, group) -> dict:
    a, b, gamma = inputs["a"], inputs["b"], inputs["gamma"]
    # Partial products and their sum in fp32, rounded once to the dtype, as a tuned kernel does.
    y = a.float() @ b.float()
    dist.all_reduce(y, group=group)
    if dims["rmsnorm"] == 1:
        y = rmsnorm(y, gamma)
    elif dims["rmsnorm"] == 3:
        y = y + gamma.float()
    return {"y": y.to(a.dtype)}
