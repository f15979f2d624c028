"""Reference and input builder for the full MoE layer, router and SwiGLU experts inside, under
expert parallelism (torch + torch.distributed).

Rank r holds T tokens x_r [T, H], the router weight wg [H, E] (the same on every rank) and its E/n
experts' weights: w13 [E/n, H, 2F] (gate W1 in columns [0, F), up W3 in [F, 2F), as vLLM's w13 and
transformers' gate_up_proj hold them) and w2 [E/n, F, H]. Expert e lives on rank e // (E/n) and
computes (silu(v @ W1_e) * (v @ W3_e)) @ W2_e. logits = x_r @ wg in fp32; each token takes the K
experts of largest logit (equal logits: the lower expert id first) with weights softmax over those K
logits (Mixtral). out_r[t] = sum_j w[t][j] * expert_{id[t][j]}(x_r[t]). Runs on gloo (CPU) and NCCL:
two all_to_all_single exchanges with the real (uneven) split sizes.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

ROUTER_SEED = 50321  # wg is a model weight: the same on every rank, so not from the per-rank gen
CHOSEN = (1.0, 3.0)  # a token's K experts get designed logits uniform in this range (unequal weights) ...
OTHERS = (-2.0, -0.5)  # ... the other experts' lie here: the K-th and (K+1)-th differ by >= 1.5
MARGIN = 1.0  # what make_inputs checks on the logits of the rounded tensors


def make_inputs(dims: dict, rank: int, world: int, dtype: torch.dtype, gen: torch.Generator) -> dict:
    """One rank's inputs (gen is seeded per rank). Each token's K experts are drawn uniformly (a
    balanced router) and x is built so that x @ wg equals designed logits: the chosen experts' at
    least 1.5 above the others' (checked: >= 1.0 on the rounded tensors). wg has orthonormal columns,
    so the logits stay within [-2, 3] and x of order 1: a logit's rounding to bf16 (<= 2^-7) or an
    H-long dot product's fp32 or bf16 rounding differences stay ~200x below the margin, and every
    reduction order, in the kernel, the reference or a user's bf16 code, picks the same experts."""
    t, h, f, e, k = (dims[d] for d in ("t", "h", "f", "e", "k"))
    if h < e:
        raise ValueError(f"h={h} < e={e}: the router weight [h, e] cannot give every expert its own logit; "
                         "use at least as many hidden features as experts")
    shared = torch.Generator().manual_seed(ROUTER_SEED + 7 * h + e)
    a = torch.randn(h, e, generator=shared, dtype=torch.float64)
    wg = (a @ torch.linalg.inv(torch.linalg.cholesky(a.T @ a)).T).to(dtype)  # orthonormal columns
    chosen = torch.rand(t, e, generator=gen).argsort(dim=1)[:, :k]
    logits = OTHERS[0] + (OTHERS[1] - OTHERS[0]) * torch.rand(t, e, generator=gen, dtype=torch.float64)
    high = CHOSEN[0] + (CHOSEN[1] - CHOSEN[0]) * torch.rand(t, k, generator=gen, dtype=torch.float64)
    logits.scatter_(1, chosen, high)
    x0 = torch.randn(t, h, generator=gen, dtype=torch.float64) + 0.25 * rank
    w = wg.double()
    left_inverse = torch.linalg.solve(w.T @ w, w.T)  # [e, h], left_inverse @ w = I (w: full column rank)
    x = (x0 + (logits - x0 @ w) @ left_inverse).to(dtype)  # x @ w = logits before rounding
    _check_margin(x, wg, k)
    w13 = torch.randn(e // world, h, 2 * f, generator=gen) / h**0.5
    w2 = torch.randn(e // world, f, h, generator=gen) / f**0.5
    return {"x": x, "wg": wg, "w13": w13.to(dtype), "w2": w2.to(dtype)}


def _check_margin(x: torch.Tensor, wg: torch.Tensor, k: int) -> None:
    if k >= wg.shape[1]:
        return  # every expert is chosen: no K-th / (K+1)-th boundary
    top = torch.sort(x.double() @ wg.double(), dim=1, descending=True).values
    gap = float((top[:, k - 1] - top[:, k]).min()) if len(top) else MARGIN
    if gap < MARGIN:
        raise ValueError(f"routing margin {gap:.3g} < {MARGIN} after rounding to {x.dtype}: draw the designed "
                         "logits further apart (CHOSEN / OTHERS)")


def route(x: torch.Tensor, wg: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each token's k experts by falling logit and their softmax weights. Equal logits: the lower
    expert id first, made explicit with a stable sort (torch.topk's order among ties is not
    documented), the kernel's rule too."""
    values, ids = torch.sort(x @ wg, dim=1, descending=True, stable=True)
    return ids[:, :k], torch.softmax(values[:, :k], dim=1)


def experts(rows: torch.Tensor, local: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """(silu(rows @ W1_e) * (rows @ W3_e)) @ W2_e for each row's local expert e, in fp32."""
    f = w2.shape[1]
    out = rows.new_zeros(rows.shape)
    for le in torch.unique(local).tolist():
        sel = local == le
        gate_up = rows[sel] @ w13[le]
        out[sel] = (torch.nn.functional.silu(gate_up[:, :f]) * gate_up[:, f:]) @ w2[le]
    return out


def reference(inputs: dict, dims: dict, group) -> dict:
    x, wg, w13, w2 = (inputs[n].float() for n in ("x", "wg", "w13", "w2"))
    world = dist.get_world_size(group)
    t, h, k, el = x.shape[0], x.shape[1], dims["k"], w13.shape[0]
    chosen, weights = route(x, wg, k)
    ids = chosen.reshape(-1)  # pair i = (token i // k, choice i % k)
    order = torch.argsort(ids // el, stable=True)  # pairs grouped by destination rank
    send_counts = torch.bincount(ids // el, minlength=world)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    sends, recvs = send_counts.tolist(), recv_counts.tolist()
    # dispatch: each pair's token row plus its local expert id
    payload = torch.cat([x[order // k], (ids[order] % el).float().unsqueeze(1)], dim=1)
    got = payload.new_empty(sum(recvs), h + 1)
    dist.all_to_all_single(got, payload, recvs, sends, group=group)
    results = experts(got[:, :h], got[:, h].round().long(), w13, w2)
    # combine: results back in the order the pairs left, then the weighted sum per token
    back = x.new_empty(t * k, h)
    dist.all_to_all_single(back, results, sends, recvs, group=group)
    per_pair = torch.empty_like(back)
    per_pair[order] = back
    out = (per_pair.view(t, k, h) * weights.unsqueeze(-1)).sum(dim=1)
    return {"out": out.to(inputs["x"].dtype)}
