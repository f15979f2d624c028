"""Megatron-LM style ColumnParallelLinear with gather_output=True (KernelBench form): every rank of
the tensor-parallel group holds the same input and its column shard of the weight and the bias;
the per-rank outputs are all-gathered along the last dimension, so every rank ends with the whole
output (e.g. vocab-parallel logits gathered for sampling). The weight shard is kept
[in_features, out_features / world], the layout a functional `input @ weight` uses. Expected:
gemm_allgather with the bias."""

import torch
import torch.distributed as dist
import torch.nn as nn

SEQ_LEN, IN_FEATURES, OUT_FEATURES = 32, 64, 128  # global sizes


def gather_from_tensor_model_parallel_region(input_: torch.Tensor) -> torch.Tensor:
    """Forward of Megatron's _GatherFromModelParallelRegion: all-gather, concatenate on the last dim."""
    world_size = dist.get_world_size()
    if world_size == 1:
        return input_
    tensor_list = [torch.empty_like(input_) for _ in range(world_size)]
    dist.all_gather(tensor_list, input_.contiguous())
    return torch.cat(tensor_list, dim=-1).contiguous()


class Model(nn.Module):
    """ColumnParallelLinear(IN_FEATURES, OUT_FEATURES, bias=True, gather_output=...), forward only."""

    def __init__(self, gather_output: bool):
        super().__init__()
        self.gather_output = gather_output

    def forward(self, input_: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        output_parallel = torch.matmul(input_, weight) + bias
        if self.gather_output:
            return gather_from_tensor_model_parallel_region(output_parallel)
        return output_parallel


def get_inputs():
    world_size = dist.get_world_size()
    out_per_partition = OUT_FEATURES // world_size
    # The layer's input is replicated across the tensor-parallel group: the same seed on every rank.
    shared = torch.Generator().manual_seed(1234)
    input_ = torch.randn(SEQ_LEN, IN_FEATURES, generator=shared)
    weight = torch.randn(IN_FEATURES, out_per_partition) * IN_FEATURES**-0.5
    bias = torch.randn(out_per_partition) * 0.1
    return [input_, weight, bias]


def get_init_inputs():
    return [True]
