"""vLLM style RowParallelLinear with a bias (solution form): rank 0 alone adds the bias to its
partial output before the all-reduce, so the sum carries it once. Expected: gemm_allreduce with
the bias epilogue (the same sum as adding it after the all-reduce)."""

import torch
import torch.distributed as dist

TOKENS, HIDDEN, OUT = 32, 128, 64


def solution(x_part: torch.Tensor, w_rows: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    y = x_part @ w_rows
    if dist.get_rank() == 0:
        y = y + bias
    dist.all_reduce(y)
    return y


def get_inputs():
    world = dist.get_world_size()
    gen = torch.Generator().manual_seed(7)  # a weight: the same on every rank
    return [torch.randn(TOKENS, HIDDEN // world), torch.randn(HIDDEN // world, OUT), torch.randn(OUT, generator=gen)]
