"""The tensor-parallel MLP block with sequence parallelism (Megatron-LM): all-gather -> GEMM ->
activation -> GEMM -> reduce-scatter. Its definition and its two-phase cost; its kernel templates
live in kernels/tp_mlp."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import CHUNK_BYTES, Backend, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType

B, P, S = Backend, Placement, SyncScope

DIMS = ("m", "h", "f", "act")
# dims["act"]: the activation between the GEMMs (a flag, kept out of varied_dims).
GELU_TANH, SILU, SWIGLU = 1, 2, 3  # GPT / Megatron's GeLU, plain SiLU, Llama's silu(x w1) * (x w3)
ACTIVATIONS = {GELU_TANH: "gelu (tanh)", SILU: "silu", SWIGLU: "swiglu"}


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank, two phases (docs/model.md, "Two phases"):

    1. all-gather of x (S = M*H*itemsize) + the up projection U = act(X @ w1) [M, F/n] (SwiGLU: X @ w1
       and X @ w3 from one read of X), reading X and the weights and writing U once;
    2. the down projection P_r = U @ w2 [M, H] (U read, the partial written once) + a reduce-scatter
       of P (S = M*H*itemsize).

    A rank's own rows need no transfer in either phase (local_fraction 1/n)."""
    m, h, f = dims["m"], dims["h"], dims["f"]
    fl, e = f // world, dtype.itemsize
    gates = 2 if dims["act"] == SWIGLU else 1
    down = WorkloadCost(
        flops=2.0 * m * fl * h,
        hbm_bytes=float((m * fl + fl * h + m * h) * e),
        collective="reducescatter",
        comm_bytes=float(m * h * e),
        out_rows=m,
        out_cols=h,
        local_fraction=1.0 / world,
    )
    return WorkloadCost(
        flops=2.0 * m * h * fl * gates,
        hbm_bytes=float((m * h + gates * h * fl + m * fl) * e),
        collective="allgather",
        comm_bytes=float(m * h * e),
        out_rows=m,
        out_cols=fl,
        local_fraction=1.0 / world,
        then=down,
    )


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in DIMS if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing} (act: 1 GELU-tanh, 2 SiLU, 3 SwiGLU)"]
    problems = [f"{d}={dims[d]} is not divisible by world size {world}" for d in ("m", "f") if dims[d] % world]
    if dims["act"] not in ACTIVATIONS:
        problems.append(f"act={dims['act']} is not an activation: use 1 (GELU-tanh), 2 (SiLU) or 3 (SwiGLU)")
    return problems


def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """GATHER [M][H] (phase 1: the gathered x), then STAGE [M][H] (this rank's partial) and RECV
    [world][M/n][H] (the peers' partials of its rows) of phase 2: three M x H tensors, disjoint so a
    fused kernel's phases never write what the other still reads."""
    return 3 * dims["m"] * dims["h"] * dtype.itemsize


def workspace_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """U = act(X @ w1) [M, F/n] in the dtype: phase 1 writes it, phase 2 reads it."""
    return dims["m"] * (dims["f"] // world) * dtype.itemsize


def excluded(point: DesignPoint) -> Optional[str]:
    if point.backend is B.HOST_NCCL and point.placement is P.SEQUENTIAL and point.chunk_bytes != CHUNK_BYTES[-1]:
        return ("a sequential library all-gather and reduce-scatter move whole tensors at once: chunk_bytes has no "
                f"effect (the family keeps only {CHUNK_BYTES[-1] // 1024}K)")
    if point.backend is B.MULTIMEM and point.placement is P.SPLIT_PUT_WAIT and point.sync_scope is S.GLOBAL_BARRIER:
        return ("the down projection's multimem puts nothing (the owner reads the partials through the switch), so "
                "with a global barrier there is no early put to split from a late wait: that design is "
                "multimem/sequential")
    return None


SUPPORTED: dict[str, tuple] = every_value()

PATTERN = Pattern(
    name="tp_mlp",
    description="Tensor-parallel MLP with sequence parallelism: y_r = rows r of sum_j act(allgather(x) @ w1_j) @ "
                "w2_j; x sharded by rows, w1 (and w3) by columns, w2 by rows; act GELU-tanh, SiLU or SwiGLU.",
    dims=DIMS,
    inputs=("x", "w1", "w3", "w2"),
    outputs=("y",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    notes=(
        "phase 1 (all-gather + up projection) renders as allgather_gemm's pieces, phase 2 (down projection + "
        "reduce-scatter) as gemm_reducescatter's, one design point for both; U = act(X @ w1) lives in the workspace",
        "fused_persistent runs both phases in one kernel: a partial tile waits for the U rows it reads",
        "act 3 (SwiGLU) keeps two accumulators per tile (X @ w1 and X @ w3) and stores silu(a) * b once; w3 is "
        "unused otherwise",
    ),
    excluded=excluded,
    workspace_bytes=workspace_bytes,
    varied_dims=("m", "h", "f"),
)
register_pattern(PATTERN)
