"""Validity rules of the design space, each with the reason it exists.

A rule is data: a name, the reason (shown to users and to LLM proposers), and a predicate
that returns True when a point breaks it. Intrinsic rules need only the point; hardware
rules also need a ``HardwareProfile`` (chip, fabric, nodes x GPUs, network) and are checked when
a point meets a target. Rules that only remove duplicate points say so in their reason: a point
that differs from a kept one only in a value the design cannot use would be built and timed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

from design_space.dimensions import COMM_CTAS, Backend, Issuer, Placement, SyncScope

if TYPE_CHECKING:
    from design_space.hardware import HardwareProfile
    from design_space.point import DesignPoint


@dataclass(frozen=True)
class Rule:
    name: str
    reason: str
    broken: Callable[["DesignPoint", Optional["HardwareProfile"]], bool]
    needs_hardware: bool = False


RULES: list[Rule] = []


def register_rule(rule: Rule) -> None:
    """Add a rule (built-ins and plugins go through here)."""
    if any(r.name == rule.name for r in RULES):
        raise ValueError(f"rule {rule.name!r} registered twice")
    RULES.append(rule)


def violations(point: "DesignPoint", hardware: Optional["HardwareProfile"] = None) -> tuple[Rule, ...]:
    """The rules ``point`` breaks; hardware rules only when ``hardware`` is given."""
    return tuple(
        r for r in RULES if (hardware is not None or not r.needs_hardware) and r.broken(point, hardware)
    )


register_rule(Rule(
    "copy_engine_pairs_with_copy_engine_issuer",
    "the DMA engines are the only issuer of copy-engine transfers and issue nothing else: "
    "backend copy_engine <=> issuer copy_engine",
    lambda p, hw: (p.backend is Backend.COPY_ENGINE) != (p.issuer is Issuer.COPY_ENGINE),
))
register_rule(Rule(
    "fused_persistent_needs_fine_signals",
    "a grid-wide barrier inside a persistent kernel makes every compute CTA wait for the whole "
    "transfer: use per_peer_signal or per_tile_signal",
    lambda p, hw: p.placement is Placement.FUSED_PERSISTENT and p.sync_scope is SyncScope.GLOBAL_BARRIER,
))
register_rule(Rule(
    "copy_engine_cannot_run_inside_a_kernel",
    "DMA copies are launched from the host, so they cannot be issued by CTAs of a persistent kernel",
    lambda p, hw: p.backend is Backend.COPY_ENGINE and p.placement is Placement.FUSED_PERSISTENT,
))
register_rule(Rule(
    "sequential_synchronises_once",
    "sequential placement computes only after the whole transfer, so finer signals add waits "
    "without overlap (that design is split_put_wait): use global_barrier",
    lambda p, hw: p.placement is Placement.SEQUENTIAL and p.sync_scope is not SyncScope.GLOBAL_BARRIER,
))
register_rule(Rule(
    "host_nccl_is_host_driven",
    "the host-driven baseline has no device-side signals and NCCL owns its CTAs: host_nccl takes "
    "placement sequential or stream_overlap, sync_scope global_barrier and issuer cta",
    lambda p, hw: p.backend is Backend.HOST_NCCL and (
        p.placement not in (Placement.SEQUENTIAL, Placement.STREAM_OVERLAP)
        or p.sync_scope is not SyncScope.GLOBAL_BARRIER
        or p.issuer is not Issuer.CTA
    ),
))
register_rule(Rule(
    "multimem_needs_hopper_and_nvswitch",
    "multimem (NVLink SHARP) addresses exist only on Hopper or newer GPUs connected by NVSwitch",
    lambda p, hw: p.backend is Backend.MULTIMEM and not (hw.multimem and hw.nvswitch),
    needs_hardware=True,
))
register_rule(Rule(
    "comm_ctas_leave_three_quarters_to_compute",
    "taking more than a quarter of the SMs for communication slows compute by more than 1.33x, "
    "more than overlap can win back: comm_ctas <= SMs / 4",
    lambda p, hw: p.comm_ctas > hw.sms // 4,
    needs_hardware=True,
))
register_rule(Rule(
    "host_side_comm_takes_one_comm_cta",
    "copy_engine and host_nccl points occupy none of the design's SMs (the DMA engines or NCCL's own "
    f"kernels move the bytes), so comm_ctas changes nothing and other values would duplicate points: "
    f"comm_ctas = {COMM_CTAS[0]}",
    lambda p, hw: p.backend in (Backend.COPY_ENGINE, Backend.HOST_NCCL) and p.comm_ctas != COMM_CTAS[0],
))
register_rule(Rule(
    "peer_memory_backends_stay_in_one_node",
    "lsa, multimem and copy_engine reach peers through peer memory (NVLink or PCIe P2P) or the "
    "NVSwitch, which end at the node: across nodes only gin and host_nccl work (use a one-node "
    "profile such as H100 or H100:1x8)",
    lambda p, hw: p.backend in (Backend.LSA, Backend.MULTIMEM, Backend.COPY_ENGINE) and hw.nodes > 1,
    needs_hardware=True,
))
register_rule(Rule(
    "gin_needs_a_network",
    "gin puts are carried by the NIC (GPU-initiated RDMA), so the profile must have one: name a "
    "network such as H100:1x8:ib400 instead of :none",
    lambda p, hw: p.backend is Backend.GIN and hw.network is None,
    needs_hardware=True,
))
