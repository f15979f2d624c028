"""cuco spec: disaggregated-serving KV-cache transfer, prefill -> decode (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

SPEC = KernelSpec(
    name="kv_cache_transfer",
    pattern="kv_cache_transfer",
    description="Prefill rank p computes KV_l = X_l @ W_l [T, 2*Dkv] for every layer and streams it to decode "
                "rank p + n/2; dims: l layers, t prompt tokens, h hidden size, dkv K (or V) width per rank.",
    world_sizes=(2, 4, 8),
    # Short prompts to long prefills. Llama-3-8B (32 layers, hidden 4096, 8 KV heads x 128 = 1024)
    # on one GPU per instance, and Llama-3-70B with TP=8 (80 layers, hidden 8192, one KV head per rank).
    shapes=(
        ShapeCase(name="short-t128", dims={"l": 32, "t": 128, "h": 4096, "dkv": 1024}),
        ShapeCase(name="chat-t1024", dims={"l": 32, "t": 1024, "h": 4096, "dkv": 1024}),
        ShapeCase(name="prefill-t4096", dims={"l": 32, "t": 4096, "h": 4096, "dkv": 1024}),
        ShapeCase(name="prefill-t16384", dims={"l": 32, "t": 16384, "h": 4096, "dkv": 1024}),
        ShapeCase(name="prefill-70b-tp8-t8192", dims={"l": 80, "t": 8192, "h": 8192, "dkv": 128}),
    ),
    primary_shape="prefill-t4096",
    # Tiny shapes for CPU emulation: several chunks per layer at 4 KiB chunks; emu-ragged has
    # ragged chunks, tiles and K (45 tokens, 80-wide KV rows, hidden 40).
    emulation_shapes=(
        ShapeCase(name="emu-even", dims={"l": 3, "t": 96, "h": 64, "dkv": 32}),
        ShapeCase(name="emu-ragged", dims={"l": 2, "t": 45, "h": 40, "dkv": 40}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
