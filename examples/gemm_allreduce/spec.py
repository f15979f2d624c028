"""cuco spec: row-parallel GEMM + all-reduce with an optional fused RMSNorm (see README.md)."""

from design_space import DType, KernelSpec, ShapeCase

# dims["rmsnorm"]: 1 = output RMSNorm(Y) * gamma, 2 = output Y, 3 = output Y + gamma (the [N] input
# as the layer's bias, added once after the sum). ShapeCase dims must be positive.
SPEC = KernelSpec(
    name="gemm_allreduce",
    pattern="gemm_allreduce",
    description="Y = allreduce(A_r @ B_r), A_r [M, K/n], B_r [K/n, N]; RMSNorm(Y) * gamma when rmsnorm == 1, "
                "Y + gamma (a bias) when rmsnorm == 3.",
    world_sizes=(2, 4, 8),
    # Decode to prefill tokens (M) through row-parallel layers of Llama-3-70B-like models (hidden
    # 8192, MLP 28672) and a Llama-3-405B-like attention output (hidden 16384): the down
    # projection's all-reduce feeds the next RMSNorm (fused), the attention output's is plain.
    shapes=(
        ShapeCase(name="decode-m128-mlp", dims={"m": 128, "n": 8192, "k": 28672, "rmsnorm": 1}),
        ShapeCase(name="decode-m64-attn", dims={"m": 64, "n": 16384, "k": 16384, "rmsnorm": 2}),
        ShapeCase(name="mixed-m1024-mlp", dims={"m": 1024, "n": 8192, "k": 28672, "rmsnorm": 1}),
        ShapeCase(name="prefill-m4096-mlp", dims={"m": 4096, "n": 8192, "k": 28672, "rmsnorm": 1}),
        ShapeCase(name="prefill-m8192-attn", dims={"m": 8192, "n": 8192, "k": 8192, "rmsnorm": 2}),
    ),
    primary_shape="prefill-m4096-mlp",
    # Tiny shapes for CPU emulation: several chunks per owner block at small chunk sizes (rows of
    # 1 KiB), and a ragged case (M not a multiple of the world size or the 32-row tiles, N not a
    # multiple of the 32-column tiles) without RMSNorm, and one with the bias.
    emulation_shapes=(
        ShapeCase(name="emu-norm", dims={"m": 48, "n": 512, "k": 64, "rmsnorm": 1}),
        ShapeCase(name="emu-ragged", dims={"m": 37, "n": 520, "k": 40, "rmsnorm": 2}),
        ShapeCase(name="emu-bias", dims={"m": 20, "n": 264, "k": 48, "rmsnorm": 3}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
