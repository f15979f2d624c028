"""Mixtral's sparse MoE block (transformers' MixtralSparseMoeBlock: a linear router, softmax, top-2,
the two weights renormalised; SwiGLU experts w2(silu(w1(h)) * w3(h))) with expert parallelism:
each rank holds num_experts / world experts and trades token rows with dist.all_to_all_single and
uneven splits (KernelBench form). Weights are forward() inputs in [in, out] layout (h @ w), and
each expert's w1 and w3 are stacked side by side into one [hidden, 2 * ffn] tensor, as vLLM's
w13_weight and transformers' gate_up_proj stack them. Tokens come flattened to [tokens, hidden],
as vLLM's FusedMoE takes them. Expected: moe_router_swiglu with k = 2."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TOKENS, HIDDEN, FFN, NUM_EXPERTS, TOP_K = 48, 96, 64, 8, 2


class Model(nn.Module):
    """One rank of the block: route, dispatch to the experts' ranks, experts, combine."""

    def __init__(self, top_k: int):
        super().__init__()
        self.top_k = top_k

    def route(self, hidden_states, gate_weight):
        router_logits = hidden_states @ gate_weight  # [tokens, experts]
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        return routing_weights.to(hidden_states.dtype), selected_experts

    @staticmethod
    def expert(h, w13, w2):
        gate, up = (h @ w13).chunk(2, dim=-1)  # w1 | w3
        return (F.silu(gate) * up) @ w2

    def forward(self, hidden_states, gate_weight, w13, w2):
        world = dist.get_world_size()
        per_rank = gate_weight.shape[1] // world  # the router scores every expert
        routing_weights, selected_experts = self.route(hidden_states, gate_weight)
        flat = selected_experts.flatten()  # choice i belongs to token i // top_k
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
                expert_out[idx] = self.expert(recv_tokens[idx], w13[e], w2[e])

        back = torch.empty_like(tokens)
        dist.all_to_all_single(back, expert_out, send, recv)
        per_choice = torch.empty_like(back)
        per_choice[order] = back
        per_choice = per_choice.view(-1, self.top_k, hidden_states.shape[1])
        return (per_choice * routing_weights.unsqueeze(-1)).sum(dim=1)


def get_inputs():
    world = dist.get_world_size()
    local = NUM_EXPERTS // world
    router = torch.Generator().manual_seed(0)  # the router is replicated: the same on every rank
    return [torch.randn(TOKENS, HIDDEN),
            torch.randn(HIDDEN, NUM_EXPERTS, generator=router) / HIDDEN**0.5,
            torch.randn(local, HIDDEN, 2 * FFN) / HIDDEN**0.5,
            torch.randn(local, FFN, HIDDEN) / FFN**0.5]


def get_init_inputs():
    return [TOP_K]
