"""cuco spec: column-parallel GEMM + all-gather (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

# dims["bias"]: 1 = add bias_r in the GEMM epilogue, 2 = no bias (ShapeCase dims must be positive).
SPEC = KernelSpec(
    name="gemm_allgather",
    pattern="gemm_allgather",
    description="Y = [X @ W_0 | ... | X @ W_{n-1}] (+ bias) on every rank: X [M, K] replicated, W_r [K, N/n], "
    "bias_r [N/n] (Megatron-LM ColumnParallelLinear, gather_output=True).",
    world_sizes=(2, 4, 8),
    # Decode to prefill tokens (M) through two column-parallel layers whose output is gathered:
    # - the LM head of Llama-3-8B (hidden K = 4096, vocabulary N = 128256, no bias), its
    #   vocab-parallel logits gathered on every rank for sampling;
    # - the MLP up-projection of a Llama-3-70B-sized model (hidden K = 8192, intermediate
    #   N = 28672) with the bias Megatron-LM's ColumnParallelLinear adds by default (bias=True),
    #   gathered when the next layer is not tensor-parallel.
    # Every N is divisible by 8 (128256 / 8 = 16032, 28672 / 8 = 3584).
    shapes=(
        ShapeCase(name="decode-m128-lmhead", dims={"m": 128, "n": 128256, "k": 4096, "bias": 2}),
        ShapeCase(name="batch-m1024-lmhead", dims={"m": 1024, "n": 128256, "k": 4096, "bias": 2}),
        ShapeCase(name="decode-m128-mlp", dims={"m": 128, "n": 28672, "k": 8192, "bias": 1}),
        ShapeCase(name="prefill-m4096-mlp", dims={"m": 4096, "n": 28672, "k": 8192, "bias": 1}),
        ShapeCase(name="prefill-m8192-mlp", dims={"m": 8192, "n": 28672, "k": 8192, "bias": 1}),
    ),
    primary_shape="prefill-m4096-mlp",
    # Tiny shapes for CPU emulation: several chunks per block at small chunk sizes (rows of 256 or
    # 512 B, 16-byte aligned, so the copy into Y takes its vector path), and a ragged case (M not a
    # multiple of the 64-row tiles, N/n not a multiple of the 64-column tiles or of 8) without bias.
    emulation_shapes=(
        ShapeCase(name="emu-bias", dims={"m": 48, "n": 512, "k": 64, "bias": 1}),
        ShapeCase(name="emu-ragged", dims={"m": 37, "n": 520, "k": 40, "bias": 2}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
