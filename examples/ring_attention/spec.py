"""cuco spec: context-parallel ring attention (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

# mask: 1 = full attention, 2 = causal (dims must be positive, so no 0/1 flag).
# Per rank: 8 heads of 128 (a 64-head model such as Llama-3-70B under tensor parallel 8, K/V
# counted per query head). S is the whole sequence the ranks share.
_HEADS, _HEAD_DIM = 8, 128

SPEC = KernelSpec(
    name="ring_attention",
    pattern="ring_attention",
    description="O_r = softmax(Q_r K^T / sqrt(D)) V over the whole sequence; Q, K, V sharded by sequence "
                "[H, S/n, D]; KV blocks passed around the ring.",
    world_sizes=(2, 4, 8),
    # Short requests (latency and launch bound, the decode-like end) to long-context prefill,
    # causal, plus one bidirectional (encoder / vision) case.
    shapes=(
        ShapeCase(name="short-s1024", dims={"h": _HEADS, "s": 1024, "d": _HEAD_DIM, "mask": 2}),
        ShapeCase(name="prefill-s8192", dims={"h": _HEADS, "s": 8192, "d": _HEAD_DIM, "mask": 2}),
        ShapeCase(name="prefill-s32768", dims={"h": _HEADS, "s": 32768, "d": _HEAD_DIM, "mask": 2}),
        ShapeCase(name="long-s131072", dims={"h": _HEADS, "s": 131072, "d": _HEAD_DIM, "mask": 2}),
        ShapeCase(name="full-s32768", dims={"h": _HEADS, "s": 32768, "d": _HEAD_DIM, "mask": 1}),
    ),
    primary_shape="prefill-s32768",
    # Tiny shapes for CPU emulation: several 4 KiB chunks per block, causal and full attention,
    # and a ragged one (rows not multiples of the 16/32-row tiles, rows of 40 bytes that take
    # the element-wise copy path).
    emulation_shapes=(
        ShapeCase(name="emu-causal", dims={"h": 2, "s": 128, "d": 32, "mask": 2}),
        ShapeCase(name="emu-full", dims={"h": 1, "s": 64, "d": 64, "mask": 1}),
        ShapeCase(name="emu-ragged", dims={"h": 3, "s": 44, "d": 20, "mask": 2}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
