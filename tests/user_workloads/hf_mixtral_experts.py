"""Mixtral's sparse MoE block as transformers writes it (MixtralSparseMoeBlock with
MixtralBlockSparseTop2MLP experts): the router is an nn.Linear(hidden, experts) weight [E, H], and
each expert keeps w1, w3 (gate, up: [F, H]) and w2 (down: [H, F]) as its own nn.Linear weights,
applied with F.linear; a rank's experts come stacked per projection. Expert parallelism trades
token rows with dist.all_to_all_single and uneven splits (KernelBench form). Expected:
moe_router_swiglu with k = 2, every weight read transposed and w1, w3 read as the family's w13."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TOKENS, HIDDEN, FFN, NUM_EXPERTS, TOP_K = 48, 96, 64, 8, 2


class Model(nn.Module):
    def __init__(self, top_k: int):
        super().__init__()
        self.top_k = top_k

    @staticmethod
    def expert(h, w1, w3, w2):  # MixtralBlockSparseTop2MLP.forward
        return F.linear(F.silu(F.linear(h, w1)) * F.linear(h, w3), w2)

    def forward(self, hidden_states, gate_weight, w1, w3, w2):
        world = dist.get_world_size()
        per_rank = gate_weight.shape[0] // world
        router_logits = F.linear(hidden_states, gate_weight)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        flat = selected_experts.flatten()
        dest = flat // per_rank
        order = dest.argsort(stable=True)
        input_splits = torch.bincount(dest, minlength=world)
        output_splits = torch.empty_like(input_splits)
        dist.all_to_all_single(output_splits, input_splits)
        send, recv = input_splits.tolist(), output_splits.tolist()
        tokens = hidden_states[order // self.top_k]
        recv_tokens = tokens.new_empty(sum(recv), tokens.shape[1])
        dist.all_to_all_single(recv_tokens, tokens, recv, send)
        local_ids = flat[order] % per_rank
        recv_ids = local_ids.new_empty(sum(recv))
        dist.all_to_all_single(recv_ids, local_ids, recv, send)

        expert_out = torch.zeros_like(recv_tokens)
        for e in range(per_rank):
            idx = (recv_ids == e).nonzero(as_tuple=True)[0]
            if idx.numel():
                expert_out[idx] = self.expert(recv_tokens[idx], w1[e], w3[e], w2[e])
        back = torch.empty_like(tokens)
        dist.all_to_all_single(back, expert_out, send, recv)
        per_choice = torch.empty_like(back)
        per_choice[order] = back
        per_choice = per_choice.view(-1, self.top_k, hidden_states.shape[1])
        return (per_choice * routing_weights.unsqueeze(-1)).sum(dim=1)


def get_inputs():
    local = NUM_EXPERTS // dist.get_world_size()
    router = torch.Generator().manual_seed(0)  # the router is replicated: the same on every rank
    return [torch.randn(TOKENS, HIDDEN),
            torch.randn(NUM_EXPERTS, HIDDEN, generator=router) / HIDDEN**0.5,
            torch.randn(local, FFN, HIDDEN) / HIDDEN**0.5,
            torch.randn(local, FFN, HIDDEN) / HIDDEN**0.5,
            torch.randn(local, HIDDEN, FFN) / FFN**0.5]


def get_init_inputs():
    return [TOP_K]
