"""cuco spec: the tensor-parallel MLP block with sequence parallelism (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

# dims["act"]: 1 = GELU (tanh), 2 = SiLU, 3 = SwiGLU (silu(X w1) * (X w3)).
SPEC = KernelSpec(
    name="tp_mlp",
    pattern="tp_mlp",
    description="y_r = rows r of sum_j act(allgather(x) @ w1_j) @ w2_j: sequence-parallel x [M/n, H], "
                "column-parallel w1, w3 [H, F/n], row-parallel w2 [F/n, H]; y_r is [M/n, H].",
    world_sizes=(2, 4, 8),
    # Decode to prefill tokens (M) through the MLP at TP=8: Llama-3-8B (hidden 4096, intermediate
    # 14336) and Llama-3-70B (8192, 28672) with SwiGLU (Meta's Llama 3 model card / config.json),
    # and GPT-3 175B (d_model 12288, d_ff 4 x 12288, GELU; Brown et al. 2020, Table 2.1) as Megatron-LM
    # trains it.
    shapes=(
        ShapeCase(name="decode-m128-8b", dims={"m": 128, "h": 4096, "f": 14336, "act": 3}),
        ShapeCase(name="prefill-m4096-8b", dims={"m": 4096, "h": 4096, "f": 14336, "act": 3}),
        ShapeCase(name="decode-m128-70b", dims={"m": 128, "h": 8192, "f": 28672, "act": 3}),
        ShapeCase(name="mixed-m1024-70b", dims={"m": 1024, "h": 8192, "f": 28672, "act": 3}),
        ShapeCase(name="prefill-m4096-70b", dims={"m": 4096, "h": 8192, "f": 28672, "act": 3}),
        ShapeCase(name="prefill-m2048-gpt3", dims={"m": 2048, "h": 12288, "f": 49152, "act": 1}),
    ),
    primary_shape="prefill-m4096-70b",
    # Tiny shapes for CPU emulation, one per activation: several chunks per shard at small chunk
    # sizes (rows of 512 B); ragged tiles (shard rows, H and F/n not multiples of the tile or of 8
    # elements); decode-like shards of 1-4 rows.
    emulation_shapes=(
        ShapeCase(name="emu-swiglu", dims={"m": 64, "h": 256, "f": 64, "act": 3}),
        ShapeCase(name="emu-gelu-ragged", dims={"m": 40, "h": 40, "f": 24, "act": 1}),
        ShapeCase(name="emu-silu-decode", dims={"m": 8, "h": 72, "f": 40, "act": 2}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
