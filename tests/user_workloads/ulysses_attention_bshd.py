"""DeepSpeed-Ulysses' all-to-all before attention, written the way DeepSpeed's _SeqAllToAll does it
(deepspeed/sequence/layer.py: reshape, transpose, one all_to_all_single), for activations held
batch-first as flash-attention takes them, [batch, seq_shard, num_heads, head_dim]. Expected: maps
to ulysses_seq_to_head, its batch read as the family's b, and reaches `ok` candidates."""

import torch
import torch.distributed as dist
from torch import nn

BATCH, SEQ, NUM_HEADS, HEAD_DIM = 2, 64, 8, 16


class Model(nn.Module):
    """Scatter the heads, gather the sequence: [batch, seq/P, heads, dim] -> [batch, seq, heads/P, dim]."""

    def forward(self, query_states: torch.Tensor) -> torch.Tensor:
        sp = dist.get_world_size()
        batch, shard, heads, dim = query_states.shape
        # [batch, shard, sp, heads/sp, dim] -> [sp, batch, shard, heads/sp, dim]: head group j goes to rank j
        send = query_states.reshape(batch, shard, sp, heads // sp, dim).permute(2, 0, 1, 3, 4).contiguous()
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send)
        # recv[j] is rank j's shard of the sequence for this rank's heads
        return recv.permute(1, 0, 2, 3, 4).reshape(batch, sp * shard, heads // sp, dim).contiguous()


def get_inputs():
    sp = dist.get_world_size()
    return [torch.randn(BATCH, SEQ // sp, NUM_HEADS, HEAD_DIM)]


def get_init_inputs():
    return []
