"""A small run database the browser test knows by heart, written through the real ``Store``.

Every status, four backends, two islands, three generations (a grandchild with a parent and a
grandparent), measured and simulated timings, an LLM call, and markup in every text a candidate
or an LLM controls (source, reason, log, prompt, reply, run note, run name). Each payload would
set ``window.__xss`` if a page ever ran it as code instead of showing it as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Optional

from candidates_db import Store
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.code_features import CodeFeatures
from design_space.evaluation import (
    BuildStats, Evaluation, KernelStats, RankCheck, Stage, Status, Tier, Timing, TimingSource,
)
from design_space.llm import LLMCall
from design_space.point import DesignPoint
from design_space.run import RunInfo, RunStatus

XSS = {
    "source": "</pre><script>window.__xss='source'</script>",
    "reason": "<img src=x onerror=\"window.__xss='reason'\">",
    "log": "</details><svg onload=\"window.__xss='log'\"></svg>",
    "prompt": "</textarea><script>window.__xss='prompt'</script>",
    "reply": "<img src=x onerror=\"window.__xss='reply'\">",
    "note": "<svg><script>window.__xss='note'</script></svg>",
    "run": "<img src=x onerror=\"window.__xss='run'\">",
}
MAIN_RUN = "e2e/search run"  # a slash and a space: links must percent-encode run names
LIVE_RUN = "e2e live"
HOSTILE_RUN = XSS["run"]
POINT_KEYS = (
    "lsa/fused_persistent/per_peer_signal/thread/4K/1", "gin/stream_overlap/global_barrier/thread/4K/1",
    "multimem/split_put_wait/global_barrier/thread/4K/1", "copy_engine/sequential/global_barrier/copy_engine/4K/1",
)
FAILURES = ((Status.BUILD_FAILED, Stage.BUILD), (Status.WRONG_RESULT, Stage.EMULATE), (Status.REJECTED, Stage.GUARD))
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
BASE_SOURCE = """#include "cuco_runtime.h"
// EVOLVE-BLOCK-START
__global__ void cuco_fused(const cuco_ctx ctx) {
  int tile = blockIdx.x;
  for (int k = 0; k < ctx.k; k += 64) { /* gemm tile */ }
}
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t s) {
  cuco_fused<<<ctx->tiles, 256, 0, s>>>(*ctx);
  return 0;
}
// EVOLVE-BLOCK-END
"""


@dataclass(frozen=True)
class Planned:
    """One candidate the test will find on the pages."""

    id: str
    parent: Optional[str]
    generation: int
    island: int
    point_key: str
    status: Status
    stage: Stage
    speedup: Optional[float]
    timing: Optional[TimingSource]
    marker: str  # the line this candidate added to its parent's source (what its diff shows)

    @property
    def backend(self) -> str:
        return self.point_key.split("/")[0]


def plan(prefix: str, n: int, first: int = 0) -> list[Planned]:
    """``n`` candidates: 8 per generation, islands alternate, every fourth one fails."""
    out = []
    for i in range(first, first + n):
        gen, failed = i // 8, i % 4 == 3
        status, stage = FAILURES[(i // 4) % 3] if failed else (Status.OK, Stage.SCORE)
        speedup = None if failed else round(0.6 + 0.137 * ((i * 7) % 17), 3)
        timing = None if failed else (TimingSource.MEASURED if i % 5 == 0 else TimingSource.SIMULATED)
        out.append(Planned(id=f"{prefix}{i:04d}", parent=f"{prefix}{i - 8:04d}" if gen else None,
                           generation=gen, island=i % 2, point_key=POINT_KEYS[(i // 4 if failed else i) % 4],
                           status=status, stage=stage, speedup=speedup, timing=timing,
                           marker=f"// {prefix}{i:04d}: unroll {i % 5 + 2}"))
    return out


def _source(p: Planned, sources: dict[str, str]) -> str:
    parent = sources.get(p.parent or "", BASE_SOURCE)
    extra = f"// {XSS['source']}\n" if p.id.endswith("0001") else ""  # inherited by 0009 and 0017
    return parent.replace("// EVOLVE-BLOCK-END", f"{p.marker}\n{extra}// EVOLVE-BLOCK-END")


def _candidate(p: Planned, source: str) -> Candidate:
    origin = (Origin(kind=OriginKind.LLM, model="claude-e2e", patch_type="diff") if p.parent
              else Origin(kind=OriginKind.TEMPLATE))
    return Candidate(id=p.id, parent_ids=(p.parent,) if p.parent else (), generation=p.generation,
                     island=p.island, origin=origin, source=source, point=DesignPoint.parse_key(p.point_key))


def _timings(p: Planned) -> tuple[Timing, ...]:
    if p.speedup is None:
        return ()
    shapes = (("decode-m128", 2e-4), ("prefill-m4096", 3e-3))
    return tuple(Timing(shape=shape, world=8, source=p.timing, seconds=sec, bound_seconds=sec * 0.4,
                        baseline_seconds=sec * p.speedup) for shape, sec in shapes)


def _evaluation(p: Planned, n: int) -> Evaluation:
    failed = p.status is not Status.OK
    reason = (XSS["reason"] if n == 7 else f"{p.status.value} at {p.stage.value}") if failed else "all ranks match"
    logs = f"nvcc: building {p.id}\n" + (f"{XSS['log']}\n" if n == 11 else "") + ("error: boom\n" if failed else "")
    build = None if p.stage is Stage.GUARD else BuildStats(
        arch="sm_90a", comm_backend=p.backend, seconds=1.5,
        kernels=(KernelStats(name="cuco_fused", registers=96 + n % 40, spill_stores=n % 3, mma=n % 2 * 64),))
    checks = () if p.stage in (Stage.GUARD, Stage.BUILD) else tuple(
        RankCheck(tier=Tier.EMULATED, world=2, shape="emu-even", rank=r, ok=p.status is Status.OK,
                  mismatches=0 if p.status is Status.OK else 12) for r in range(2))
    return Evaluation(
        candidate_id=p.id, status=p.status, stage=p.stage, reason=reason, build=build, checks=checks,
        timings=_timings(p), stage_seconds={"guard": 0.01, "build": 1.5, "emulate": 0.8}, logs=logs,
        observed_point=None if failed else p.point_key,
        features=None if failed else CodeFeatures(tensor_core=n % 2 == 0, tensor_core_flop_share=0.5 * (n % 2 == 0),
                                                  registers=96 + n % 40, source="sass+emulator"))


def _llm_call(p: Planned, n: int) -> LLMCall:
    return LLMCall(purpose="slow_path.mutate", candidate_id=p.id, agent_step=f"slow_path:gen{p.generation}",
                   provider="anthropic", model="claude-e2e", prompt=f"Improve {p.parent}. {XSS['prompt']}",
                   response=f"Here is the kernel. {XSS['reply']}", prompt_chars=900, tokens_in=300,
                   tokens_out=2000, latency_s=12.5, cost_usd=0.031, created_at=T0 + timedelta(minutes=n))


def add_planned(store: Store, run: str, planned: list[Planned]) -> None:
    """Store each candidate, its evaluation and (when an LLM wrote it) the call that did."""
    sources = {c.id: c.source for c in store.candidates(run)}
    for p in planned:
        n = int(p.id[-4:])
        sources[p.id] = _source(p, sources)
        assert store.add_candidate(run, _candidate(p, sources[p.id]))
        store.add_evaluation(_evaluation(p, n))
        if p.parent:
            store.add_llm_call(run, _llm_call(p, n))


def _run(name: str, spec, status: RunStatus, note: str = "") -> RunInfo:
    from cuco.loop import spec_hash
    return RunInfo(name=name, spec_name=spec.name, pattern=spec.pattern, spec_hash=spec_hash(spec),
                   spec_json=spec.model_dump_json(), config={"generations": 3, "population": 8, "llm": ["claude-e2e"]},
                   status=status, note=note, created_at=T0, updated_at=T0)


def build_database(store: Store, spec) -> dict[str, list[Planned]]:
    """The three runs: a finished search, a live one (still ``running``), one with a hostile name."""
    runs = {MAIN_RUN: plan("e2e0", 24), LIVE_RUN: plan("live", 4), HOSTILE_RUN: plan("evil", 2)}
    statuses = {MAIN_RUN: RunStatus.COMPLETE, LIVE_RUN: RunStatus.RUNNING, HOSTILE_RUN: RunStatus.STOPPED}
    for name, planned in runs.items():
        store.create_run(_run(name, spec, statuses[name], note=XSS["note"] if name == MAIN_RUN else ""))
        add_planned(store, name, planned)
    return runs


def matching(planned: list[Planned], *, status: Optional[str] = None, backend: Optional[str] = None) -> set[str]:
    return {p.id for p in planned
            if (status is None or p.status.value == status) and (backend is None or p.backend == backend)}
