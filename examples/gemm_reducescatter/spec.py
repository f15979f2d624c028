"""cuco spec: row-parallel GEMM + reduce-scatter (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

SPEC = KernelSpec(
    name="gemm_reducescatter",
    pattern="gemm_reducescatter",
    description="C_r = rows r of sum_j A_j @ B_j: row-parallel A_r [M, K/n], B_r [K/n, N]; C_r is [M/n, N].",
    world_sizes=(2, 4, 8),
    # Decode-like small M to prefill-like large M. The second half of a tensor-parallel MLP: the
    # down-projection of Llama-3-70B (hidden N=8192, intermediate K=28672) and of Llama-3-405B
    # (N=16384, K=53248), K split over the ranks.
    shapes=(
        ShapeCase(name="decode-m128", dims={"m": 128, "n": 8192, "k": 28672}),
        ShapeCase(name="mixed-m1024", dims={"m": 1024, "n": 8192, "k": 28672}),
        ShapeCase(name="prefill-m4096", dims={"m": 4096, "n": 8192, "k": 28672}),
        ShapeCase(name="prefill-m4096-405b", dims={"m": 4096, "n": 16384, "k": 53248}),
        ShapeCase(name="prefill-m16384", dims={"m": 16384, "n": 8192, "k": 28672}),
    ),
    primary_shape="prefill-m4096",
    # Tiny shapes for CPU emulation: several chunks per GEMM band at small chunk sizes; ragged
    # tiles and chunks (block rows, chunk rows, N and K/n not multiples of 32, a chunk straddling
    # two bands); decode-like row blocks far smaller than one band.
    emulation_shapes=(
        ShapeCase(name="emu-even", dims={"m": 128, "n": 128, "k": 64}),
        ShapeCase(name="emu-ragged", dims={"m": 72, "n": 200, "k": 24}),
        ShapeCase(name="emu-decode", dims={"m": 8, "n": 96, "k": 32}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
