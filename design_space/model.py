"""The analytic model: compute roofline, collective times, the physical bound, the host-driven
baseline, and a simulated time for a design point.

Formulas are REFERENCE section 3: AllGather / ReduceScatter (n-1)/n * S/B, AllReduce
2(n-1)/n * S/B, overlap bound max(T_comp, T_comm), chunked pipelines max + min/c, comm SMs
stretching compute by N/(N-s). Efficiencies for practice (cuBLAS ~80% of peak, NCCL ~70% of
the link) are the measured figures quoted there. Every time this module produces is a model
estimate: callers label it ``simulated``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.hardware import HardwareProfile
from design_space.point import DesignPoint

GEMM_EFFICIENCY = 0.80  # cuBLAS bf16 on H200 measured ~790 of 989 TFLOP/s (REFERENCE s.3)
NCCL_LINK_EFFICIENCY = 0.70  # NCCL collectives reach ~65-75% of the ideal (REFERENCE s.3)
DEVICE_LINK_EFFICIENCY = 0.85  # well-formed SM-driven peer stores
SIGNAL_COST_S = 0.4e-6  # fence + remote signal store, per chunk and issuer
ISSUER_BW_FACTOR = {Issuer.CTA: 1.0, Issuer.WARP: 1.0, Issuer.THREAD: 0.35, Issuer.COPY_ENGINE: 1.0}
ISSUERS_PER_CTA = {Issuer.CTA: 1, Issuer.WARP: 8, Issuer.THREAD: 256, Issuer.COPY_ENGINE: 1}
GEMM_TILE = 128  # rows/cols of the output tile a tuned GEMM uses; sets wave quantisation


@dataclass(frozen=True)
class WorkloadCost:
    """What one rank computes and moves for one shape; produced by a pattern."""

    flops: float  # per rank
    hbm_bytes: float  # per rank, compute-side traffic
    collective: str  # "allgather", "reducescatter", "allreduce", "alltoall", "p2p"
    comm_bytes: float  # S of the REFERENCE formulas (full tensor for AG/RS/AR)
    out_rows: int  # rows of this rank's output (for wave quantisation)
    out_cols: int
    local_fraction: float  # share of compute that needs no remote data


@dataclass(frozen=True)
class Estimate:
    t_comp: float  # roofline at peak
    t_comm: float  # ideal collective at full link bandwidth
    bound: float  # max(t_comp, t_comm)
    baseline: float  # host-driven: tuned GEMM then NCCL collective
    simulated: float  # this design point

    @property
    def best_gain(self) -> float:
        """The most any overlap can win over the serial sum (<= 2)."""
        return (self.t_comp + self.t_comm) / self.bound


def comm_factor(collective: str, n: int) -> float:
    """Bytes over the busiest link as a fraction of S."""
    if n <= 1:
        return 0.0
    return {
        "allgather": (n - 1) / n,
        "reducescatter": (n - 1) / n,
        "allreduce": 2 * (n - 1) / n,
        "alltoall": (n - 1) / n,
        "p2p": 1.0,
    }[collective]


def t_comp(cost: WorkloadCost, hw: HardwareProfile, dtype: str) -> float:
    return max(cost.flops / hw.peak_flops[dtype], cost.hbm_bytes / hw.hbm_bytes_per_s)


def t_comm_ideal(cost: WorkloadCost, n: int, hw: HardwareProfile) -> float:
    return comm_factor(cost.collective, n) * cost.comm_bytes / hw.link_bytes_per_s


def baseline_time(cost: WorkloadCost, n: int, hw: HardwareProfile, dtype: str) -> float:
    """cuBLAS-class GEMM then an NCCL ring collective, both launched from the host."""
    gemm = t_comp(cost, hw, dtype) / GEMM_EFFICIENCY
    nccl = t_comm_ideal(cost, n, hw) / NCCL_LINK_EFFICIENCY + (n - 1) * hw.link_alpha_s
    return gemm + nccl + 2 * hw.launch_s


def _wave_efficiency(rows: int, cols: int, sms: int) -> float:
    tiles = math.ceil(rows / GEMM_TILE) * math.ceil(cols / GEMM_TILE)
    waves = math.ceil(tiles / sms)
    return tiles / (waves * sms)


def _device_comm(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile) -> tuple[float, int]:
    """(transfer time, number of chunks) for device-initiated communication."""
    moved = comm_factor(cost.collective, n) * cost.comm_bytes
    if point.backend is Backend.COPY_ENGINE:
        bw = hw.copy_engine_bytes_per_s or hw.link_bytes_per_s * DEVICE_LINK_EFFICIENCY
    else:
        sm_bw = point.comm_ctas * hw.per_sm_copy_bytes_per_s * ISSUER_BW_FACTOR[point.issuer]
        bw = min(hw.link_bytes_per_s * DEVICE_LINK_EFFICIENCY, sm_bw)
    chunks = max(1, math.ceil(moved / point.chunk_bytes))
    issuers = point.comm_ctas * ISSUERS_PER_CTA[point.issuer]
    signalling = math.ceil(chunks / issuers) * SIGNAL_COST_S
    return moved / bw + signalling + hw.link_alpha_s, chunks


def _stages(point: DesignPoint, chunks: int, n: int) -> int:
    if point.sync_scope is SyncScope.GLOBAL_BARRIER:
        return 1
    if point.sync_scope is SyncScope.PER_PEER_SIGNAL:
        return max(1, n - 1)
    return max(1, chunks)


def simulate(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile, dtype: str) -> float:
    """Simulated time of ``point`` (seconds): a model estimate, never a measurement."""
    if point.backend is Backend.HOST_NCCL:
        return baseline_time(cost, n, hw, dtype)
    tc = t_comp(cost, hw, dtype) / GEMM_EFFICIENCY
    tm, chunks = _device_comm(cost, point, n, hw)
    sms = hw.sms
    taken = 0 if point.backend is Backend.COPY_ENGINE else point.comm_ctas
    stages = _stages(point, chunks, n)
    if point.placement is Placement.SEQUENTIAL:
        return 2 * hw.launch_s + tm + hw.barrier_s + tc
    if point.placement is Placement.FUSED_PERSISTENT:
        tc_busy = tc * sms / (sms - taken)  # comm CTAs hold their SMs for the whole kernel
        launches = 1
    else:
        # comm kernels hold SMs only while they transfer
        tc_busy = tc * (1 + taken / (sms - taken) * min(1.0, tm / tc if tc else 1.0))
        launches = 2 * stages + 1 if point.placement is Placement.STREAM_OVERLAP else 3
    t_local = tc_busy * cost.local_fraction
    t_remote = tc_busy - t_local
    if point.placement is Placement.STREAM_OVERLAP:
        # one GEMM launch per stage: small launches lose whole waves
        rows = max(1, round(cost.out_rows * (1 - cost.local_fraction) / stages))
        t_remote /= _wave_efficiency(rows, cost.out_cols, sms) / _wave_efficiency(cost.out_rows, cost.out_cols, sms)
    sync = hw.barrier_s if point.sync_scope is SyncScope.GLOBAL_BARRIER else hw.link_alpha_s
    pipelined = max(t_local + t_remote, tm + sync + t_remote / stages)
    return max(pipelined, launches * hw.launch_s) + hw.launch_s


def estimate(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile, dtype: str) -> Estimate:
    tcomp = t_comp(cost, hw, dtype)
    tcomm = t_comm_ideal(cost, n, hw)
    return Estimate(
        t_comp=tcomp,
        t_comm=tcomm,
        bound=max(tcomp, tcomm),
        baseline=baseline_time(cost, n, hw, dtype),
        simulated=simulate(cost, point, n, hw, dtype),
    )
