"""The ring-attention pattern (context-parallel attention): definition, cost model and template
renderer. Rank r holds Q_r, K_r, V_r [H, S/n, D]; KV blocks travel around the ring in n - 1 steps
while each rank folds them into an online softmax; O_r = softmax(Q_r K^T / sqrt(D)) V."""

from __future__ import annotations

from typing import Mapping, Optional

from design_space.dimensions import CHUNK_BYTES, Backend, Issuer, Placement, SyncScope
from design_space.model import WorkloadCost
from design_space.patterns import Pattern, every_value, register_pattern, require_renderable
from design_space.point import DesignPoint
from design_space.spec import DType
from design_space.templates import ring_attention_cuda as cu
from design_space.templates import ring_attention_cuda_comm as comm
from design_space.templates import ring_attention_cuda_host as host

MAX_D = 128  # the templates' MAX_D: one row of Q/K/V per tile row in shared memory

_DEVICE = (Backend.LSA, Backend.GIN)  # backends whose communication runs in our kernels
_SIGNALLED = (SyncScope.PER_PEER_SIGNAL, SyncScope.PER_TILE_SIGNAL)


def _pairs(sl: int, n: int, causal: bool) -> list[float]:
    """(query, key) pairs each rank scores: causal rank r sees r whole blocks and half its own."""
    if not causal:
        return [float(sl * sl * n)] * n
    return [r * sl * sl + sl * (sl + 1) / 2 for r in range(n)]


def cost(dims: Mapping[str, int], world: int, dtype: DType) -> WorkloadCost:
    """Per rank (the mean rank; ``imbalance`` says how much more the busiest, last rank does)."""
    h, s, d, causal = dims["h"], dims["s"], dims["d"], dims["mask"] == 2
    n, e = world, dtype.itemsize
    sl = s // n
    pairs = _pairs(sl, n, causal)
    mean = sum(pairs) / n
    block = 2 * h * sl * d * e  # one K/V block
    blocks_read = (n + 1) / 2 if causal else n  # causal ranks skip the blocks of later positions
    own = sl * (sl + 1) / 2 if causal else sl * sl
    return WorkloadCost(
        flops=4.0 * h * d * mean,  # Q K^T and P V, 2 flops per multiply-add each
        hbm_bytes=float(2 * h * sl * d * e + blocks_read * block),  # Q in, O out, the K/V blocks folded in
        collective="p2p",
        comm_bytes=float((n - 1) * block),  # S: every block a rank passes on over the run
        out_rows=h * sl,
        out_cols=d,
        local_fraction=own / mean,  # the own block needs no transfer
        imbalance=max(pairs) / mean,
        steps=n - 1,
    )


def dim_problems(dims: Mapping[str, int], world: int) -> list[str]:
    missing = [k for k in ("h", "s", "d", "mask") if k not in dims]
    if missing:
        return [f"missing dimension(s) {missing}"]
    problems = []
    if dims["s"] % world:
        problems.append(f"s={dims['s']} is not divisible by world size {world}")
    if dims["d"] > MAX_D:
        problems.append(f"d={dims['d']} exceeds {MAX_D}: the templates keep a head's row in shared memory")
    if dims["mask"] not in (1, 2):
        problems.append(f"mask={dims['mask']} must be 1 (full attention) or 2 (causal mask)")
    return problems


def symm_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    # world + 1 KV slots: receive slots (all of them when a design moves the whole ring before
    # or beside the compute, or the gathered blocks of host_nccl) and the own block packed.
    return (world + 1) * 2 * dims["h"] * (dims["s"] // world) * dims["d"] * dtype.itemsize


def workspace_bytes(dims: Mapping[str, int], world: int, dtype: DType) -> int:
    # Online-softmax state between launches: acc[D], m, l per query row, fp32.
    return dims["h"] * (dims["s"] // world) * (dims["d"] + 2) * 4


def excluded(point: DesignPoint) -> Optional[str]:
    if (point.backend is Backend.HOST_NCCL and point.placement is Placement.SEQUENTIAL
            and point.chunk_bytes != CHUNK_BYTES[0]):
        return ("host_nccl sequential moves every block with one all-gather, so chunk_bytes changes nothing and "
                f"other values would duplicate points: use chunk {CHUNK_BYTES[0] // 1024}K")
    return None


def _all_slots(point: DesignPoint) -> bool:
    """Designs that move the whole ring before or beside the compute use one slot per step."""
    return point.placement is Placement.SEQUENTIAL or (
        point.placement is Placement.SPLIT_PUT_WAIT and point.sync_scope is SyncScope.GLOBAL_BARRIER)


def _constants(point: DesignPoint) -> str:
    why, body = cu.SLOTS_ALL if _all_slots(point) else cu.SLOTS_DOUBLE
    comm_sms = point.comm_ctas if point.backend in _DEVICE else 0
    issuers = {Issuer.THREAD: "THREADS  // issuer thread", Issuer.WARP: "(THREADS / 32)  // issuer warp"}
    return (cu.CONSTANTS.replace("@CHUNK_BYTES@", str(point.chunk_bytes))
            .replace("@ISSUERS_PER_CTA@", issuers.get(point.issuer, "1  // one issuer per CTA"))
            .replace("@COMM_CTAS@", str(point.comm_ctas)).replace("@COMM_SMS@", str(comm_sms))
            .replace("@SLOTS_WHY@", why).replace("@SLOTS_BODY@", body))


def _sync(point: DesignPoint) -> str:
    """Signal primitives, the arrival protocol of the sync scope, and credits."""
    b, scope = point.backend, point.sync_scope
    prims = {Backend.GIN: comm.SIGNALS_GIN, Backend.HOST_NCCL: ""}.get(b, comm.SIGNALS_PAD)
    if scope is SyncScope.GLOBAL_BARRIER:
        return prims + (comm.SCOPE_GLOBAL_GIN if b is Backend.GIN else comm.SCOPE_GLOBAL)
    arrivals = comm.SCOPE_TILE if scope is SyncScope.PER_TILE_SIGNAL else comm.SCOPE_PEER
    forwarders = "comm_workers(p)  // each comm CTA" if b in _DEVICE else "1  // the host's copy stream"
    return prims + arrivals + comm.CREDITS.replace("@FORWARDERS@", forwarders)


def _device_comm(point: DesignPoint) -> str:
    """lsa / gin: the communication CTAs' code."""
    issuer = point.issuer.value
    if point.backend is Backend.LSA:
        send = comm.SEND_CHUNK_LSA.replace("@PUT@", f"cuco_put_{issuer}")
    else:
        send = comm.SEND_CHUNK_GIN
    steps = comm.COMM_STEPS_GLOBAL if point.sync_scope is SyncScope.GLOBAL_BARRIER else comm.COMM_STEPS_SIGNALS
    kernel = comm.FUSED_KERNEL if point.placement is Placement.FUSED_PERSISTENT else comm.COMM_KERNEL
    return comm.GROUP_SYNC[issuer] + send + comm.SEND_STEP[issuer] + steps + kernel


def _ring(point: DesignPoint) -> str:
    """Host side of the ring steps for the backend."""
    if point.backend in _DEVICE:
        return host.RING_DEVICE
    if point.backend is Backend.HOST_NCCL:
        return cu.PACK_KERNEL + host.PREPARE_PACK + host.RING_COLL
    if point.sync_scope is SyncScope.GLOBAL_BARRIER:
        return cu.PACK_KERNEL + comm.BARRIER_KERNEL + host.PREPARE_PACK + host.RING_CE_GLOBAL
    ring = host.RING_CE_SIGNALS
    for key, text in (host.CE_TILE if point.sync_scope is SyncScope.PER_TILE_SIGNAL else host.CE_PEER).items():
        ring = ring.replace(key + "\n", text + "\n" if text else "")
    return cu.PACK_KERNEL + host.PREPARE_PACK + ring


def _host(point: DesignPoint) -> str:
    pl, signalled = point.placement, point.sync_scope in _SIGNALLED
    if pl is Placement.FUSED_PERSISTENT:
        return host.HOST_FUSED
    if pl is Placement.SEQUENTIAL and point.backend is Backend.HOST_NCCL:
        return cu.PACK_KERNEL + host.HOST_GATHER
    if pl is Placement.SEQUENTIAL:
        return _ring(point) + host.HOST_SEQUENTIAL
    if pl is Placement.SPLIT_PUT_WAIT:
        body = host.HOST_SPLIT_SIGNALS if signalled else host.HOST_SPLIT_GLOBAL
    else:
        body = host.HOST_OVERLAP_SIGNALS if signalled else host.HOST_OVERLAP_GLOBAL
    return _ring(point) + host.STREAMS + body


def render(point: DesignPoint) -> str:
    """CUDA source for ``point`` (which must be supported and not excluded)."""
    require_renderable("ring_attention", SUPPORTED, excluded, point)
    gathered = point.backend is Backend.HOST_NCCL and point.placement is Placement.SEQUENTIAL
    attention = cu.ATTENTION.replace("@KV_SLOT@", "origin(c, t)" if gathered else "slot_of(c, G)")
    if point.placement is not Placement.FUSED_PERSISTENT:
        attention += cu.ATTEND_STEPS_KERNEL
    parts = [
        cu.HEADER.replace("@POINT@", point.key()),
        _constants(point),
        _sync(point),
        attention,
        _device_comm(point) if point.backend in _DEVICE else "",
        _host(point),
    ]
    return "".join(parts)


SUPPORTED: dict[str, tuple] = every_value(without_backends=(Backend.MULTIMEM,))  # nothing to reduce or broadcast

PATTERN = Pattern(
    name="ring_attention",
    description="Context-parallel ring attention: O_r = softmax(Q_r K^T / sqrt(D)) V over the whole sequence; "
                "Q, K, V sharded by sequence [H, S/n, D], KV blocks passed around the ring in n - 1 steps.",
    dims=("h", "s", "d", "mask"),  # mask: 1 full, 2 causal (dims are positive)
    inputs=("q", "k", "v"),
    outputs=("o",),
    supported=SUPPORTED,
    cost=cost,
    dim_problems=dim_problems,
    symm_bytes=symm_bytes,
    render=render,
    notes=(
        "Each rank passes on at step t the block it received at step t - 1: every link carries one block "
        "per step, n - 1 dependent steps.",
        "Double-buffered designs cycle two receive slots and credit a slot back to the left neighbour once "
        "it is folded in and passed on; sequential and split_put_wait/global_barrier use one slot per step.",
        "Causal ranks skip the blocks of later positions: the last rank does about twice the mean work "
        "(no zig-zag load balancing).",
    ),
    excluded=excluded,
    workspace_bytes=workspace_bytes,
)
register_pattern(PATTERN)
