"""cuco spec: tensor-parallel all-gather + GEMM (see README.md in this folder)."""

from design_space import DType, KernelSpec, ShapeCase

SPEC = KernelSpec(
    name="allgather_gemm",
    pattern="allgather_gemm",
    description="C_r = allgather(A) @ B_r: sequence-parallel A [M/n, K], column-parallel B_r [K, N/n].",
    world_sizes=(2, 4, 8),
    # Decode-like small M to prefill-like large M (Llama-70B-like MLP up-projection, TP=8).
    shapes=(
        ShapeCase(name="decode-m128", dims={"m": 128, "n": 28672, "k": 8192}),
        ShapeCase(name="mixed-m1024", dims={"m": 1024, "n": 28672, "k": 8192}),
        ShapeCase(name="prefill-m4096", dims={"m": 4096, "n": 49152, "k": 12288}),
        ShapeCase(name="prefill-m16384", dims={"m": 16384, "n": 28672, "k": 8192}),
    ),
    primary_shape="prefill-m4096",
    # Tiny shapes for CPU emulation: several chunks per shard at small chunk sizes, ragged
    # tiles (shard rows and K not multiples of the 32-wide tiles).
    emulation_shapes=(
        ShapeCase(name="emu-even", dims={"m": 128, "n": 64, "k": 256}),
        ShapeCase(name="emu-ragged", dims={"m": 40, "n": 24, "k": 40}),
    ),
    emulation_world_sizes=(2, 4),
    dtypes=(DType.BF16, DType.FP16, DType.FP32),
    reference="reference:reference",
    inputs="reference:make_inputs",
    hardware="H100",
)
