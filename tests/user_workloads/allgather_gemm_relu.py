"""All-gather + GEMM with a ReLU after it (an MLP up-projection's activation): the GEMM and the
gather are allgather_gemm's, the ReLU is not in the family. Expected: stops before the first
candidate, naming the extra epilogue."""

import torch
import torch.distributed as dist

M, K, N = 32, 64, 64


def solution(x, w):
    world = dist.get_world_size()
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x.contiguous())
    return torch.relu(torch.cat(parts) @ w)


def get_inputs():
    world = dist.get_world_size()
    return [torch.randn(M // world, K), torch.randn(K, N // world)]
