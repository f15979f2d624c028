"""The DeepSpeed-Ulysses sequence <-> head all-to-all alone (no GEMM), as two patterns that share
one set of kernel templates (kernels/ulysses_alltoall, rendered per ``direction``):

- ``ulysses_seq_to_head``: rank r holds x_r [B, S/n, H, D] (its sequence shard, every head) and
  ends with y_r [B, S, H/n, D] (every position of its head group r): y_r[:, block j] = x_j[:, :, group r];
- ``ulysses_head_to_seq``: the inverse (after attention), y_r [B, S, H/n, D] -> x_r [B, S/n, H, D].

Their definitions and cost model. Jacobs et al., "DeepSpeed Ulysses" (arXiv 2309.14509), section 3:
the all-to-all before attention gathers the sequence and scatters the heads, the one after it the
reverse."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import Backend, Issuer
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern
from design_space.point import DesignPoint
from design_space.spec import DType

DIMS = ("b", "s", "h", "d")
DIRECTIONS = ("seq_to_head", "head_to_seq")

MAX_CHUNKS = 3072  # the templates' MAX_CHUNKS: chunk signals per call, over every peer (GIN has 4096)
THREADS = 256  # the templates' threads per CTA


def tensor_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """One rank's tensor, before or after the exchange: B * S/n * H * D = B * S * H/n * D elements."""
    return dims["b"] * (dims["s"] // world) * dims["h"] * dims["d"] * dtype.itemsize


def cost_for(direction: str):
    """``Pattern.cost`` of one direction: the same bytes both ways, only the output's shape differs."""
    def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
        """Per rank: no FLOPs; HBM: the input read once and the output written once; S (alltoall) =
        the bytes each rank sends, its whole tensor (docs/model.md; the own block, 1/n, stays home)."""
        x = tensor_bytes(dims, world, dtype)
        b, s, h, d = (dims[k] for k in DIMS)
        rows, cols = (b * s, h // world * d) if direction == "seq_to_head" else (b * s // world, h * d)
        return WorkloadCost(
            flops=0.0,
            hbm_bytes=float(2 * x),
            collective="alltoall",
            comm_bytes=float(x),
            out_rows=rows,
            out_cols=cols,
            local_fraction=1.0 / world,  # the own head group / sequence block is copied, not sent
            pipeline_stages=max(1, world - 1),  # stream_overlap: one send and one unpack launch per peer
        )
    return cost


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [d for d in DIMS if d not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    problems = [f"{d}={dims[d]} must be at least 1" for d in DIMS if dims[d] < 1]
    problems += [f"{d}={dims[d]} is not divisible by world size {world} (the {what} is split across the ranks)"
                 for d, what in (("s", "sequence"), ("h", "head count")) if dims[d] % world]
    return problems


def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    """SEND [peer][B*S/n rows][H/n*D] (the packed blocks) + RECV [source][rows][H/n*D]; mirrors the
    templates' send_off / recv_off."""
    return 2 * tensor_bytes(dims, world, dtype)


def excluded(point: DesignPoint) -> Optional[str]:
    """Thread issuers send whole chunks and a call has at most MAX_CHUNKS of them."""
    busy = MAX_CHUNKS // THREADS
    if point.issuer is Issuer.THREAD and point.comm_ctas > busy:
        return (f"with issuer thread every thread sends whole chunks and a call has at most {MAX_CHUNKS} chunks: "
                f"comm CTAs beyond {busy} (of {THREADS} threads) never send anything; use comm_ctas <= {busy}")
    return None


# An all-to-all moves distinct blocks between every pair: nothing to reduce or broadcast through the switch.
SUPPORTED: dict[str, tuple] = every_value(without_backends=(Backend.MULTIMEM,))

NOTES = (
    "Row t = b * S/n + s of a block: its H/n * D elements are contiguous in both layouts, so every transfer "
    "moves whole row segments.",
    "SEND [peer][rows][H/n*D] and RECV [source][rows][H/n*D] live in the symmetric buffer (wire order): gin, "
    "host_nccl and copy_engine seq_to_head pack into SEND; lsa stores (and copy_engine head_to_seq copies) "
    "rows straight from the input. Every backend unpacks RECV into the output; the own block is copied locally.",
    "Senders wait for a credit from every peer (its RECV is free: its previous call's unpack is done), or meet "
    "in a barrier (global_barrier); a chunk is at most CHUNK_BYTES of rows of one peer's block, at most 3072 "
    "chunks per call.",
    "No GEMM: FLOPs are 0 and the unpack is the 'compute' the transfers overlap.",
)


def _pattern(direction: str) -> Pattern:
    src, dst = ("x", "y") if direction == "seq_to_head" else ("y", "x")
    shapes = {"x": "[B, S/n, H, D]", "y": "[B, S, H/n, D]"}
    return Pattern(
        name=f"ulysses_{direction}",
        description=f"DeepSpeed-Ulysses all-to-all, {direction.replace('_', ' ')}: each rank's {src} "
                    f"{shapes[src]} becomes {dst} {shapes[dst]}; block j of the sequence of rank r's y holds "
                    "rank j's x rows of head group r. No GEMM.",
        dims=DIMS,
        inputs=(src,),
        outputs=(dst,),
        supported=SUPPORTED,
        cost=cost_for(direction),
        dim_problems=dim_problems,
        symm_bytes=symm_bytes,
        notes=NOTES,
        excluded=excluded,
        varied_dims=("s", "h", "d"),  # the batch stays as the spec gives it
    )


SEQ_TO_HEAD = _pattern("seq_to_head")
HEAD_TO_SEQ = _pattern("head_to_seq")
register_pattern(SEQ_TO_HEAD)
register_pattern(HEAD_TO_SEQ)
