"""cuco spec: the DeepSpeed-Ulysses all-to-all before attention, sequence -> heads (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

SPEC = KernelSpec(
    name="ulysses_seq_to_head",
    pattern="ulysses_seq_to_head",
    description="DeepSpeed-Ulysses sequence -> head all-to-all: rank r's x [B, S/n, H, D] becomes y [B, S, H/n, D] "
                "(sequence block j from rank j, head group r); dims: b batch, s sequence, h heads, d head dim.",
    world_sizes=(2, 4, 8),
    # One exchange of q (or k, v) before attention, sequence parallel over n GPUs. Llama 3 (arXiv
    # 2407.21783, table 3): 8B has 32 query and 8 KV heads of 128, 70B 64 query heads; context up to
    # 128K tokens. DeepSpeed-Ulysses (arXiv 2309.14509) exchanges q, k and v this way at 8K-1M tokens.
    shapes=(
        ShapeCase(name="llama3-8b-q-s4k", dims={"b": 1, "s": 4096, "h": 32, "d": 128}),
        ShapeCase(name="llama3-8b-q-s32k", dims={"b": 1, "s": 32768, "h": 32, "d": 128}),
        ShapeCase(name="llama3-8b-kv-s32k", dims={"b": 1, "s": 32768, "h": 8, "d": 128}),
        ShapeCase(name="llama3-8b-q-s128k", dims={"b": 1, "s": 131072, "h": 32, "d": 128}),
        ShapeCase(name="llama3-70b-q-s64k", dims={"b": 1, "s": 65536, "h": 64, "d": 128}),
        ShapeCase(name="llama3-8b-q-b4-s8k", dims={"b": 4, "s": 8192, "h": 32, "d": 128}),
    ),
    primary_shape="llama3-8b-q-s32k",
    # Tiny shapes for CPU emulation: emu-even has 2 (n=4) and 8 (n=2) chunks per block at 4 KiB
    # chunks; emu-ragged has 3 batch elements that chunks straddle, ragged last chunks, and 72-byte
    # row segments at n=4 (bf16: no 16-byte vectors).
    emulation_shapes=(
        ShapeCase(name="emu-even", dims={"b": 1, "s": 128, "h": 8, "d": 64}),
        ShapeCase(name="emu-ragged", dims={"b": 3, "s": 88, "h": 4, "d": 36}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
