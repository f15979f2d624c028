"""Bench helpers of the GPU worker: input copies for rotation and the per-case measurement record.
The statistics are evaluator/gpu/bench_stats.py (pure, CPU-tested)."""

from __future__ import annotations

from typing import Optional, Sequence

from evaluator.gpu.bench_stats import input_sets, max_over_ranks, summarize


def rotation_count(inputs: Sequence, device, job: dict) -> int:
    """How many input sets to rotate: from the working set of one call and this GPU's L2."""
    import torch

    props = torch.cuda.get_device_properties(device)
    ws = sum(t.numel() * t.element_size() for t in inputs)
    free, _ = torch.cuda.mem_get_info(device)
    return input_sets(ws, int(getattr(props, "L2_cache_size", 50 << 20)), memory_budget_bytes=free // 4,
                      max_sets=job.get("max_input_sets", 16))


def record(case: str, per_rank: Sequence[Sequence[float]], sets: int,
           baseline_per_rank: Optional[Sequence[Sequence[float]]] = None) -> dict:
    """One case's timing for result.json: medians and spreads of the per-iteration max over ranks."""
    s = summarize(max_over_ranks(per_rank))
    out = {"shape": case, "seconds": s.median, "p10": s.p10, "p90": s.p90, "iqr": s.iqr, "n": s.n,
           "input_sets": sets, "baseline_seconds": 0.0, "baseline_p10": 0.0, "baseline_p90": 0.0}
    if baseline_per_rank:
        b = summarize(max_over_ranks(baseline_per_rank))
        out.update(baseline_seconds=b.median, baseline_p10=b.p10, baseline_p90=b.p90)
    return out
