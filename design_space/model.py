"""The analytic model: compute roofline, communication times, the physical bound, the host-driven
baseline, a simulated time for a design point, and the speedup ceiling. docs/model.md derives
every term and cites every constant.

- t_comp: roofline at peak, max(flops / peak, bytes / HBM), for the busiest rank (``imbalance``).
- t_comm: the ideal collective over the best backend the hardware allows, at full line rate,
  with the least latency any legal design pays (``collectives.ideal_time``).
- bound = max(t_comp, t_comm): no design, overlapped or not, runs faster.
- baseline: cuBLAS (measured or default share of peak) then NCCL's fastest algorithm, launched
  from the host one after the other.
- simulate(point): the candidate's compute at the rate its code features earn
  (``code_features.compute_rate``; unknown features get the scalar default), the design's own
  communication (backend, issuer, chunking, comm SMs; same link efficiency and per-hop latency
  as NCCL), then its placement's overlap: chunk fill/drain max + min/c, comm SMs stretching
  compute by N/(N-s), launches and barriers. Every term is at least its ideal, so a simulated
  time never drops below the bound.
- ceiling: baseline / (max(baseline compute, the fastest practical communication) + one launch).
  No design beats it: its compute is never credited above cuBLAS, its communication never
  below ``collectives.practical_time``, and it launches at least once.
- two phases (``WorkloadCost.then``: one collective each, the second phase after the first, as a
  tensor-parallel MLP all-gathers, computes, then reduce-scatters): times, baselines and floors
  add up phase by phase; the bound is max(total t_comp, total t_comm) (a design overlapping across
  phases could reach it); the ceiling divides the summed baseline by the summed per-phase floors.

Every time this module produces is a model estimate: callers label it ``simulated``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

from design_space.calibration import Calibration
from design_space.code_features import CodeFeatures, ComputeRate, compute_rate, cublas_rate
from design_space.collectives import (
    COLLECTIVES, CommTime, comm_factor, device_time, ideal_time, nccl_time, practical_time,
)
from design_space.dimensions import Backend, Placement, SyncScope
from design_space.errors import SpecError
from design_space.hardware import HardwareProfile
from design_space.point import DesignPoint

__all__ = ["Estimate", "ShapeModel", "WorkloadCost", "baseline_time", "comm_factor", "estimate", "shape_model",
           "simulate", "t_comm_ideal", "t_comp"]

GEMM_TILE = 128  # rows/cols of the output tile a tuned GEMM uses; sets wave quantisation
NCCL_SMS = 16  # estimate: SMs NCCL's channels occupy while a chunked NCCL pipeline overlaps the GEMM


@dataclass(frozen=True)
class WorkloadCost:
    """What one rank computes and moves for one shape; produced by a pattern.

    ``comm_bytes`` is S of the collective formulas (docs/model.md) for the whole operation: the
    full tensor for allgather / reducescatter / allreduce, the bytes each rank sends for alltoall,
    the bytes one rank sends for p2p summed over all ``steps`` rounds.

    ``then``: a second phase with its own GEMM and collective that runs after this one (a
    tensor-parallel MLP: all-gather + up projection, then down projection + reduce-scatter). Every
    field of a cost describes its own phase only; ``phases`` lists them in order. The model adds
    the phases' times, baselines and floors (docs/model.md, "Two phases").
    """

    flops: float  # per rank (the mean rank when ``imbalance`` > 1)
    hbm_bytes: float  # per rank, compute-side traffic
    collective: str  # "allgather", "reducescatter", "allreduce", "alltoall", "p2p"
    comm_bytes: float  # S (full tensor for AG/RS/AR)
    out_rows: int  # rows of this rank's output (for wave quantisation)
    out_cols: int
    local_fraction: float  # share of compute that needs no remote data
    imbalance: float = 1.0  # busiest rank / mean (skewed MoE routing): the slowest rank sets the time
    steps: int = 1  # dependent communication rounds (ring attention: world - 1 rotations)
    pipeline_stages: int = 0  # host launch pairs of a stream_overlap pipeline (0: one per signal stage)
    then: Optional["WorkloadCost"] = None  # the phase that runs after this one (None: a single phase)
    # The device designs write into peers (or rewrite what peers read) only once those entered the
    # call (calls back to back; evaluator/runtime/cuco_enter.h): one signal hop per call.
    entry_handshake: bool = False

    @property
    def phases(self) -> tuple["WorkloadCost", ...]:
        """This phase and the ones after it, in order."""
        return (self,) + (self.then.phases if self.then is not None else ())

    def __post_init__(self) -> None:
        problems = []
        if self.then is not None and not isinstance(self.then, WorkloadCost):
            problems.append(f"then must be a WorkloadCost or None, not {type(self.then).__name__}")
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
    baseline: float  # host-driven: cuBLAS GEMM then NCCL, plus their launches
    simulated: float  # this design point
    baseline_comp: float  # the baseline's GEMM (cuBLAS rate)
    baseline_comm: float  # the baseline's NCCL call(s)
    comm_floor: float  # the fastest communication any design reaches in practice
    ceiling: float  # the largest speedup over the baseline any design of the model reaches
    compute: ComputeRate  # the rate this candidate's compute was credited with, and why

    @property
    def best_gain(self) -> float:
        """The most any overlap can win over the serial sum of the ideal times (<= 2)."""
        return (self.t_comp + self.t_comm) / self.bound if self.bound > 0 else 1.0

    @property
    def overlap_ceiling(self) -> float:
        """The baseline's own overlap limit, (T_comp + T_comm) / max(T_comp, T_comm), launches aside."""
        top = max(self.baseline_comp, self.baseline_comm)
        return (self.baseline_comp + self.baseline_comm) / top if top > 0 else 1.0

    @property
    def speedup(self) -> float:
        return self.baseline / self.simulated if self.simulated > 0 else 0.0

    @property
    def compute_efficiency(self) -> float:
        """Share of the dtype's peak the candidate's compute was credited with."""
        return self.compute.efficiency

    @property
    def features_known(self) -> bool:
        return self.compute.kind != "unknown"

    @property
    def basis(self) -> str:
        """One line: the compute rate used and where it came from (calibrated or default)."""
        return self.compute.basis


def t_comp(cost: WorkloadCost, hw: HardwareProfile, dtype: str) -> float:
    """Roofline time of the busiest rank's compute at peak (summed over the phases)."""
    return sum(_roofline(ph, hw, dtype) for ph in cost.phases)


def _roofline(phase: WorkloadCost, hw: HardwareProfile, dtype: str) -> float:
    peak = hw.peak_flops.get(dtype)
    if peak is None:
        raise SpecError(f"hardware profile {hw.name} has no peak FLOP/s for dtype {dtype!r}",
                        f"use one of {', '.join(sorted(hw.peak_flops))} or register a profile that lists it")
    return phase.imbalance * max(phase.flops / peak, phase.hbm_bytes / hw.hbm_bytes_per_s)


def _comm_bytes(cost: WorkloadCost) -> float:
    return cost.comm_bytes * cost.imbalance  # the busiest rank moves the most


def _at(rate: ComputeRate, cost: WorkloadCost) -> float:
    return cost.imbalance * rate.seconds(cost.flops, cost.hbm_bytes)


def t_comm_ideal(cost: WorkloadCost, n: int, hw: HardwareProfile) -> float:
    """Ideal communication time at full bandwidth with the least latency any legal design pays
    (summed over the phases)."""
    return sum(_ideal(ph, n, hw) for ph in cost.phases)


def _ideal(phase: WorkloadCost, n: int, hw: HardwareProfile) -> float:
    return ideal_time(phase.collective, _comm_bytes(phase), phase.steps, n, hw)


def baseline_time(cost: WorkloadCost, n: int, hw: HardwareProfile, dtype: str,
                  calibration: Optional[Calibration] = None) -> float:
    """cuBLAS GEMM then an NCCL collective, both launched from the host (phase after phase)."""
    return sum(_at(cublas_rate(hw, dtype, calibration, ph.flops), ph)
               + nccl_time(ph.collective, _comm_bytes(ph), ph.steps, n, hw) + 2 * hw.launch_s for ph in cost.phases)


def _wave_efficiency(rows: int, cols: int, sms: int) -> float:
    tiles = math.ceil(rows / GEMM_TILE) * math.ceil(cols / GEMM_TILE)
    waves = math.ceil(tiles / sms)
    return tiles / (waves * sms)


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


class _Phase:
    """One phase of one shape (one GEMM, one collective): the single-phase model."""

    def __init__(self, cost: WorkloadCost, n: int, hw: HardwareProfile, dtype: str,
                 features: Optional[CodeFeatures] = None, calibration: Optional[Calibration] = None):
        self.cost, self.n, self.hw, self.dtype, self.calibration = cost, n, hw, dtype, calibration
        self.comm_bytes = _comm_bytes(cost)
        self.rate = compute_rate(hw, dtype, features, calibration, cost.flops)
        self.tc = _at(self.rate, cost)  # the candidate's compute, alone on the GPU
        self.t_comp, self.t_comm = _roofline(cost, hw, dtype), _ideal(cost, n, hw)
        self.baseline_comp = _at(cublas_rate(hw, dtype, calibration, cost.flops), cost)
        self.baseline_comm = nccl_time(cost.collective, self.comm_bytes, cost.steps, n, hw)
        self.baseline = self.baseline_comp + self.baseline_comm + 2 * hw.launch_s
        self.comm_floor = practical_time(cost.collective, self.comm_bytes, cost.steps, n, hw)
        self._waves = _wave_efficiency(cost.out_rows, cost.out_cols, hw.sms)

    def _wave_penalty(self, stages: int) -> float:
        """Slow-down of one GEMM launch per stage: small launches lose whole waves (never a gain)."""
        cost = self.cost
        rows = max(1, round(cost.out_rows * (1 - cost.local_fraction) / stages))
        return 1.0 / min(1.0, _wave_efficiency(rows, cost.out_cols, self.hw.sms) / self._waves)

    def _split(self, busy: float) -> tuple[float, float]:
        local = busy * self.cost.local_fraction
        return local, busy - local

    def _host_overlap(self, point: DesignPoint, launches: float) -> float:
        """host_nccl stream_overlap: one NCCL call and one GEMM launch per chunk, on two streams."""
        cost, n, hw = self.cost, self.n, self.hw
        chunks = self._host_chunks(point)
        tm = nccl_time(cost.collective, self.comm_bytes, cost.steps, n, hw, calls=chunks)
        t_local, t_remote = self._split(_stretch(self.tc, NCCL_SMS, hw.sms, tm))
        return _pipeline(t_local, t_remote * self._wave_penalty(chunks), tm, chunks, launches, hw)

    def _host_chunks(self, point: DesignPoint) -> int:
        return max(1, math.ceil(comm_factor(self.cost.collective, self.n) * self.comm_bytes / point.chunk_bytes))

    def _comm(self, point: DesignPoint) -> CommTime:
        return device_time(self.cost.collective, self.comm_bytes, self.cost.steps, self.n, self.hw, point)

    def chunks(self, point: DesignPoint) -> int:
        """Chunks one call of ``point`` moves (NCCL calls of a host pipeline, device transfers)."""
        if point.backend is Backend.HOST_NCCL:
            return self._host_chunks(point) if point.placement is not Placement.SEQUENTIAL else 1
        return self._comm(point).chunks

    def launches(self, point: DesignPoint, comm: Optional[CommTime] = None) -> int:
        """Host launches (kernels, NCCL calls) one call of ``point`` is charged with."""
        if point.placement is Placement.SEQUENTIAL:
            return 2
        if point.backend is Backend.HOST_NCCL:
            return 2 * self._host_chunks(point) + 1
        if point.placement is Placement.FUSED_PERSISTENT:
            return 1
        if point.placement is Placement.STREAM_OVERLAP:
            return 2 * self._relaunches(point, (comm or self._comm(point)).chunks) + 1
        return 3

    def _relaunches(self, point: DesignPoint, chunks: int) -> int:
        """GEMM (and comm kernel) launches of a stream pipeline: one per signal stage. A
        global_barrier pipeline relaunches too (the templates put a barrier between chunks), though
        the model credits it one stage of overlap; waits hidden from the trace read as
        global_barrier, so it is charged the most of any scope (per chunk or per peer): hiding a
        pipeline's waits never saves launches or waves."""
        if point.sync_scope is SyncScope.GLOBAL_BARRIER:
            stages = max(chunks, self.n - 1)
        else:
            stages = _stages(point, chunks, self.n)
        return self.cost.pipeline_stages or stages

    def _device_overlap(self, point: DesignPoint, comm: CommTime, launches: float) -> float:
        cost, hw, tc = self.cost, self.hw, self.tc
        stages = _stages(point, comm.chunks, self.n)
        # a put + signal is already one hop in ``comm``; a barrier-synchronised scheme pays its barrier
        sync = cost.steps * hw.barrier_s if point.sync_scope is SyncScope.GLOBAL_BARRIER else 0.0
        sync += hw.link_alpha_s if cost.entry_handshake else 0.0  # the peers entered this call
        if point.placement is Placement.SEQUENTIAL:
            return launches * hw.launch_s + comm.seconds + sync + tc
        taken = 0 if point.backend is Backend.COPY_ENGINE else point.comm_ctas
        if point.placement is Placement.FUSED_PERSISTENT:
            busy = tc * hw.sms / (hw.sms - taken)  # comm CTAs hold their SMs for the whole kernel
        else:  # comm kernels hold SMs only while they work
            busy = _stretch(tc, taken, hw.sms, comm.sm_busy)
        t_local, t_remote = self._split(busy)
        if point.placement is Placement.STREAM_OVERLAP:
            t_remote *= self._wave_penalty(self._relaunches(point, comm.chunks))
        return _pipeline(t_local, t_remote, comm.seconds + sync, stages, launches, hw)

    def simulate(self, point: DesignPoint, launches: Optional[float] = None) -> float:
        """Simulated time of ``point`` (seconds): a model estimate, never a measurement.
        ``launches``: host launches per call the code makes (``design_space.launch_count``; None:
        the point's own, ``launches``). A sequential schedule pays each in full; an overlapped one
        has them as its floor of host launch throughput."""
        if point.backend is Backend.HOST_NCCL:
            launches = max(1.0, self.launches(point) if launches is None else launches)
            if point.placement is Placement.SEQUENTIAL:  # the baseline's schedule, our GEMM
                return self.tc + self.baseline_comm + launches * self.hw.launch_s
            return self._host_overlap(point, launches)
        comm = self._comm(point)
        return self._device_overlap(point, comm, max(1.0, self.launches(point, comm) if launches is None else launches))


class ShapeModel:
    """One shape of one workload on one machine, for one candidate's code: everything that does
    not depend on the design point is computed once, so ranking thousands of points is cheap.

    A cost of several phases (``WorkloadCost.then``) runs them one after the other: times,
    baselines and floors are the phases' sums, the bound max(total t_comp, total t_comm), the
    ceiling the summed baseline over the summed per-phase floors (each phase's simulated time is
    at least its own floor, so no point's sum beats theirs). One phase gives the single-phase
    figures exactly."""

    def __init__(self, cost: WorkloadCost, n: int, hw: HardwareProfile, dtype: str,
                 features: Optional[CodeFeatures] = None, calibration: Optional[Calibration] = None):
        self.cost, self.n, self.hw, self.dtype, self.calibration = cost, n, hw, dtype, calibration
        self.phases = tuple(_Phase(ph, n, hw, dtype, features, calibration) for ph in cost.phases)
        total = lambda name: sum(getattr(ph, name) for ph in self.phases)  # noqa: E731
        self.comm_bytes, self.tc = total("comm_bytes"), total("tc")
        self.t_comp, self.t_comm = total("t_comp"), total("t_comm")
        self.baseline_comp, self.baseline_comm = total("baseline_comp"), total("baseline_comm")
        self.baseline, self.comm_floor = total("baseline"), total("comm_floor")
        self.ceiling = self.baseline / sum(max(ph.baseline_comp, ph.comm_floor) + hw.launch_s for ph in self.phases)
        # the rate reported: the phase with the most FLOPs (phases differ only in calibration entries)
        self.rate = max(self.phases, key=lambda ph: ph.cost.flops).rate

    def chunks(self, point: DesignPoint) -> int:
        return sum(ph.chunks(point) for ph in self.phases)

    def launches(self, point: DesignPoint) -> int:
        return sum(ph.launches(point) for ph in self.phases)

    def simulate(self, point: DesignPoint, launches: Optional[float] = None) -> float:
        """Simulated time of ``point`` (seconds): a model estimate, never a measurement. The code's
        ``launches`` per call (None: the point's own) go to the phases by their share of the
        point's."""
        if launches is None or len(self.phases) == 1:
            return sum(ph.simulate(point, launches) for ph in self.phases)
        own = [ph.launches(point) for ph in self.phases]
        return sum(ph.simulate(point, launches * k / sum(own)) for ph, k in zip(self.phases, own))

    def estimate(self, point: DesignPoint, launches: Optional[float] = None) -> Estimate:
        return Estimate(t_comp=self.t_comp, t_comm=self.t_comm, bound=max(self.t_comp, self.t_comm),
                        baseline=self.baseline, simulated=self.simulate(point, launches),
                        baseline_comp=self.baseline_comp,
                        baseline_comm=self.baseline_comm, comm_floor=self.comm_floor, ceiling=self.ceiling,
                        compute=self.rate)


_SHAPES: "OrderedDict[tuple, ShapeModel]" = OrderedDict()
_SHAPES_KEPT = 64


def shape_model(cost: WorkloadCost, n: int, hw: HardwareProfile, dtype: str,
                features: Optional[CodeFeatures] = None, calibration: Optional[Calibration] = None) -> ShapeModel:
    """``ShapeModel(...)``, reused while the same arguments come back (callers that score every
    point through ``estimate`` one at a time stay cheap). Profiles and calibrations hold dicts,
    so they are keyed by identity and checked on a hit."""
    key = (cost, n, id(hw), dtype, features, id(calibration))
    hit = _SHAPES.get(key)
    if hit is not None and hit.hw is hw and hit.calibration is calibration:
        _SHAPES.move_to_end(key)
        return hit
    model = _SHAPES[key] = ShapeModel(cost, n, hw, dtype, features, calibration)
    while len(_SHAPES) > _SHAPES_KEPT:
        _SHAPES.popitem(last=False)
    return model


def simulate(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile, dtype: str,
             features: Optional[CodeFeatures] = None, calibration: Optional[Calibration] = None) -> float:
    """Simulated time of ``point`` (seconds): a model estimate, never a measurement."""
    return shape_model(cost, n, hw, dtype, features, calibration).simulate(point)


def estimate(cost: WorkloadCost, point: DesignPoint, n: int, hw: HardwareProfile, dtype: str,
             features: Optional[CodeFeatures] = None, calibration: Optional[Calibration] = None,
             launches: Optional[float] = None) -> Estimate:
    """Bound, baseline, simulated time and ceiling of ``point`` for a candidate whose code has
    ``features`` (None: unknown, scored at the scalar default and said so in ``Estimate.basis``)
    and makes ``launches`` host launches per call (None: the point's own; ``launch_count``)."""
    return shape_model(cost, n, hw, dtype, features, calibration).estimate(point, launches)
