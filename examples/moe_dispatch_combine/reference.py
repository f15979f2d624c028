"""Reference and input builder for MoE dispatch + expert GEMMs + combine (torch + torch.distributed).

Rank r holds T tokens x_r [T, H], their routing route_r [T, 2K] (K expert ids, stored as exact
small integers in the float tensor, then K routing weights) and the weights of its E/n experts,
w1 [E/n, H, F] and w2 [E/n, F, H]. Expert e lives on rank e // (E/n) and computes
silu(v @ W1_e) @ W2_e. out_r[t] = sum_j w[t][j] * expert_{id[t][j]}(x_r[t]). Runs on gloo (CPU)
and NCCL: two all_to_all_single exchanges with the real (uneven) split sizes.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from design_space.families.moe_dispatch_combine import expert_popularity

# Largest integer every element of the dtype holds exactly (expert ids travel as floats).
_EXACT = {torch.bfloat16: 256, torch.float16: 2048, torch.float32: 1 << 24}


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs: skewed routing drawn from the Zipf popularity (k distinct experts per
    token), softmax weights, random activations and expert weights (gen is seeded per rank)."""
    t, h, f, e, k, skew = (dims[d] for d in ("t", "h", "f", "e", "k", "skew"))
    if e > _EXACT[dtype]:
        raise ValueError(f"e={e} expert ids are not exact in {dtype}: use at most {_EXACT[dtype]} experts")
    pop = torch.tensor(expert_popularity(e, skew), dtype=torch.float64)
    ids = torch.multinomial(pop.unsqueeze(0).expand(t, e).contiguous(), k, replacement=False, generator=gen)
    weights = torch.softmax(torch.randn(t, k, generator=gen), dim=-1)
    route = torch.cat([ids.to(torch.float32), weights], dim=1)
    x = torch.randn(t, h, generator=gen) + 0.25 * rank
    w1 = torch.randn(e // world, h, f, generator=gen) / h**0.5
    w2 = torch.randn(e // world, f, h, generator=gen) / f**0.5
    return {"x": x.to(dtype), "route": route.to(dtype), "w1": w1.to(dtype), "w2": w2.to(dtype)}


def experts(rows: torch.Tensor, local: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """silu(rows @ W1_e) @ W2_e for each row's local expert e, in fp32."""
    out = rows.new_zeros(rows.shape)
    for le in torch.unique(local).tolist():
        sel = local == le
        out[sel] = torch.nn.functional.silu(rows[sel] @ w1[le]) @ w2[le]
    return out


def reference(inputs: dict, dims: dict, group) -> dict:
    x, route = inputs["x"].float(), inputs["route"].float()
    w1, w2 = inputs["w1"].float(), inputs["w2"].float()
    world = dist.get_world_size(group)
    t, h, k, el = x.shape[0], x.shape[1], dims["k"], dims["e"] // world
    ids = route[:, :k].round().long().reshape(-1)  # pair i = (token i // k, choice i % k)
    order = torch.argsort(ids // el, stable=True)  # pairs grouped by destination rank
    send_counts = torch.bincount(ids // el, minlength=world)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    sends, recvs = send_counts.tolist(), recv_counts.tolist()
    # dispatch: each pair's token row plus its local expert id
    payload = torch.cat([x[order // k], (ids[order] % el).float().unsqueeze(1)], dim=1)
    got = payload.new_empty(sum(recvs), h + 1)
    dist.all_to_all_single(got, payload, recvs, sends, group=group)
    results = experts(got[:, :h], got[:, h].round().long(), w1, w2)
    # combine: results back in the order the pairs left, then the weighted sum per token
    back = x.new_empty(t * k, h)
    dist.all_to_all_single(back, results, sends, recvs, group=group)
    per_pair = torch.empty_like(back)
    per_pair[order] = back
    out = (per_pair.view(t, k, h) * route[:, k:].unsqueeze(-1)).sum(dim=1)
    return {"out": out.to(inputs["x"].dtype)}
