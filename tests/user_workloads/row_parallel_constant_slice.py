"""Row-parallel linear (vLLM's RowParallelLinear, no bias) that keeps the first OUT columns of its
sum with a module constant: at its own sizes the slice is every column, at wider ones it silently
drops some. Expected: `cuco init` stops before writing anything: the output at other sizes is
shaped differently from the family's."""

import torch
import torch.distributed as dist

TOKENS, K_PER_RANK, OUT = 8, 16, 12


def solution(x, w):  # x [T, K/n], w [K/n, OUT]
    y = x @ w
    dist.all_reduce(y)
    return y[:, :OUT]


def get_inputs():
    return [torch.randn(TOKENS, K_PER_RANK), torch.randn(K_PER_RANK, OUT)]
