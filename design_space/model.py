"""The analytic model: compute roofline, communication times, the physical bound, the host-driven
baseline, and a simulated time for a design point.

- T_comp: roofline, max(flops / peak, bytes / HBM), for the busiest rank (``imbalance``).
- T_comm: the ideal collective over the best backend the hardware allows, with its latency
  (``collectives.ideal_time``; formulas of REFERENCE section 3, topology-aware).
- bound = max(T_comp, T_comm): no design, overlapped or not, runs faster (REFERENCE s.3).
- baseline: a cuBLAS-class GEMM (~80% of peak, REFERENCE s.3) then an NCCL collective (~70% of
  the link), launched from the host, one after the other.
- simulate(point): the design's own communication time (backend, issuer, chunking, comm SMs),
  then its placement's overlap: chunk fill/drain max + min/c, comm SMs stretching compute by
  N/(N-s), launches and synchronisation. Every term is at least its ideal, so a simulated time
  never drops below the bound.

Every time this module produces is a model estimate: callers label it ``simulated``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from design_space.collectives import COLLECTIVES, CommTime, comm_factor, device_time, ideal_time, nccl_time
from design_space.dimensions import Backend, Placement, SyncScope
from design_space.errors import SpecError
from design_space.hardware import HardwareProfile
from design_space.point import DesignPoint

__all__ = ["Estimate", "WorkloadCost", "baseline_time", "comm_factor", "estimate", "simulate", "t_comm_ideal",
           "t_comp"]

GEMM_EFFICIENCY = 0.80  # cuBLAS bf16 on H200 measured ~790 of 989 TFLOP/s (REFERENCE s.3)
GEMM_TILE = 128  # rows/cols of the output tile a tuned GEMM uses; sets wave quantisation
NCCL_SMS = 16  # estimate: SMs NCCL's channels occupy while a chunked NCCL pipeline overlaps the GEMM


@dataclass(frozen=True)
class WorkloadCost:
    """What one rank computes and moves for one shape; produced by a pattern.

    ``comm_bytes`` is S of the REFERENCE formulas for the whole operation: the full tensor for
    allgather / reducescatter / allreduce, the bytes each rank sends for alltoall, the bytes one
    rank sends for p2p summed over all ``steps`` rounds.
    """

    flops: float  # per rank (the mean rank when ``imbalance`` > 1)
    hbm_bytes: float  # per rank, compute-side traffic
    collective: str  # "allgather", "reducescatter", "allreduce", "alltoall", "p2p"
    comm_bytes: float  # S of the REFERENCE formulas (full tensor for AG/RS/AR)
    out_rows: int  # rows of this rank's output (for wave quantisation)
    out_cols: int
    local_fraction: float  # share of compute that needs no remote data
    imbalance: float = 1.0  # busiest rank / mean (skewed MoE routing): the slowest rank sets the time
    steps: int = 1  # dependent communication rounds (ring attention: world - 1 rotations)
    pipeline_stages: int = 0  # host launch pairs of a stream_overlap pipeline (0: one per signal stage)

    def __post_init__(self) -> None:
        problems = []
        if self.collective not in COLLECTIVES:
            problems.append(f"collective {self.collective!r} is not one of {', '.join(COLLECTIVES)}")
        if min(self.flops, self.hbm_bytes, self.comm_bytes) < 0:
            problems.append("flops, hbm_bytes and comm_bytes must be >= 0")
        if not 0.0 <= self.local_fraction <= 1.0:
            problems.append(f"local_fraction {self.local_fraction} is outside [0, 1]")
        if self.imbalance < 1.0:
            problems.append(f"imbalance {self.imbalance} < 1 (it is busiest rank / mean)")
        if self.steps < 1:
            problems.append(f"steps {self.steps} < 1")
        if problems:
            raise SpecError("invalid WorkloadCost: " + "; ".join(problems),
                            "fix the pattern's cost() so it returns values the model defines")


@dataclass(frozen=True)
class Estimate:
    t_comp: float  # roofline at peak (busiest rank)
    t_comm: float  # ideal communication over the best backend the hardware allows
    bound: float  # max(t_comp, t_comm)
    baseline: float  # host-driven: tuned GEMM then NCCL collective
    simulated: float  # this design point

    @property
    def best_gain(self) -> float:
        """The most any overlap can win over the serial sum (<= 2)."""
        return (self.t_comp + self.t_comm) / self.bound if self.bound > 0 else 1.0


def t_comp(cost: WorkloadCost, hw: HardwareProfile, dtype: str) -> float:
    """Roofline time of the busiest rank's compute at peak."""
    peak = hw.peak_flops.get(dtype)
    if peak is None:
        raise SpecError(f"hardware profile {hw.name} has no peak FLOP/s for dtype {dtype!r}",
                        f"use one of {', '.join(sorted(hw.peak_flops))} or register a profile that lists it")
    return cost.imbalance * max(cost.flops / peak, cost.hbm_bytes / hw.hbm_bytes_per_s)


def _comm_bytes(cost: WorkloadCost) -> float:
    return cost.comm_bytes * cost.imbalance  # the busiest rank moves the most


def t_comm_ideal(cost: WorkloadCost, n: int, hw: HardwareProfile) -> float:
    """Ideal communication time at full bandwidth with the least latency any legal design pays."""
    return ideal_time(cost.collective, _comm_bytes(cost), cost.steps, n, hw)


def baseline_time(cost: WorkloadCost, n: int, hw: HardwareProfile, dtype: str) -> float:
    """cuBLAS-class GEMM then an NCCL collective, both launched from the host."""
    gemm = t_comp(cost, hw, dtype) / GEMM_EFFICIENCY
    nccl = nccl_time(cost.collective, _comm_bytes(cost), cost.steps, n, hw)
    return gemm + nccl + 2 * hw.launch_s


def _wave_efficiency(rows: int, cols: int, sms: int) -> float:
    tiles = math.ceil(rows / GEMM_TILE) * math.ceil(cols / GEMM_TILE)
    waves = math.ceil(tiles / sms)
    return tiles / (waves * sms)


def _wave_penalty(cost: WorkloadCost, stages: int, sms: int) -> float:
    """Slow-down of one GEMM launch per stage: small launches lose whole waves (never a gain)."""
    rows = max(1, round(cost.out_rows * (1 - cost.local_fraction) / stages))
    ratio = _wave_efficiency(rows, cost.out_cols, sms) / _wave_efficiency(cost.out_rows, cost.out_cols, sms)
    return 1.0 / min(1.0, ratio)


def _stages(point: DesignPoint, chunks: int, n: int) -> int:
    if point.sync_scope is SyncScope.GLOBAL_BARRIER:
        return 1
    if point.sync_scope is SyncScope.PER_PEER_SIGNAL:
        return max(1, n - 1)
    return max(1, chunks)


def _stretch(tc: float, taken: int, sms: int, busy: float) -> float:
    """Compute time when ``taken`` SMs serve communication for ``busy`` seconds of it (N/(N-s))."""
    return tc * (1 + taken / (sms - taken) * min(1.0, busy / tc if tc else 1.0))


def _pipeline(t_local: float, t_remote: float, t_comm: float, stages: int, launches: int,
              hw: HardwareProfile) -> float:
    """Chunked overlap: compute on chunk i waits for its transfer. Local work covers the first
    chunk's transfer (fill); the last chunk's compute follows the last transfer (drain)."""
    first = t_comm / stages
    done = max(max(t_local, first) + t_remote, t_comm + t_remote / stages)
    return max(done, launches * hw.launch_s) + hw.launch_s


def _split(cost: WorkloadCost, busy: float) -> tuple[float, float]:
    local = busy * cost.local_fraction
    return local, busy - local


def _host_overlap(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile, tc: float) -> float:
    """host_nccl stream_overlap: one NCCL call and one GEMM launch per chunk, on two streams."""
    moved = comm_factor(cost.collective, n) * _comm_bytes(cost)
    chunks = max(1, math.ceil(moved / point.chunk_bytes))
    tm = nccl_time(cost.collective, _comm_bytes(cost), cost.steps, n, hw, calls=chunks)
    t_local, t_remote = _split(cost, _stretch(tc, NCCL_SMS, hw.sms, tm))
    t_remote *= _wave_penalty(cost, chunks, hw.sms)
    return _pipeline(t_local, t_remote, tm, chunks, 2 * chunks + 1, hw)


def _device_overlap(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile, tc: float,
                    comm: CommTime) -> float:
    stages = _stages(point, comm.chunks, n)
    sync = cost.steps * (hw.barrier_s if point.sync_scope is SyncScope.GLOBAL_BARRIER else hw.link_alpha_s)
    if point.placement is Placement.SEQUENTIAL:
        return 2 * hw.launch_s + comm.seconds + sync + tc
    taken = 0 if point.backend is Backend.COPY_ENGINE else point.comm_ctas
    if point.placement is Placement.FUSED_PERSISTENT:
        busy, launches = tc * hw.sms / (hw.sms - taken), 1  # comm CTAs hold their SMs for the whole kernel
    else:  # comm kernels hold SMs only while they work
        busy = _stretch(tc, taken, hw.sms, comm.sm_busy)
        launches = 2 * (cost.pipeline_stages or stages) + 1 if point.placement is Placement.STREAM_OVERLAP else 3
    t_local, t_remote = _split(cost, busy)
    if point.placement is Placement.STREAM_OVERLAP:
        t_remote *= _wave_penalty(cost, cost.pipeline_stages or stages, hw.sms)
    return _pipeline(t_local, t_remote, comm.seconds + sync, stages, launches, hw)


def simulate(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile, dtype: str) -> float:
    """Simulated time of ``point`` (seconds): a model estimate, never a measurement."""
    tc = t_comp(cost, hw, dtype) / GEMM_EFFICIENCY
    if point.backend is Backend.HOST_NCCL:
        if point.placement is Placement.SEQUENTIAL:
            return baseline_time(cost, n, hw, dtype)
        return _host_overlap(cost, point, n, hw, tc)
    comm = device_time(cost.collective, _comm_bytes(cost), cost.steps, n, hw, point)
    return _device_overlap(cost, point, n, hw, tc, comm)


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
