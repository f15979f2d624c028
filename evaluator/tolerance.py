"""How close a candidate's output must be to the reference's: tolerances that fit the arithmetic.

A fixed ``atol = rtol = 2e-2`` for bf16 fails correct kernels on unscaled inputs (|C| of 10-40) by a
few ulps when partial sums round at other points than the reference's. So each output's tolerance is
the largest of:

- the spec's tolerance for the dtype (``KernelSpec.tolerances``, the defaults of
  design_space.spec.DEFAULT_TOLERANCES unless the spec sets its own);
- a reduction allowance: a result summed from R partials that each may be rounded to the dtype
  (R = the world size for the reduce collectives) deviates by up to ~sqrt(R) units in the last
  place, so ``rtol >= ROUNDINGS_ULPS * u * sqrt(R)`` with ``u`` the dtype's unit roundoff;
- a calibration: the reference run again in float64 on the same inputs
  (evaluator/reference_worker.py) shows how far its own dtype result strays from the exact one; a
  candidate may stray as far with its own rounding, so the allowance is ``MARGIN`` times the
  reference's own 99.9th-percentile error (relative where the values are large, absolute near zero).

``KernelSpec.output_tolerances`` (by output name) overrides all of it for that output.
An element passes within its tolerance of the reference or of the float64 run's own output
(evaluator/emulate.py ``compare``): the calibration is a percentile, and a kernel that rounds less
than the reference must not fail on the few elements where the reference's own rounding strays
further.
The allowances are capped (``RTOL_CAP``, ``ATOL_CAP_RMS`` x the output's RMS) so no calibration can
wave a wrong result through.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

from design_space.spec import DType, KernelSpec, Tolerance

UNIT_ROUNDOFF = {DType.BF16: 2.0 ** -8, DType.FP16: 2.0 ** -11, DType.FP32: 2.0 ** -24}
ROUNDINGS_ULPS = 2.0
MARGIN = 4.0  # the candidate's rounding and the reference's add up, and 99.9% is not 100%
RTOL_CAP = 0.1
ATOL_CAP_RMS = 0.1
REDUCE_COLLECTIVES = ("allreduce", "reducescatter")


def reduced_collective(cost) -> str:
    """The collective a cost's outputs are reduced by, for the reduction allowance: a two-phase cost
    (an all-gather, then a reduce-scatter) reduces in its last reducing phase."""
    return next((ph.collective for ph in reversed(cost.phases) if ph.collective in REDUCE_COLLECTIVES),
                cost.collective)


def output_tolerance(spec: KernelSpec, name: str, *, world: int, collective: str,
                     stats: Optional[Mapping[str, float]] = None) -> Tolerance:
    """The tolerance output ``name`` is compared with at ``world`` ranks (see the module doc)."""
    given = spec.output_tolerances.get(name) if spec.output_tolerances else None
    if given is not None:
        return given
    base = spec.tolerances[spec.dtype]
    atol, rtol = base.atol, base.rtol
    if collective in REDUCE_COLLECTIVES:
        rtol = max(rtol, ROUNDINGS_ULPS * UNIT_ROUNDOFF[spec.dtype] * math.sqrt(world))
    if stats:
        rms = float(stats.get("rms", 0.0))
        rtol = max(rtol, min(RTOL_CAP, MARGIN * float(stats.get("rel", 0.0))))
        atol = max(atol, min(ATOL_CAP_RMS * rms if rms > 0 else atol, MARGIN * float(stats.get("abs", 0.0))))
    return Tolerance(atol=atol, rtol=rtol)
