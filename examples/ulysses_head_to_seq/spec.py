"""cuco spec: the DeepSpeed-Ulysses all-to-all after attention, heads -> sequence (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

SPEC = KernelSpec(
    name="ulysses_head_to_seq",
    pattern="ulysses_head_to_seq",
    description="DeepSpeed-Ulysses head -> sequence all-to-all: rank r's y [B, S, H/n, D] becomes x [B, S/n, H, D] "
                "(head group j from rank j, sequence block r); dims: b batch, s sequence, h heads, d head dim.",
    world_sizes=(2, 4, 8),
    # The attention output's exchange back to sequence shards, over n GPUs. Llama 3 (arXiv 2407.21783,
    # table 3): 8B has 32 query heads of 128, 70B 64; context up to 128K tokens. DeepSpeed-Ulysses
    # (arXiv 2309.14509) exchanges the attention output this way at 8K-1M tokens.
    shapes=(
        ShapeCase(name="llama3-8b-o-s4k", dims={"b": 1, "s": 4096, "h": 32, "d": 128}),
        ShapeCase(name="llama3-8b-o-s32k", dims={"b": 1, "s": 32768, "h": 32, "d": 128}),
        ShapeCase(name="llama3-8b-o-s128k", dims={"b": 1, "s": 131072, "h": 32, "d": 128}),
        ShapeCase(name="llama3-70b-o-s64k", dims={"b": 1, "s": 65536, "h": 64, "d": 128}),
        ShapeCase(name="llama3-8b-o-b4-s8k", dims={"b": 4, "s": 8192, "h": 32, "d": 128}),
    ),
    primary_shape="llama3-8b-o-s32k",
    # Tiny shapes for CPU emulation: emu-even has 2 (n=4) and 8 (n=2) chunks per block at 4 KiB
    # chunks; emu-ragged has 3 batch elements that chunks straddle (a copy never does: runs split at
    # them), ragged last chunks, and 72-byte row segments at n=4 (bf16: no 16-byte vectors).
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
