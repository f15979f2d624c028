"""Measured compute efficiencies of one GPU machine: the tile primitive's TFLOP/s and cuBLAS's
(torch.matmul), per (gpu, dtype, GEMM shape), written by the GPU check script and read by the
model (``code_features.compute_rate``). Without a calibration the model uses its stated
defaults and says "uncalibrated (default efficiencies)". Schema: docs/model.md.

Where: the path given, else ``$CUCO_CALIBRATION``, else ``$XDG_CACHE_HOME/cuco/calibration.json``
(``~/.cache/cuco/calibration.json``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from design_space.errors import ConfigError, SpecError
from design_space.hardware import HardwareProfile, get_profile

_FROZEN = ConfigDict(frozen=True, extra="forbid")
ENV = "CUCO_CALIBRATION"


class CalibrationEntry(BaseModel):
    """One GEMM measured on one GPU: C[m, n] = A[m, k] @ B[k, n] in ``dtype``."""

    model_config = _FROZEN

    gpu: str  # a hardware profile base name, e.g. "H200"
    dtype: str
    m: int = Field(gt=0)
    n: int = Field(gt=0)
    k: int = Field(gt=0)
    cublas_tflops: float = Field(gt=0)  # torch.matmul
    tile_tflops: Optional[float] = Field(default=None, gt=0)  # the tensor-core tile primitive
    scalar_tflops: Optional[float] = Field(default=None, gt=0)  # the scalar template GEMM

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


class Calibration(BaseModel):
    model_config = _FROZEN

    schema_version: Literal[1] = 1
    machine: str  # e.g. "1x NVIDIA H200 (cuco GPU check)"
    date: str  # ISO date of the measurement
    entries: tuple[CalibrationEntry, ...] = Field(min_length=1)

    def efficiencies(self, hw: HardwareProfile, dtype: str, flops: float) -> Optional["Efficiencies"]:
        """Measured shares of peak for ``hw`` (same GPU, else same architecture) and ``dtype``,
        from the entry nearest in FLOPs to ``flops``; None when no entry applies."""
        base = hw.name.split(":")[0].lower()
        same = [e for e in self.entries if e.dtype == dtype and e.gpu.lower() == base]
        pool = same or [e for e in self.entries if e.dtype == dtype and _arch(e.gpu) == hw.arch]
        if not pool:
            return None
        entry = min(pool, key=lambda e: abs(math.log(e.flops) - math.log(flops)) if flops > 0 else -e.flops)
        measured_on = _profile(entry.gpu) or hw
        peak = measured_on.peak_flops.get(dtype) or hw.peak_flops[dtype]
        share = lambda tflops, of: None if tflops is None else min(1.0, tflops * 1e12 / of)  # noqa: E731
        where = entry.gpu if same else f"{entry.gpu}, same architecture {hw.arch}"
        return Efficiencies(tile=share(entry.tile_tflops, peak), cublas=share(entry.cublas_tflops, peak),
                            scalar=share(entry.scalar_tflops, measured_on.cuda_core_flops()),
                            note=f"calibrated on {where} ({self.machine}, {self.date}; "
                                 f"{entry.m}x{entry.n}x{entry.k})")


@dataclass(frozen=True)
class Efficiencies:
    tile: Optional[float]
    cublas: float
    scalar: Optional[float]
    note: str


def _profile(name: str) -> Optional[HardwareProfile]:
    try:
        return get_profile(name)
    except SpecError:
        return None


def _arch(name: str) -> Optional[str]:
    profile = _profile(name)
    return profile.arch if profile else None


def calibration_path(path: Optional[str | Path] = None) -> Path:
    """The calibration file: ``path``, else ``$CUCO_CALIBRATION``, else the cache dir's."""
    if path is not None:
        return Path(path)
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "cuco" / "calibration.json"


def load_calibration(path: Optional[str | Path] = None) -> Optional[Calibration]:
    """The calibration at ``calibration_path(path)``; None when the default file does not exist.
    A file named explicitly (argument or ``$CUCO_CALIBRATION``) must exist and parse."""
    file = calibration_path(path)
    explicit = path is not None or bool(os.environ.get(ENV))
    if not file.is_file():
        if explicit:
            raise ConfigError(f"calibration file {file} does not exist",
                              f"run scripts/gpu_check.sh on a GPU machine to write it, or unset {ENV}")
        return None
    try:
        return Calibration.model_validate(json.loads(file.read_text()))
    except (OSError, ValueError, ValidationError) as e:
        first = e.errors()[0]["msg"] if isinstance(e, ValidationError) else str(e)
        raise ConfigError(f"calibration file {file} is not valid: {first}",
                          "rewrite it with scripts/gpu_check.sh or delete it (schema: docs/model.md)") from None


def save_calibration(calibration: Calibration, path: Optional[str | Path] = None) -> Path:
    """Write ``calibration`` where ``load_calibration`` looks for it; returns the path."""
    file = calibration_path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(calibration.model_dump_json(indent=2) + "\n")
    return file
