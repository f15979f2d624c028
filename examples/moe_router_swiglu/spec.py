"""cuco spec: the full MoE layer (router + SwiGLU experts) under expert parallelism (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

# Mixtral-8x7B (config.json: hidden_size 4096, intermediate_size 14336, num_local_experts 8,
# num_experts_per_tok 2) and Qwen3-30B-A3B (hidden_size 2048, moe_intermediate_size 768,
# num_experts 128, num_experts_per_tok 8, norm_topk_prob true: softmax over the chosen 8).
_MIXTRAL = {"h": 4096, "f": 14336, "e": 8, "k": 2}
_QWEN3 = {"h": 2048, "f": 768, "e": 128, "k": 8}

SPEC = KernelSpec(
    name="moe_router_swiglu",
    pattern="moe_router_swiglu",
    description="out_r[t] = sum_j w[t][j] * expert_{id[t][j]}(x_r[t]): logits = x_r @ wg, the top-k experts per "
                "token with softmax over their logits, tokens dispatched to their experts' ranks, SwiGLU experts "
                "there, results combined back; dims: t tokens per rank, h hidden, f expert intermediate, "
                "e experts, k choices per token.",
    world_sizes=(2, 4, 8),
    # Decode batches (128 tokens per rank) and prefill chunks (4096 tokens per rank).
    shapes=(
        ShapeCase(name="mixtral-decode-t128", dims={"t": 128, **_MIXTRAL}),
        ShapeCase(name="mixtral-prefill-t4096", dims={"t": 4096, **_MIXTRAL}),
        ShapeCase(name="qwen3-decode-t128", dims={"t": 128, **_QWEN3}),
        ShapeCase(name="qwen3-prefill-t4096", dims={"t": 4096, **_QWEN3}),
    ),
    primary_shape="mixtral-prefill-t4096",
    # Tiny shapes for CPU emulation, covering both k of the sweep (k is a flag: no input's shape
    # shows it). emu-even: 80 tokens, two 64-row router tiles (the persistent kernel's layout CTA
    # waits for another CTA's choices); 256-byte rows, so a pair's ~20-80 rows span several 4 KiB
    # chunks; top-2 of 8. emu-ragged: odd token count, h=44 (88-byte rows: the tile's unaligned
    # path), f=24 not a multiple of the tiles, top-8 of 16 (4 local experts per rank at world 4).
    emulation_shapes=(
        ShapeCase(name="emu-even", dims={"t": 80, "h": 128, "f": 48, "e": 8, "k": 2}),
        ShapeCase(name="emu-ragged", dims={"t": 19, "h": 44, "f": 24, "e": 16, "k": 8}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
