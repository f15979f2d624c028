"""Communication times per collective, backend and topology: the alpha-beta half of the model.

Bytes (S = the full tensor for AllGather / ReduceScatter / AllReduce, the bytes each rank sends
for AllToAll, the bytes moved for p2p; derivations in docs/model.md):

- AllGather, ReduceScatter: (n-1)/n S through each GPU's link; AllReduce 2(n-1)/n S (ring or
  two-shot), (n+1)/n S with multimem (the switch reads each GPU's whole buffer, S, and the
  reduced shard is stored back once, S/n); AllToAll (n-1)/n S; p2p S.
- Across nodes (k nodes of g ranks) the cross-node share goes over the NICs. Node-aware
  (hierarchical) designs spread a node's share over its g NICs: an AllGather needs
  (n-g)/(n g) S per NIC and (g-1)/g S per NVLink port; a ring over all n ranks (NCCL) pushes
  (n-1)/(n g) S per NIC; a flat design whose every peer sits behind the NIC (gin) pushes
  (n-1)/n S through one NIC.

Every design pays the same per byte and per hop, whoever initiates the transfer:

- one practice efficiency per medium: ``hw.link_efficiency`` on the GPU links (NCCL, SM stores
  and copy engines alike), ``MULTIMEM_EFFICIENCY`` for traffic through NVLink SHARP (NCCL's NVLS
  and the multimem backend alike), ``NET_EFFICIENCY`` on a NIC (NCCL and GIN alike);
- latency: alpha per dependent hop. NCCL's time is the fastest of the algorithms the hardware
  offers (ring, NVLS, tree, direct sends), each with its own bytes and hop count; a device
  protocol pays the hops it needs (a put + signal is one hop per round; an AllReduce has two
  rounds, reduce then broadcast; ring attention one round per step).

Time = the busiest resource's bytes over its bandwidth (links and NICs work concurrently) plus
latency. Every figure here is a model estimate; docs/model.md cites each constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from design_space.dimensions import Backend, Issuer
from design_space.hardware import Fabric, HardwareProfile, ranks_per_node

COLLECTIVES: tuple[str, ...] = ("allgather", "reducescatter", "allreduce", "alltoall", "p2p")
RINGS = ("allgather", "reducescatter", "allreduce")  # collectives NCCL runs as rings

# NVLS AllReduce on 8 H100: algbw ~275 GB/s (nccl-tests), i.e. 275 * 9/8 of 450 GB/s on the link.
MULTIMEM_EFFICIENCY = 275e9 * 9 / 8 / 450e9
NET_EFFICIENCY = 0.94  # NCCL over NDR 400 Gb/s: 46-48 of 50 GB/s per NIC (docs/model.md)
SIGNAL_COST_S = 0.4e-6  # estimate: fence + remote signal store, per chunk and issuer
GIN_ISSUE_S = 0.5e-6  # estimate: one thread posts one GIN put (descriptor + doorbell)
CE_SETUP_S = 1.0e-6  # estimate: DMA descriptor setup per copy, serial on an engine
CE_ENGINES = 2  # estimate: copy engines a rank's peer copies spread over
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


@dataclass(frozen=True)
class Algorithm:
    """One way to run a collective: its traffic, the efficiency of the links it uses, its hops."""

    name: str
    traffic: Traffic
    intra_efficiency: float
    intra_hops: float
    net_hops: float = 0.0


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


def rounds(collective: str) -> int:
    """Dependent hops of a one-round protocol: AllReduce reduces then broadcasts, the rest move once."""
    return 2 if collective == "allreduce" else 1


def hierarchical_traffic(collective: str, s: float, n: int, g: int, multimem: bool) -> Traffic:
    """The least traffic any node-aware design can get away with (the bound's)."""
    if n <= 1:
        return Traffic(0.0, 0.0)
    remote = (n - g) / n  # share of the ranks on other nodes
    intra_factor = multimem_factor if multimem else comm_factor
    if collective in ("allgather", "reducescatter", "allreduce"):
        return Traffic(intra_factor(collective, g) * s, rounds(collective) * remote * s / g)
    if collective == "alltoall":
        return Traffic((g - 1) / n * s, remote * s)
    return Traffic(0.0, s) if g < n else Traffic(s, 0.0)  # p2p: across nodes once any peer is remote


def ring_traffic(collective: str, s: float, n: int, g: int) -> Traffic:
    """NCCL's ring over all n ranks, one ring per NIC rail."""
    moved = comm_factor(collective, n) * s
    return Traffic(moved, moved / g if g < n else 0.0)


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


def _net_alpha(hw: HardwareProfile) -> float:
    return hw.network.alpha_s if hw.network else hw.link_alpha_s


def ideal_time(collective: str, s: float, steps: int, n: int, hw: HardwareProfile) -> float:
    """The ideal over every backend the hardware allows at full line rate: no legal design
    communicates faster (one hop per step, the least traffic, 100% of every link)."""
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
    """Latency terms of one ring call: n-1 steps (twice for AllReduce), one for direct sends."""
    if collective not in RINGS:
        return 1
    return rounds(collective) * (n - 1)


def nccl_algorithms(collective: str, s: float, n: int, hw: HardwareProfile) -> list[Algorithm]:
    """The algorithms NCCL can run for this collective on this topology (docs/model.md)."""
    nodes, g = ranks_per_node(n, hw)
    eff = hw.link_efficiency
    if collective not in RINGS:  # grouped sends/receives straight to each peer
        return [Algorithm("direct", hierarchical_traffic(collective, s, n, g, False), eff,
                          0.0 if nodes > 1 else 1.0, 1.0 if nodes > 1 else 0.0)]
    inter = rounds(collective) * (nodes - 1)
    algos = [Algorithm("ring", ring_traffic(collective, s, n, g), eff, ring_hops(collective, n) - inter, inter)]
    if _nvls(hw) and nodes == 1:
        algos.append(Algorithm("nvls", Traffic(multimem_factor(collective, n) * s, 0.0), MULTIMEM_EFFICIENCY,
                               rounds(collective)))
    if collective == "allreduce" and nodes > 1:  # double binary trees across nodes, chains inside
        up_down = 2 * math.ceil(math.log2(nodes))
        algos.append(Algorithm("tree", ring_traffic(collective, s, n, g), eff, 2 * (g - 1), up_down))
        if _nvls(hw):  # NVLS inside each node, trees across
            algos.append(Algorithm("nvls_tree", hierarchical_traffic(collective, s, n, g, True), MULTIMEM_EFFICIENCY,
                                   rounds(collective), up_down))
    return algos


def nccl_time(collective: str, s: float, steps: int, n: int, hw: HardwareProfile, calls: int = 1) -> float:
    """Host-launched NCCL: ``calls`` launches (chunks) of the collective, ``steps`` dependent rounds,
    over the fastest algorithm NCCL has for it (every call of a chunked pipeline picks the same)."""
    if n <= 1:
        return 0.0
    repeats = calls * steps
    best = min(_algorithm_total(a, collective, n, hw, repeats) for a in nccl_algorithms(collective, s, n, hw))
    return best + (repeats - 1) * hw.launch_s


def _algorithm_total(algo: Algorithm, collective: str, n: int, hw: HardwareProfile, repeats: int) -> float:
    _, g = ranks_per_node(n, hw)
    t = _transfer(algo.traffic, intra_bandwidth(hw, g, collective) * algo.intra_efficiency,
                  hw.nic_bytes_per_s() * NET_EFFICIENCY)
    return t + repeats * (algo.intra_hops * hw.link_alpha_s + algo.net_hops * _net_alpha(hw))


def nccl_choice(collective: str, s: float, steps: int, n: int, hw: HardwareProfile) -> str:
    """The algorithm ``nccl_time`` picks (for reports)."""
    if n <= 1:
        return "none"
    algos = nccl_algorithms(collective, s, n, hw)
    return min(algos, key=lambda a: _algorithm_total(a, collective, n, hw, steps)).name


def practical_time(collective: str, s: float, steps: int, n: int, hw: HardwareProfile) -> float:
    """The fastest communication any design reaches at practice efficiency, launches aside: NCCL's
    best algorithm or a one-round device protocol (direct puts, or multimem where the switch has
    it). No simulated design communicates faster; the speedup ceiling is built on it."""
    if n <= 1:
        return 0.0
    best = min(_algorithm_total(a, collective, n, hw, steps) for a in nccl_algorithms(collective, s, n, hw))
    nodes, g = ranks_per_node(n, hw)
    hops = steps * rounds(collective)
    # gin (or any backend across nodes) through the NIC; multimem_factor <= comm_factor covers every backend
    best = min(best, multimem_factor(collective, n) * s / _net_bandwidth(hw) + hops * _net_alpha(hw))
    if nodes == 1:
        direct = intra_bandwidth(hw, g, collective) * hw.link_efficiency
        best = min(best, comm_factor(collective, n) * s / direct + hops * hw.link_alpha_s)
    if nodes == 1 and _nvls(hw):
        mm = intra_bandwidth(hw, g, collective) * MULTIMEM_EFFICIENCY
        best = min(best, multimem_factor(collective, n) * s / mm + hops * hw.link_alpha_s)
    return best


def _net_bandwidth(hw: HardwareProfile) -> float:
    return (hw.nic_bytes_per_s() or hw.pcie_bytes_per_s) * NET_EFFICIENCY


def _device_bandwidth(point, hw: HardwareProfile, g: int, collective: str, on_net: bool) -> float:
    if on_net:  # the NIC moves the bytes (gin; a peer backend across nodes is refused by the rules)
        return _net_bandwidth(hw)
    link = intra_bandwidth(hw, g, collective)
    if point.backend is Backend.MULTIMEM:
        return link * MULTIMEM_EFFICIENCY
    if point.backend is Backend.COPY_ENGINE and hw.copy_engine_bytes_per_s:
        return min(hw.copy_engine_bytes_per_s, link * hw.link_efficiency)
    return link * hw.link_efficiency


def device_time(collective: str, s: float, steps: int, n: int, hw: HardwareProfile, point) -> CommTime:
    """Device-initiated communication of ``point`` (backend lsa, gin, multimem or copy_engine).
    Its latency is one hop per round and step (a put + signal); barriers are the caller's."""
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
    latency = steps * rounds(collective) * (_net_alpha(hw) if on_net else hw.link_alpha_s)
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
