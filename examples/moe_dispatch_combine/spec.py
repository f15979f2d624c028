"""cuco spec: MoE expert-parallel dispatch + expert GEMMs + combine (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

# DeepSeek-V3 MoE layer (hidden 7168, 256 routed experts, top-8, expert intermediate 2048);
# skew 60 = Zipf exponent 0.6 over expert popularity: the busiest rank gets ~1.34x the mean rows
# at 8 ranks (design_space.families.moe_dispatch_combine.rank_loads).
_V3 = {"h": 7168, "f": 2048, "e": 256, "k": 8, "skew": 60}

SPEC = KernelSpec(
    name="moe_dispatch_combine",
    pattern="moe_dispatch_combine",
    description="out_r[t] = sum_j w[t][j] * expert_{id[t][j]}(x_r[t]): tokens dispatched to the ranks of their "
                "top-k experts (skewed routing), expert GEMMs there, results combined back; dims: t tokens per "
                "rank, h hidden, f expert intermediate, e experts, k choices, skew (Zipf exponent x 100).",
    world_sizes=(2, 4, 8),
    # Decode batches (DeepEP's low-latency mode serves 128 tokens per rank) to prefill chunks
    # (its normal mode: 4096 tokens per rank).
    shapes=(
        ShapeCase(name="decode-t128", dims={"t": 128, **_V3}),
        ShapeCase(name="decode-t512", dims={"t": 512, **_V3}),
        ShapeCase(name="prefill-t2048", dims={"t": 2048, **_V3}),
        ShapeCase(name="prefill-t4096", dims={"t": 4096, **_V3}),
    ),
    primary_shape="prefill-t4096",
    # Tiny shapes for CPU emulation. emu-even: 512-byte rows, so a pair's ~12 rows span several
    # 4 KiB chunks; strongly skewed. emu-ragged: odd token count, 48-byte rows, F not a multiple
    # of the 32-wide tiles, k=3 of 4 experts (one expert per rank at world 4).
    emulation_shapes=(
        ShapeCase(name="emu-even", dims={"t": 12, "h": 256, "f": 32, "e": 8, "k": 2, "skew": 150}),
        ShapeCase(name="emu-ragged", dims={"t": 5, "h": 24, "f": 40, "e": 4, "k": 3, "skew": 200}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
