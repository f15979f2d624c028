"""Communication times per collective, backend and topology: the alpha-beta half of the model.

Bytes (REFERENCE section 3; S = the full tensor for AllGather / ReduceScatter / AllReduce, the
bytes each rank sends for AllToAll, the bytes moved for p2p):

- AllGather, ReduceScatter: (n-1)/n S through each GPU's link; AllReduce 2(n-1)/n S (ring or
  two-shot), (n+1)/n S with multimem (the switch reads each GPU's whole buffer, S, and the
  reduced shard is stored back once, S/n); AllToAll (n-1)/n S; p2p S.
- Across nodes (k nodes of g ranks) the cross-node share goes over the NICs. Node-aware
  (hierarchical) designs spread a node's share over its g NICs: an AllGather needs
  (n-g)/(n g) S per NIC and (g-1)/g S per NVLink port; a ring over all n ranks (NCCL) pushes
  (n-1)/(n g) S per NIC; a flat design whose every peer sits behind the NIC (gin) pushes
  (n-1)/n S through one NIC.

Time = the busiest resource's bytes over its bandwidth (links and NICs work concurrently) plus
latency: alpha per dependent round for direct/one-shot designs, (n-1) alpha for rings, the
network's alpha once a round crosses nodes. Every figure here is a model estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from design_space.dimensions import Backend, Issuer
from design_space.hardware import Fabric, HardwareProfile, ranks_per_node

COLLECTIVES: tuple[str, ...] = ("allgather", "reducescatter", "allreduce", "alltoall", "p2p")
RINGS = ("allgather", "reducescatter", "allreduce")  # collectives NCCL runs as rings

# Practice shares of a link's peak (REFERENCE s.3: collectives reach ~65-75% of the ideal).
NCCL_LINK_EFFICIENCY = 0.70
NCCL_NET_EFFICIENCY = 0.80  # estimate: NCCL bus bandwidth over IB/RoCE, large messages
DEVICE_LINK_EFFICIENCY = 0.85  # well-formed SM-driven peer stores
COPY_ENGINE_LINK_EFFICIENCY = 0.75  # DMA peer copies run below SM pushes on NVLink in practice
GIN_NET_EFFICIENCY = 0.85  # estimate: one-sided RDMA writes, no host proxy on the data path
SIGNAL_COST_S = 0.4e-6  # fence + remote signal store, per chunk and issuer
GIN_ISSUE_S = 0.5e-6  # estimate: one thread posts one GIN put (descriptor + doorbell)
CE_SETUP_S = 1.0e-6  # estimate: DMA descriptor setup per copy, serial on an engine
CE_ENGINES = 2  # copy engines a rank's peer copies spread over
ISSUER_BW_FACTOR = {Issuer.CTA: 1.0, Issuer.WARP: 1.0, Issuer.THREAD: 0.35, Issuer.COPY_ENGINE: 1.0}
ISSUERS_PER_CTA = {Issuer.CTA: 1, Issuer.WARP: 8, Issuer.THREAD: 256, Issuer.COPY_ENGINE: 1}


@dataclass(frozen=True)
class Traffic:
    """Bytes through the busiest GPU's intra-node link and through its NIC (one direction)."""

    intra: float
    net: float


@dataclass(frozen=True)
class CommTime:
    """A design's communication: total time, chunks moved, and how long comm SMs stay busy."""

    seconds: float
    chunks: int
    sm_busy: float


def comm_factor(collective: str, n: int) -> float:
    """Bytes over the busiest link as a fraction of S (flat ring or direct algorithm)."""
    if n <= 1:
        return 0.0
    return {
        "allgather": (n - 1) / n,
        "reducescatter": (n - 1) / n,
        "allreduce": 2 * (n - 1) / n,
        "alltoall": (n - 1) / n,
        "p2p": 1.0,
    }[collective]


def multimem_factor(collective: str, n: int) -> float:
    """Like ``comm_factor`` with NVLink SHARP: only AllReduce moves fewer bytes (in-switch reduce)."""
    flat = comm_factor(collective, n)
    return min(flat, (n + 1) / n) if collective == "allreduce" and n > 1 else flat


def hierarchical_traffic(collective: str, s: float, n: int, g: int, multimem: bool) -> Traffic:
    """The least traffic any node-aware design can get away with (the bound's)."""
    if n <= 1:
        return Traffic(0.0, 0.0)
    remote = (n - g) / n  # share of the ranks on other nodes
    intra_factor = multimem_factor if multimem else comm_factor
    if collective in ("allgather", "reducescatter", "allreduce"):
        rounds = 2 if collective == "allreduce" else 1
        return Traffic(intra_factor(collective, g) * s, rounds * remote * s / g)
    if collective == "alltoall":
        return Traffic((g - 1) / n * s, remote * s)
    return Traffic(0.0, s) if g < n else Traffic(s, 0.0)  # p2p: across nodes once any peer is remote


def nccl_traffic(collective: str, s: float, n: int, g: int, multimem: bool) -> Traffic:
    """NCCL's rings over all n ranks, one ring per NIC rail; NVLS for a single node's AllReduce."""
    if collective not in RINGS:
        return hierarchical_traffic(collective, s, n, g, multimem)
    if g == n:
        return Traffic((multimem_factor if multimem else comm_factor)(collective, n) * s, 0.0)
    moved = comm_factor(collective, n) * s
    return Traffic(moved, moved / g)


def intra_bandwidth(hw: HardwareProfile, g: int, collective: str) -> float:
    """What one GPU's intra-node links deliver to a collective among ``g`` ranks of a node."""
    link = hw.link_bytes_per_s
    if g <= 2 or hw.fabric in (Fabric.NVSWITCH, Fabric.PCIE):
        return link
    if hw.fabric is Fabric.MESH:
        # all-to-all traffic uses every direct link at once; one peer gets only its share of the links
        return link / (g - 1) if collective == "p2p" else link
    # pairs: 1/(g-1) of the peer traffic rides the bridge, the rest PCIe, both at once
    if collective == "p2p":
        return min(link, hw.pcie_bytes_per_s)  # a ring step leaves the pair over PCIe
    return 1.0 / max(1.0 / ((g - 1) * link), (g - 2) / ((g - 1) * hw.pcie_bytes_per_s))


def _transfer(tr: Traffic, intra_bw: float, net_bw: float) -> float:
    intra = tr.intra / intra_bw if tr.intra else 0.0
    net = tr.net / net_bw if tr.net else 0.0
    return max(intra, net)


def _nvls(hw: HardwareProfile) -> bool:
    return hw.multimem and hw.nvswitch


def ideal_time(collective: str, s: float, steps: int, n: int, hw: HardwareProfile) -> float:
    """The ideal over every backend the hardware allows: no legal design communicates faster."""
    if n <= 1:
        return 0.0
    nodes, g = ranks_per_node(n, hw)
    tr = hierarchical_traffic(collective, s, n, g, _nvls(hw))
    nic = hw.nic_bytes_per_s()
    if nodes == 1:
        # one node: the faster of the GPU links and a NIC loopback (gin) carries everything
        fastest = max(intra_bandwidth(hw, g, collective), nic)
        alpha = min(hw.link_alpha_s, hw.network.alpha_s) if hw.network else hw.link_alpha_s
        return tr.intra / fastest + steps * alpha
    return _transfer(tr, intra_bandwidth(hw, g, collective), nic) + steps * hw.network.alpha_s


def ring_hops(collective: str, n: int) -> int:
    """Latency terms of one NCCL call: n-1 ring steps (twice for AllReduce), one for direct sends."""
    if collective not in RINGS:
        return 1
    return (2 if collective == "allreduce" else 1) * (n - 1)


def nccl_time(collective: str, s: float, steps: int, n: int, hw: HardwareProfile, calls: int = 1) -> float:
    """Host-launched NCCL: ``calls`` launches (chunks) of the collective, ``steps`` dependent rounds."""
    if n <= 1:
        return 0.0
    nodes, g = ranks_per_node(n, hw)
    tr = nccl_traffic(collective, s, n, g, _nvls(hw))
    t = _transfer(tr, intra_bandwidth(hw, g, collective) * NCCL_LINK_EFFICIENCY,
                  hw.nic_bytes_per_s() * NCCL_NET_EFFICIENCY)
    alpha = hw.network.alpha_s if nodes > 1 else hw.link_alpha_s
    rounds = calls * steps
    return t + rounds * ring_hops(collective, n) * alpha + (rounds - 1) * hw.launch_s


def _device_bandwidth(point, hw: HardwareProfile, g: int, collective: str, on_net: bool) -> float:
    if on_net:  # the NIC moves the bytes (gin; a peer backend across nodes is refused by the rules)
        return (hw.nic_bytes_per_s() or hw.pcie_bytes_per_s) * GIN_NET_EFFICIENCY
    link = intra_bandwidth(hw, g, collective)
    if point.backend is Backend.COPY_ENGINE:
        measured = hw.copy_engine_bytes_per_s
        return min(measured, link) if measured else link * COPY_ENGINE_LINK_EFFICIENCY
    return link * DEVICE_LINK_EFFICIENCY


def device_time(collective: str, s: float, steps: int, n: int, hw: HardwareProfile, point) -> CommTime:
    """Device-initiated communication of ``point`` (backend lsa, gin, multimem or copy_engine)."""
    if n <= 1:
        return CommTime(0.0, 1, 0.0)
    nodes, g = ranks_per_node(n, hw)
    backend = point.backend
    on_net = backend is Backend.GIN or nodes > 1
    moved = (multimem_factor if backend is Backend.MULTIMEM else comm_factor)(collective, n) * s
    chunks = max(1, math.ceil(moved / point.chunk_bytes))
    bw = _device_bandwidth(point, hw, g, collective, on_net)
    if backend in (Backend.LSA, Backend.MULTIMEM):  # SMs move the bytes (multimem: SMs issue the switch ops)
        bw = min(bw, point.comm_ctas * hw.per_sm_copy_bytes_per_s * ISSUER_BW_FACTOR[point.issuer])
    issuers = point.comm_ctas * ISSUERS_PER_CTA[point.issuer]
    alpha = (hw.network.alpha_s if hw.network else hw.link_alpha_s) if on_net else hw.link_alpha_s
    latency = steps * alpha
    if backend is Backend.COPY_ENGINE:
        # no SMs; each chunk is a host-enqueued copy (one per peer at least) with its own DMA setup
        calls = max(chunks, n - 1)
        transfer = max(moved / bw + calls * CE_SETUP_S / CE_ENGINES, calls * hw.launch_s)
        return CommTime(transfer + latency, chunks, 0.0)
    if backend is Backend.GIN:
        issue = math.ceil(chunks / issuers) * GIN_ISSUE_S  # SMs only post the puts
        return CommTime(moved / bw + issue + latency, chunks, issue)
    total = moved / bw + math.ceil(chunks / issuers) * SIGNAL_COST_S + latency
    return CommTime(total, chunks, total)
