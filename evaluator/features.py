"""The code features a candidate's score uses, read off its build and its emulation.

- tensor cores: the SASS of its kernels has tensor-core MMA instructions (evaluator/sass.py, from
  the cubin the build stage produced). Without a disassembler, the emulator's evidence stands in:
  GEMM work went through cuco's tile, which is tensor-core code for bf16/fp16 (never for fp32);
- the share of the workload's FLOPs that ran through the tile: the emulator's count (per mean
  rank, and on the busiest rank) over the pattern's FLOPs at the same shape (see read_features),
  capped by the share of the outputs that depend on the tile's results (the emulator's dependence
  probe: noise added to every tile's result must change them), so a decoy tile whose result is
  dropped, or a scalar loop beside it, earns nothing;
- the widest global access (SASS), spills and registers (ptxas, worst kernel).
"""

from __future__ import annotations

from typing import Optional

from design_space.code_features import CodeFeatures
from design_space.evaluation import BuildStats
from design_space.patterns import Pattern
from design_space.spec import DType
from evaluator.observed_point import Observation


# Honest renders of every family measured 0.9986-1.0 (a few outputs agree with the reference by
# chance even after the noise, e.g. behind a norm weight near zero; 2026-12-04, this project's
# 2-core CPU machine, 20 points): a dependence this high counts as full, lower ones cap the share.
DEPENDENCE_FULL = 0.99


def read_features(build: Optional[BuildStats], obs: Optional[Observation], pattern: Pattern,
                  dtype: DType, tile_dependence: Optional[float] = None) -> CodeFeatures:
    kernels = build.kernels if build is not None else ()
    mma = [k.mma for k in kernels if k.mma is not None]
    share = 0.0
    if obs is not None and obs.world and obs.tile_flops_per_rank > 0:
        cost = pattern.cost(obs.dims, obs.world, dtype)
        # Two readings of one share: per mean rank against the cost's FLOPs, and on the busiest
        # rank against the cost's busiest rank (x imbalance). A pattern's cost may describe the mean
        # rank (MoE, where the emulated routing is less skewed than the modelled one) or only the
        # ranks that compute (KV transfer: decode ranks only receive); the larger reading is the one
        # whose rank the cost describes. A scalar GEMM counts nothing in either.
        # A cost of two phases (docs/model.md, "Two phases") counts the GEMMs of both.
        flops = sum(ph.flops for ph in cost.phases)
        busiest = sum(ph.flops * ph.imbalance for ph in cost.phases)
        mean = obs.tile_flops_per_rank / flops if flops > 0 else 0.0
        top = obs.tile_flops_busiest / busiest if flops > 0 else 0.0
        share = min(1.0, max(mean, top))
    if tile_dependence is not None:
        share = min(share, min(1.0, tile_dependence / DEPENDENCE_FULL))
    if mma:
        tensor_core, source = any(m > 0 for m in mma), "the SASS and the emulator's tile counts"
    else:
        tensor_core = share > 0 and dtype is not DType.FP32
        source = "the emulator's tile counts (SASS not read: install the dev extra's nvidia-cuda-nvdisasm)"
    if tile_dependence is not None:
        source += f"; {tile_dependence:.0%} of the outputs depend on the tile's results"
    widths = [k.widest_global_bytes for k in kernels if k.widest_global_bytes]
    spills = max((k.spill_stores + k.spill_loads for k in kernels), default=0)
    registers = max((k.registers for k in kernels), default=0)
    return CodeFeatures(tensor_core=tensor_core, tensor_core_flop_share=share if tensor_core else 0.0,
                        vector_width_bytes=max(widths, default=4), spill_bytes=spills, registers=min(255, registers),
                        tile_output_dependence=tile_dependence, source=source)
