"""What a candidate's code makes of the GPU's peak.

``CodeFeatures`` is what the evaluator reads off a built candidate: tensor-core MMA in its SASS,
the share of the workload's GEMM FLOPs that ran through the tensor-core tile (the emulator's
counts), the widest global access, spills, registers and occupancy (ptxas + launch).
``compute_rate`` turns them into the FLOP/s and HBM bytes/s the model credits the code with:

    1 / rate = share / (peak_tc * tile_eff) + (1 - share) / (cuda_core_peak * scalar_eff * occ_factor)

capped at the cuBLAS rate the baseline gets (the baseline's GEMM is at least as good as the
candidate's), with the HBM roofline at ``HBM_EFFICIENCY`` times a Little's-law factor for
occupancy x access width, and a spill slowdown. Efficiencies come from a ``Calibration`` when
one covers the GPU, else from the stated defaults below. Unknown features get the scalar
default, never the tensor-core rate. docs/model.md gives every constant's source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from design_space.calibration import Calibration
from design_space.errors import SpecError
from design_space.hardware import HardwareProfile

_FROZEN = ConfigDict(frozen=True, extra="forbid")

HBM_EFFICIENCY = 0.90  # device copy ~4.3 of 4.8 TB/s, the project's H200 machine (2026)
CUBLAS_EFFICIENCY = 0.80  # torch.matmul bf16 ~790 of 989 TFLOP/s, the project's H200 machine (2026)
TILE_EFFICIENCY = 0.70 * CUBLAS_EFFICIENCY  # the tile primitive's target: >= 70% of cuBLAS (unmeasured)
SCALAR_EFFICIENCY = 0.15  # estimate: shared-memory-fed FP32 FMA loop (5 shared loads per 4 FMAs)
OCCUPANCY_KNEE = 0.25  # 16 of 64 warps: 4 per scheduler cover the ~4-cycle dependent FMA latency
SPILL_SLOWDOWN = 0.5  # estimate: the most spills slow a kernel, reached at SPILL_BYTES_FULL
SPILL_BYTES_FULL = 256  # bytes spilled per thread
MAX_WARPS_PER_SM = 64  # sm_80 / sm_90 / sm_100
REGISTERS_PER_SM = 65536  # 32-bit registers per SM, sm_80 / sm_90 / sm_100
LOADS_IN_FLIGHT = 4  # estimate: independent global loads an unrolled loop keeps in flight per thread
DRAM_LATENCY_S = 600e-9  # estimate: loaded HBM latency


class CodeFeatures(BaseModel):
    """What the evaluator learned about a candidate's code; ``source`` says from where."""

    model_config = _FROZEN

    tensor_core: bool  # the SASS has tensor-core MMA instructions (HMMA / HGMMA)
    tensor_core_flop_share: float = Field(default=0.0, ge=0.0, le=1.0)  # of the GEMM FLOPs, emulator's counts
    vector_width_bytes: int = 4  # widest global load/store seen
    spill_bytes: int = Field(default=0, ge=0)  # per thread, ptxas (stores + loads), worst kernel
    registers: int = Field(default=0, ge=0, le=255)  # per thread, worst kernel; 0 = unknown
    occupancy: Optional[float] = Field(default=None, gt=0.0, le=1.0)  # resident warps / MAX_WARPS_PER_SM
    # share of the outputs that changed when the tile's results got noise (None: not probed)
    tile_output_dependence: Optional[float] = Field(default=None, ge=0.0, le=1.0)
    source: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "CodeFeatures":
        if self.vector_width_bytes not in (1, 2, 4, 8, 16):
            raise ValueError(f"vector_width_bytes {self.vector_width_bytes} is not 1, 2, 4, 8 or 16")
        if self.tensor_core_flop_share > 0 and not self.tensor_core:
            raise ValueError("tensor_core_flop_share > 0 needs tensor_core=True (MMA instructions in the SASS)")
        return self

    def resident_warps(self) -> Optional[float]:
        """Occupancy as given, else the register-file limit (an upper bound: smem and block size
        may limit it further), else None."""
        if self.occupancy is not None:
            return self.occupancy
        if self.registers:
            return min(MAX_WARPS_PER_SM, REGISTERS_PER_SM // (self.registers * 32)) / MAX_WARPS_PER_SM
        return None

    @property
    def kind(self) -> str:
        share = self.tensor_core_flop_share
        return "tensor-core" if share >= 1.0 else "scalar" if share <= 0.0 else "mixed"


# The two kinds of candidate the fairness checks score every point with.
TENSOR_CORE_TYPICAL = CodeFeatures(tensor_core=True, tensor_core_flop_share=1.0, vector_width_bytes=16,
                                   source="assumed: a tensor-core tile candidate, no spills")
SCALAR_TYPICAL = CodeFeatures(tensor_core=False, vector_width_bytes=4, source="assumed: a scalar FMA candidate")


@dataclass(frozen=True)
class ComputeRate:
    """What the model credits a kernel with: FLOP/s and HBM bytes/s, and why."""

    flops_per_s: float
    hbm_bytes_per_s: float
    efficiency: float  # flops_per_s / the dtype's peak
    kind: str  # "tensor-core", "scalar", "mixed", "unknown" or "cublas"
    calibrated: bool
    basis: str  # one line for reports

    def seconds(self, flops: float, hbm_bytes: float) -> float:
        return max(flops / self.flops_per_s, hbm_bytes / self.hbm_bytes_per_s)


@dataclass(frozen=True)
class _Efficiencies:
    tile: float
    cublas: float
    scalar: float
    calibrated: bool
    note: str


def _efficiencies(hw: HardwareProfile, dtype: str, flops: float, calibration: Optional[Calibration]) -> _Efficiencies:
    found = calibration.efficiencies(hw, dtype, flops) if calibration is not None else None
    if found is None:
        return _Efficiencies(TILE_EFFICIENCY, CUBLAS_EFFICIENCY, SCALAR_EFFICIENCY, False,
                             "uncalibrated (default efficiencies)")
    cublas = found.cublas
    return _Efficiencies(found.tile if found.tile is not None else TILE_EFFICIENCY, cublas,
                         found.scalar if found.scalar is not None else SCALAR_EFFICIENCY, True, found.note)


def _peak(hw: HardwareProfile, dtype: str) -> float:
    peak = hw.peak_flops.get(dtype)
    if peak is None:
        raise SpecError(f"hardware profile {hw.name} has no peak FLOP/s for dtype {dtype!r}",
                        f"use one of {', '.join(sorted(hw.peak_flops))} or register a profile that lists it")
    return peak


def cublas_rate(hw: HardwareProfile, dtype: str, calibration: Optional[Calibration] = None,
                flops: float = 0.0) -> ComputeRate:
    """The baseline's GEMM: cuBLAS (torch.matmul) at its measured or default share of peak."""
    peak, eff = _peak(hw, dtype), _efficiencies(hw, dtype, flops, calibration)
    return ComputeRate(peak * eff.cublas, hw.hbm_bytes_per_s * HBM_EFFICIENCY, eff.cublas, "cublas", eff.calibrated,
                       f"cuBLAS at {eff.cublas:.0%} of {peak / 1e12:.0f} TFLOP/s; {eff.note}")


def _memory_factor(features: CodeFeatures, hw: HardwareProfile) -> float:
    """Little's law: the bytes in flight per SM the resident warps keep vs what HBM needs."""
    warps = features.resident_warps()
    if warps is None:
        return 1.0
    in_flight = warps * MAX_WARPS_PER_SM * 32 * features.vector_width_bytes * LOADS_IN_FLIGHT
    needed = hw.hbm_bytes_per_s * HBM_EFFICIENCY * DRAM_LATENCY_S / hw.sms
    return min(1.0, in_flight / needed)


def compute_rate(hw: HardwareProfile, dtype: str, features: Optional[CodeFeatures] = None,
                 calibration: Optional[Calibration] = None, flops: float = 0.0) -> ComputeRate:
    """The rate a candidate's compute runs at, from its code features (``flops`` picks the nearest
    calibrated shape). Never above the baseline's cuBLAS rate."""
    peak, eff = _peak(hw, dtype), _efficiencies(hw, dtype, flops, calibration)
    cublas = peak * eff.cublas
    cuda = hw.cuda_core_flops()
    if features is None:
        rate = min(cublas, cuda * eff.scalar)
        return ComputeRate(rate, hw.hbm_bytes_per_s * HBM_EFFICIENCY, rate / peak, "unknown", eff.calibrated,
                           f"code features unknown: scalar default, {eff.scalar:.0%} of {cuda / 1e12:.1f} "
                           f"TFLOP/s CUDA-core FMA; {eff.note}")
    warps = features.resident_warps()
    scalar = cuda * eff.scalar * (1.0 if warps is None else min(1.0, warps / OCCUPANCY_KNEE))
    tile = peak * min(eff.tile, eff.cublas)
    share = features.tensor_core_flop_share
    rate = min(cublas, 1.0 / (share / tile + (1.0 - share) / scalar))
    slow = 1.0 + SPILL_SLOWDOWN * min(1.0, features.spill_bytes / SPILL_BYTES_FULL)
    hbm = hw.hbm_bytes_per_s * HBM_EFFICIENCY * _memory_factor(features, hw)
    rate, hbm = rate / slow, hbm / slow
    parts = [f"{share:.0%} of FLOPs on tensor cores at {min(eff.tile, eff.cublas):.0%} of peak"] if share else []
    if share < 1.0:
        parts.append(f"scalar FMA at {scalar / cuda:.0%} of {cuda / 1e12:.1f} TFLOP/s")
    if slow > 1.0:
        parts.append(f"spills x{slow:.2f}")
    return ComputeRate(rate, hbm, rate / peak, features.kind, eff.calibrated,
                       f"{features.kind}: {', '.join(parts)} -> {rate / peak:.1%} of peak; {eff.note}")


def occupancy_from(registers: int, threads_per_block: int, blocks_per_sm_limit: int = 32,
                   smem_per_block: int = 0, smem_per_sm: int = 228 * 1024) -> float:
    """Resident warps / MAX_WARPS_PER_SM for a launch (register, shared-memory and block limits);
    for callers that know the launch configuration (ptxas + launch)."""
    warps_per_block = max(1, math.ceil(threads_per_block / 32))
    by_regs = REGISTERS_PER_SM // max(1, registers * 32 * warps_per_block) if registers else blocks_per_sm_limit
    by_smem = smem_per_sm // smem_per_block if smem_per_block else blocks_per_sm_limit
    by_warps = MAX_WARPS_PER_SM // warps_per_block
    blocks = max(1, min(by_regs, by_smem, by_warps, blocks_per_sm_limit))  # 0 would not launch at all
    return min(1.0, blocks * warps_per_block / MAX_WARPS_PER_SM)
