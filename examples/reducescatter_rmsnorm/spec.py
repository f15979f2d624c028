"""cuco spec: reduce-scatter + residual add + RMSNorm, no GEMM (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

# dims["rmsnorm"], dims["residual"]: 1 = apply, 2 = skip (ShapeCase dims must be positive).
SPEC = KernelSpec(
    name="reducescatter_rmsnorm",
    pattern="reducescatter_rmsnorm",
    description="y_r = RMSNorm(rows r of sum_j P_j + R_r) * gamma: P_j [M, N] partials, R_r [M/n, N], y_r [M/n, N].",
    world_sizes=(2, 4, 8),
    # Megatron-LM sequence parallelism: the partials of a row-parallel layer (attention output or
    # MLP down projection) are reduce-scattered along the tokens M, the residual added, and the next
    # block's RMSNorm applied, on Llama-3-70B (hidden N=8192) and Llama-3-405B (N=16384) at M =
    # 128 to 16384 tokens; the last block's sum + residual has no norm after it.
    shapes=(
        ShapeCase(name="decode-m128-70b", dims={"m": 128, "n": 8192, "rmsnorm": 1, "residual": 1}),
        ShapeCase(name="mixed-m1024-70b", dims={"m": 1024, "n": 8192, "rmsnorm": 1, "residual": 1}),
        ShapeCase(name="prefill-m4096-70b", dims={"m": 4096, "n": 8192, "rmsnorm": 1, "residual": 1}),
        ShapeCase(name="prefill-m4096-70b-last", dims={"m": 4096, "n": 8192, "rmsnorm": 2, "residual": 1}),
        ShapeCase(name="prefill-m4096-405b", dims={"m": 4096, "n": 16384, "rmsnorm": 1, "residual": 1}),
        ShapeCase(name="prefill-m16384-70b", dims={"m": 16384, "n": 8192, "rmsnorm": 1, "residual": 1}),
    ),
    primary_shape="prefill-m4096-70b",
    # Tiny shapes for CPU emulation, together covering both values of each flag: several chunks per
    # row block at small chunk sizes (rows of 1 KiB); a ragged N (odd: rows start off the pairs
    # multimem reduces) with the norm but no residual; a decode-like block of a few short rows.
    emulation_shapes=(
        ShapeCase(name="emu-norm", dims={"m": 48, "n": 512, "rmsnorm": 1, "residual": 1}),
        ShapeCase(name="emu-ragged", dims={"m": 36, "n": 203, "rmsnorm": 1, "residual": 2}),
        ShapeCase(name="emu-decode", dims={"m": 24, "n": 96, "rmsnorm": 2, "residual": 1}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
