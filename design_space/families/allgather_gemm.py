"""The all-gather + GEMM pattern: its definition and cost model. Its kernel templates live in
kernels/allgather_gemm."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import CHUNK_BYTES, Backend, Placement
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType

# dims["bias"]: 1 adds bias_r [N/n] to C_r in the GEMM epilogue (Megatron-LM's ColumnParallelLinear
# keeps bias=True by default), 2 does not; a shape without it means 2, as specs written before it did.
BIAS_OFF, BIAS_ON = 2, 1


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    m, n, k = dims["m"], dims["n"], dims["k"]
    nl = n // world
    e = dtype.itemsize
    bias = nl if dims.get("bias", BIAS_OFF) == BIAS_ON else 0
    return WorkloadCost(
        flops=2.0 * m * nl * k,
        hbm_bytes=float((m * k + k * nl + bias + m * nl) * e),
        collective="allgather",
        comm_bytes=float(m * k * e),
        out_rows=m,
        out_cols=nl,
        local_fraction=1.0 / world,
        entry_handshake=True,  # pushes start at once: they wait for the peers to enter the call
    )

def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in ("m", "n", "k") if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    problems = [f"{d}={dims[d]} is not divisible by world size {world}" for d in ("m", "n") if dims[d] % world]
    if dims.get("bias", BIAS_OFF) not in (BIAS_ON, BIAS_OFF):
        problems.append(f"bias={dims['bias']} is a flag: {BIAS_ON} adds the bias, {BIAS_OFF} (or no bias dim) does not")
    return problems

def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    return dims["m"] * dims["k"] * dtype.itemsize  # the gathered A

def excluded(point: DesignPoint) -> Optional[str]:
    if (point.backend is Backend.HOST_NCCL and point.placement is Placement.SEQUENTIAL
            and point.chunk_bytes != CHUNK_BYTES[-1]):
        return "a sequential library all-gather moves the whole shard at once: chunk_bytes has no effect " \
               f"(the family keeps only {CHUNK_BYTES[-1] // 1024}K)"
    return None

SUPPORTED: dict[str, tuple] = every_value()

PATTERN = Pattern(
    name="allgather_gemm",
    description="Tensor-parallel all-gather + GEMM: C_r = allgather(A) @ B_r (+ bias_r), A sharded by rows, "
    "B and the bias by columns.",
    dims=("m", "n", "k", "bias"),
    inputs=("a", "b", "bias"),
    outputs=("c",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    excluded=excluded,
    varied_dims=("m", "n", "k"),
    optional_flags={"bias": (BIAS_OFF, BIAS_ON)},
    optional_inputs=("bias",),
)
register_pattern(PATTERN)
