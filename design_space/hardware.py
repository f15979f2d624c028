"""Hardware profiles: the GPU, how GPUs of a node are wired, and the network between nodes.

A profile is one machine shape the model and the rules reason about: the chip (SMs, L2, HBM,
peak FLOP/s), the intra-node interconnect and its fabric, and the topology NODES x GPUS per
node with each GPU's NIC.

Profile names (case-insensitive; ``profile_names()`` lists the bases)::

    BASE[:NODESxGPUS][:NETWORK]

    BASE        A100, A100-PCIe, A100-mesh, H100, H100-PCIe, H100-NVL, H100-mesh, H200, B200
                (or a profile a plugin registered)
    NODESxGPUS  nodes x GPUs per node, e.g. 2x8; GPUs per node at most the base's (8 on an HGX
                board, 4 on a mesh board); default 1 x the base's
    NETWORK     each GPU's NIC: ib200, ib400, ib800 (InfiniBand HDR/NDR/XDR), roce200, roce400,
                or none (single node only); default the base's

e.g. ``H100`` = one HGX H100 node of 8 GPUs; ``H100:2x8:ib400`` = 2 such nodes, 400 Gb/s
InfiniBand per GPU; ``A100:4x8:roce200`` = the CUCo paper's A100 + RoCE setting at 4 nodes.

Figures are vendor peak numbers; link bandwidths are per GPU and per direction; latencies
(``alpha``) are one hop including the software issue, used only for latency terms (the rules
never use them). docs/model.md gives every figure's source (datasheet, NCCL's own tuning model,
a published measurement, or an estimate with its reasoning).
"""

from __future__ import annotations

import math
import re
from enum import Enum
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from design_space.errors import SpecError

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class LinkKind(str, Enum):
    NVLINK = "nvlink"
    PCIE = "pcie"
    INFINIBAND = "infiniband"
    ROCE = "roce"


class Fabric(str, Enum):
    """How the GPUs of one node reach each other."""

    NVSWITCH = "nvswitch"  # every GPU reaches every other at its full NVLink rate; multicast (NVLS) possible
    MESH = "mesh"  # direct NVLink point-to-point: a GPU's links are split evenly among the node's other GPUs
    PAIRS = "pairs"  # NVLink bridges join GPUs two by two; every other peer is reached over PCIe P2P
    PCIE = "pcie"  # no NVLink: peers over PCIe P2P through the PCIe switches


class Interconnect(BaseModel):
    """One kind of link: bandwidth per GPU per direction and the latency of one hop."""

    model_config = _FROZEN

    name: str
    kind: LinkKind
    bytes_per_s: float = Field(gt=0)
    alpha_s: float = Field(ge=0)


def _link(name: str, kind: LinkKind, bytes_per_s: float, alpha_s: float) -> Interconnect:
    return Interconnect(name=name, kind=kind, bytes_per_s=bytes_per_s, alpha_s=alpha_s)


# NVLink: links x per-link rate, one direction (A100: 12 x 25 GB/s; H100: 18 x 25 GB/s; B200: 18 x 50 GB/s;
# the datasheets quote twice these as "bidirectional"). PCIe: x16 effective per direction after protocol
# overhead (Gen4 ~25 of 31.5 GB/s raw, Gen5 ~50 of 63). Networks: line rate per GPU NIC. Hop latencies
# (alpha) sit between the per-step latencies of NCCL's own tuning model for the same link (docs/model.md).
INTERCONNECTS: dict[str, Interconnect] = {
    "nvlink3": _link("NVLink 3", LinkKind.NVLINK, 300e9, 1.5e-6),
    "nvlink4": _link("NVLink 4", LinkKind.NVLINK, 450e9, 1.5e-6),
    "nvlink4-bridge": _link("NVLink 4 bridge", LinkKind.NVLINK, 300e9, 1.5e-6),  # H100 NVL: 600 GB/s bidirectional
    "nvlink5": _link("NVLink 5", LinkKind.NVLINK, 900e9, 1.5e-6),
    "pcie4": _link("PCIe Gen4 x16", LinkKind.PCIE, 25e9, 2.5e-6),
    "pcie5": _link("PCIe Gen5 x16", LinkKind.PCIE, 50e9, 2.5e-6),
    "ib200": _link("InfiniBand HDR 200 Gb/s", LinkKind.INFINIBAND, 25e9, 3.0e-6),
    "ib400": _link("InfiniBand NDR 400 Gb/s", LinkKind.INFINIBAND, 50e9, 3.0e-6),
    "ib800": _link("InfiniBand XDR 800 Gb/s", LinkKind.INFINIBAND, 100e9, 3.0e-6),
    "roce200": _link("RoCE 200 Gb/s", LinkKind.ROCE, 25e9, 4.0e-6),
    "roce400": _link("RoCE 400 Gb/s", LinkKind.ROCE, 50e9, 4.0e-6),
}
NETWORKS: tuple[str, ...] = tuple(k for k, v in INTERCONNECTS.items() if v.kind in (LinkKind.INFINIBAND, LinkKind.ROCE))


class HardwareProfile(BaseModel):
    model_config = _FROZEN

    name: str
    arch: str  # nvcc target, e.g. "sm_90"
    sms: int = Field(gt=0)
    l2_bytes: int
    hbm_bytes_per_s: float = Field(gt=0)
    peak_flops: dict[str, float]  # dtype name -> dense FLOP/s (tensor cores where they apply)
    # Non-tensor FP32 FMA rate of the CUDA cores (what scalar code runs at); 0 = peak_flops["fp32"] when
    # listed, else 1/16 of the best listed peak (docs/model.md).
    scalar_flops: float = Field(default=0.0, ge=0)
    link_bytes_per_s: float = Field(gt=0)  # intra-node GPU link (NVLink, or PCIe on a PCIe fabric), per GPU one way
    nvswitch: bool
    multimem: bool  # the chip has NVLink SHARP multicast (Hopper+); usable only through an NVSwitch
    gpus_per_node: int = Field(default=8, ge=1)
    link_alpha_s: float = 1.5e-6  # one hop / signal latency over the intra-node link
    launch_s: float = 3.0e-6  # host launch overhead per kernel (or memcpy) on a stream
    barrier_s: float = 3.0e-6  # device-side cross-rank barrier
    per_sm_copy_bytes_per_s: float = 30e9  # one CTA's peer-store bandwidth (built-ins: NCCL's per-channel cap)
    # Share of the intra-node link's line rate any initiator (NCCL, SM stores, copy engines) reaches:
    # nccl-tests busbw on DGX H100 (docs/model.md).
    link_efficiency: float = Field(default=0.82, gt=0, le=1)
    copy_engine_bytes_per_s: float = 0.0  # DMA peer copies; 0 = the link at link_efficiency, like any initiator
    link: str = "nvlink4"  # key of the intra-node interconnect in INTERCONNECTS (for display)
    fabric: Fabric = Fabric.NVSWITCH  # filled from ``nvswitch`` when not given
    pcie_bytes_per_s: float = Field(default=50e9, gt=0)  # host link: GPU <-> NIC, and non-NVLink peers
    nodes: int = Field(default=1, ge=1)
    network: Optional[Interconnect] = INTERCONNECTS["ib400"]  # each GPU's NIC; None = no network

    @model_validator(mode="before")
    @classmethod
    def _fabric_from_nvswitch(cls, data: Any) -> Any:
        # Profiles written before fabrics existed say only nvswitch=True/False; without a switch the
        # GPUs of such a board are an NVLink mesh.
        if isinstance(data, dict) and "fabric" not in data and "nvswitch" in data:
            data = {**data, "fabric": Fabric.NVSWITCH if data["nvswitch"] else Fabric.MESH}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "HardwareProfile":
        if (self.fabric is Fabric.NVSWITCH) != self.nvswitch:
            raise ValueError(f"nvswitch={self.nvswitch} contradicts fabric={self.fabric.value}")
        if self.nodes > 1 and self.network is None:
            raise ValueError(f"{self.nodes} nodes need a network between them (network=None)")
        if self.copy_engine_bytes_per_s > self.link_bytes_per_s:
            raise ValueError("copy engines cannot move peer data faster than the link they use")
        return self

    @property
    def world(self) -> int:
        """GPUs in the whole topology."""
        return self.nodes * self.gpus_per_node

    @property
    def intra(self) -> Interconnect:
        """The intra-node link as an ``Interconnect``."""
        known = INTERCONNECTS.get(self.link)
        kind = known.kind if known else (LinkKind.PCIE if self.fabric is Fabric.PCIE else LinkKind.NVLINK)
        return Interconnect(name=known.name if known else self.link, kind=kind,
                            bytes_per_s=self.link_bytes_per_s, alpha_s=self.link_alpha_s)

    def cuda_core_flops(self) -> float:
        """Non-tensor FP32 FMA rate (FLOP/s): what scalar code can reach at best."""
        if self.scalar_flops:
            return self.scalar_flops
        return self.peak_flops.get("fp32") or max(self.peak_flops.values(), default=0.0) / 16

    def nic_bytes_per_s(self) -> float:
        """What one GPU can push through its NIC: the line rate, capped by the GPU's PCIe link."""
        return min(self.network.bytes_per_s, self.pcie_bytes_per_s) if self.network else 0.0

    def world_problem(self, world: int) -> Optional[str]:
        """Why ``world`` ranks do not fit this topology, or None."""
        if world > self.world:
            return (f"world size {world} needs {world} GPUs but {self.name} has {self.nodes}x{self.gpus_per_node}"
                    f" = {self.world}")
        return None

    def describe(self) -> str:
        """One line for reports, e.g. ``H100:2x8:ib400 (sm_90, 132 SMs): 2x8 GPUs, NVLink 4 via nvswitch ...``."""
        net = f", {self.network.name} per GPU" if self.network else ", no network"
        return (f"{self.name} ({self.arch}, {self.sms} SMs): {self.nodes}x{self.gpus_per_node} GPUs, "
                f"{self.intra.name} via {self.fabric.value} {self.link_bytes_per_s / 1e9:.0f} GB/s{net}")


_PROFILES: dict[str, HardwareProfile] = {}
_GRAMMAR = ("write BASE[:NODESxGPUS][:NETWORK], e.g. 'H100', 'H100:2x8:ib400', 'A100:4x8:roce200'; "
            "BASE one of {bases}; NETWORK one of {nets} or none")


def register_profile(profile: HardwareProfile) -> None:
    """Add a base profile (built-ins and plugins go through here); topologies derive from it by name."""
    if ":" in profile.name:
        raise SpecError(f"profile name {profile.name!r} contains ':'",
                        "register a base name; topologies are derived by get_profile('BASE:NxG:NET')")
    _PROFILES[profile.name.lower()] = profile


def profile_names() -> tuple[str, ...]:
    """The registered base profiles (each takes a ``:NODESxGPUS`` and ``:NETWORK`` suffix)."""
    return tuple(sorted(p.name for p in _PROFILES.values()))


def _grammar_fix() -> str:
    return _GRAMMAR.format(bases=", ".join(profile_names()), nets=", ".join(NETWORKS))


def get_profile(name: str) -> HardwareProfile:
    """The profile ``name`` names: a registered base, optionally with a topology and a network."""
    base_name, *tokens = name.strip().split(":")
    base = _PROFILES.get(base_name.strip().lower())
    if base is None:
        raise SpecError(f"unknown hardware profile {base_name!r} in {name!r}", _grammar_fix())
    if not tokens:
        return base
    if len(tokens) > 2:
        raise SpecError(f"cannot parse hardware profile {name!r}: too many ':' parts", _grammar_fix())
    topology, network = (1, base.gpus_per_node), base.network
    for token in (t.strip().lower() for t in tokens):
        match = re.fullmatch(r"(\d+)x(\d+)", token)
        if match:
            topology = (int(match.group(1)), int(match.group(2)))
        elif token == "none":
            network = None
        elif token in NETWORKS:
            network = INTERCONNECTS[token]
        else:
            raise SpecError(f"cannot parse {token!r} in hardware profile {name!r}", _grammar_fix())
    return _derive(base, topology, network, name)


def _derive(base: HardwareProfile, topology: tuple[int, int], network: Optional[Interconnect],
            asked: str) -> HardwareProfile:
    nodes, gpus = topology
    if nodes < 1 or not 1 <= gpus <= base.gpus_per_node:
        raise SpecError(f"topology {nodes}x{gpus} in {asked!r} does not fit: a {base.name} node holds 1 to "
                        f"{base.gpus_per_node} GPUs and there is at least one node",
                        f"use NODESx1..NODESx{base.gpus_per_node}, e.g. {base.name}:2x{base.gpus_per_node}:ib400")
    if nodes > 1 and network is None:
        raise SpecError(f"{asked!r} spans {nodes} nodes with no network",
                        f"name the network, e.g. {base.name}:{nodes}x{gpus}:ib400")
    if nodes == 1 and gpus == base.gpus_per_node and network == base.network:
        return base  # "H100:1x8:ib400" is "H100"
    net_key = next((k for k, v in INTERCONNECTS.items() if v == network), "none")
    canonical = f"{base.name}:{nodes}x{gpus}:{net_key}"
    return base.model_copy(update={"name": canonical, "nodes": nodes, "gpus_per_node": gpus, "network": network})


def _profile(**kw: Any) -> HardwareProfile:
    """A base profile whose link figures come from the named interconnect."""
    link = INTERCONNECTS[kw["link"]]
    kw.setdefault("link_bytes_per_s", link.bytes_per_s)
    kw.setdefault("link_alpha_s", link.alpha_s)
    kw.setdefault("nvswitch", kw.get("fabric", Fabric.NVSWITCH) is Fabric.NVSWITCH)
    kw["network"] = INTERCONNECTS[kw["network"]] if isinstance(kw.get("network"), str) else kw.get("network")
    return HardwareProfile(**kw)


# A100 SXM4 80GB (NVIDIA A100 datasheet): 108 SMs, 40 MB L2, 2.04 TB/s HBM2e, 312 TFLOP/s dense bf16,
# 19.5 TFLOP/s FP32 (CUDA cores), NVLink 3 600 GB/s bidirectional; DGX A100 has one 200 Gb/s HDR NIC per
# GPU and PCIe Gen4. Link efficiency 0.78: NCCL's tuning model caps Ampere bus bandwidth at 235 of 300 GB/s.
_A100 = dict(arch="sm_80", sms=108, l2_bytes=40 << 20, hbm_bytes_per_s=2.04e12,
             peak_flops={"bf16": 312e12, "fp16": 312e12, "fp32": 19.5e12}, scalar_flops=19.5e12,
             per_sm_copy_bytes_per_s=20e9, link_efficiency=0.78,
             multimem=False,  # NVLink SHARP arrives with Hopper + third-generation NVSwitch
             pcie_bytes_per_s=25e9, network="ib200")
register_profile(_profile(name="A100", link="nvlink3", **_A100))
# HGX A100 4-GPU board: no NVSwitch, every pair of GPUs joined by 4 of the 12 NVLinks.
register_profile(_profile(name="A100-mesh", link="nvlink3", fabric=Fabric.MESH, gpus_per_node=4, **_A100))
# A100 PCIe 80GB (datasheet): same chip, 1.94 TB/s HBM2e, peers over PCIe Gen4 only.
register_profile(_profile(name="A100-PCIe", link="pcie4", fabric=Fabric.PCIE,
                          **{**_A100, "hbm_bytes_per_s": 1.935e12}))

# H100 SXM5 (NVIDIA H100 datasheet and Hopper whitepaper): 132 SMs, 50 MB L2, 3.35 TB/s HBM3, 989 TFLOP/s
# dense bf16, 67 TFLOP/s FP32 (CUDA cores), NVLink 4 900 GB/s bidirectional; DGX H100 has one 400 Gb/s NDR
# NIC per GPU (ConnectX-7) and PCIe Gen5. One CTA (an NCCL channel) pushes <= 36.7 GB/s (NCCL tuning model).
_H100 = dict(arch="sm_90", sms=132, l2_bytes=50 << 20, hbm_bytes_per_s=3.35e12,
             peak_flops={"bf16": 989e12, "fp16": 989e12, "fp32": 67e12}, scalar_flops=67e12,
             per_sm_copy_bytes_per_s=36.7e9, multimem=True,
             pcie_bytes_per_s=50e9, network="ib400")
H100 = _profile(name="H100", link="nvlink4", **_H100)
register_profile(H100)
# HGX H100 4-GPU board: a direct NVLink mesh, 6 of the 18 links to each of the 3 peers.
register_profile(_profile(name="H100-mesh", link="nvlink4", fabric=Fabric.MESH, gpus_per_node=4, **_H100))
# H100 PCIe (datasheet): 114 SMs, 2.0 TB/s HBM2e, 756 TFLOP/s dense bf16, 51 TFLOP/s fp32, PCIe Gen5.
register_profile(_profile(name="H100-PCIe", link="pcie5", fabric=Fabric.PCIE, **{
    **_H100, "sms": 114, "hbm_bytes_per_s": 2.0e12, "peak_flops": {"bf16": 756e12, "fp16": 756e12, "fp32": 51e12},
    "scalar_flops": 51e12}))
# H100 NVL (datasheet): 132 SMs, 3.9 TB/s HBM3, 835 TFLOP/s dense bf16, 60 TFLOP/s fp32; NVLink bridges
# (600 GB/s bidirectional) join the cards in pairs, the rest of the node is PCIe Gen5.
register_profile(_profile(name="H100-NVL", link="nvlink4-bridge", fabric=Fabric.PAIRS, **{
    **_H100, "hbm_bytes_per_s": 3.9e12, "peak_flops": {"bf16": 835e12, "fp16": 835e12, "fp32": 60e12},
    "scalar_flops": 60e12}))
# H200 SXM (datasheet): the H100's compute and NVLink with 4.8 TB/s HBM3e.
register_profile(H100.model_copy(update={"name": "H200", "hbm_bytes_per_s": 4.8e12}))

# B200 (HGX B200 at 1000 W, NVIDIA HGX datasheet): sm_100, 148 SMs, ~2.25 PFLOP/s dense bf16/fp16,
# 80 TFLOP/s fp32, 8 TB/s HBM3e, NVLink 5 1.8 TB/s bidirectional through NVSwitch; L2 126 MB as
# cudaDeviceProp.l2CacheSize reports it; DGX B200 has one 400 Gb/s ConnectX-7 NIC per GPU.
register_profile(_profile(
    name="B200", link="nvlink5", arch="sm_100", sms=148, l2_bytes=126 << 20, hbm_bytes_per_s=8.0e12,
    peak_flops={"bf16": 2.25e15, "fp16": 2.25e15, "fp32": 80e12}, scalar_flops=80e12, multimem=True,
    per_sm_copy_bytes_per_s=40e9,  # estimate: higher clock and wider NVLink 5 ports than Hopper
    pcie_bytes_per_s=50e9, network="ib400"))


def ranks_per_node(world: int, hw: HardwareProfile) -> tuple[int, int]:
    """(nodes used, ranks on the busiest node) for ``world`` ranks spread evenly over the profile's nodes.

    A multi-node profile means the job spans its nodes, so ranks spread over all of them (world 8 on
    2x8 is 2 x 4), never packing one node and leaving the network idle."""
    if world > hw.nodes * hw.gpus_per_node:  # checked inline: the model calls this per design point
        raise SpecError(hw.world_problem(world), f"lower the world size or add nodes, e.g. {hw.name.split(':')[0]}:"
                                 f"{math.ceil(world / hw.gpus_per_node)}x{hw.gpus_per_node}:ib400")
    nodes = max(1, min(hw.nodes, world))
    return nodes, math.ceil(world / nodes)
