"""Shared fixtures of the web leaderboard's tests (in-process pages, the browser test, benchmarks).

Every run is written through the real ``Store`` API with real ``design_space`` values, the way the
evolution loop writes it. What ``web_run`` holds (run ``allgather_gemm`` of examples/allgather_gemm,
status ``complete``, created 2025-03-01 12:00 UTC, updated 1 h later); ``ids`` maps these keys to
candidate ids:

  key            gen island origin                  parents        latest status (stage)      speedup  timing
  seed           0   0      template/sample         -              ok (score)                 1.2      simulated
  build_failed   0   1      template/sample         -              build_failed (build)       -        -
  best           1   0      llm/openai:gpt-x/diff   seed           ok (score)                 2.4      simulated
  wrong_result   1   1      template/mutate         seed           wrong_result (emulate)     -        -
  second         2   0      template/crossover      best, seed     ok (score)                 1.8      simulated
  measured       2   1      manual/check            -              ok (score)                 1.5      measured
  rejected       2   0      template/mutate         best           rejected (guard)           -        -
  reevaluated    2   1      template/mutate         second         wrong_result (emulate); its first evaluation was ok 3.0
  unevaluated    3   1      template/mutate         best           (none)                     -        -

Declared points: seed, wrong_result, rejected, reevaluated: lsa/sequential/global_barrier/cta/1024K/8;
best, unevaluated: lsa/fused_persistent/per_tile_signal/warp/64K/8; second: multimem/stream_overlap/...;
measured: gin/fused_persistent/...; build_failed: gin/split_put_wait/...  The best candidate has one
LLM call (slow_path.mutate, $0.0125, the prompt ``PROMPT`` and reply ``REPLY``); the run has one more
call without a candidate (fast_path.write, $0.5). So: 9 candidates, 4 ok (best 2.4x), LLM spend $0.5125.

``make_web_run(db, ...)`` builds the same run in any database (SQLite path or PostgreSQL URL) under
another name and status (``RunStatus.RUNNING`` for live pages); ``add_candidates`` appends ok
candidates to a run (what a live page must pick up). ``make_hostile_run`` builds a run whose name,
sources, reasons, logs, flags, prompts and replies all hold ``XSS`` payloads.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Union

import pytest

from candidates_db import Store
from cuco.spec_loader import load_spec
from design_space.candidate import Candidate, Origin, OriginKind, new_candidate_id
from design_space.code_features import CodeFeatures
from design_space.evaluation import (
    BuildStats, Evaluation, KernelStats, RankCheck, Stage, Status, Tier, Timing, TimingSource,
)
from design_space.llm import LLMCall
from design_space.point import DesignPoint
from design_space.run import RunInfo, RunStatus

ROOT = Path(__file__).resolve().parents[3]
SPEC = load_spec(ROOT / "examples" / "allgather_gemm")
RUN = "allgather_gemm"
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
PROMPT = "You write CUDA kernels.\nImprove the overlap of this kernel:\n<<<EVOLVE-BLOCK-START>>>"
REPLY = "<<<SEARCH\n  sequential();\n=======\n  overlapped();\n>>>REPLACE"
XSS = ('<script>alert(1)</script>', '"><img src=x onerror=alert(1)>')
XSS_TEXT = " ".join(XSS)  # both payloads in one piece of text

POINTS = {
    "sequential": "lsa/sequential/global_barrier/cta/1024K/8",
    "fused": "lsa/fused_persistent/per_tile_signal/warp/64K/8",
    "multimem": "multimem/stream_overlap/per_peer_signal/cta/256K/4",
    "gin_fused": "gin/fused_persistent/per_tile_signal/warp/64K/8",
    "gin_split": "gin/split_put_wait/per_peer_signal/cta/256K/4",
}

# key: (generation, island, origin (kind, model, patch), parent keys, point, outcome)
# outcome: speedup of an ok evaluation, a failed Status, or None (never evaluated)
LAYOUT = {
    "seed": (0, 0, ("template", None, "sample"), (), "sequential", 1.2),
    "build_failed": (0, 1, ("template", None, "sample"), (), "gin_split", Status.BUILD_FAILED),
    "best": (1, 0, ("llm", "openai:gpt-x", "diff"), ("seed",), "fused", 2.4),
    "wrong_result": (1, 1, ("template", None, "mutate"), ("seed",), "sequential", Status.WRONG_RESULT),
    "second": (2, 0, ("template", None, "crossover"), ("best", "seed"), "multimem", 1.8),
    "measured": (2, 1, ("manual", None, "check"), (), "gin_fused", 1.5),
    "rejected": (2, 0, ("template", None, "mutate"), ("best",), "sequential", Status.REJECTED),
    "reevaluated": (2, 1, ("template", None, "mutate"), ("second",), "sequential", Status.WRONG_RESULT),
    "unevaluated": (3, 1, ("template", None, "mutate"), ("best",), "fused", None),
}
FAILED_AT = {Status.BUILD_FAILED: Stage.BUILD, Status.WRONG_RESULT: Stage.EMULATE, Status.REJECTED: Stage.GUARD}


def kernel_source(key: str, text: str = "") -> str:
    """A distinct, plausible candidate source (the store dedups by content)."""
    return (f'#include "cuco_runtime.h"\n// candidate {key} {text}\n'
            f'extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t s) {{\n'
            f'  return launch_{key.replace("-", "_")}(ctx, s);  // {key}\n}}\n')


def ok_evaluation(cid: str, point: str, speedup: float, *, source: TimingSource = TimingSource.SIMULATED,
                  text: str = "") -> Evaluation:
    """What the cascade stores for a correct candidate: build, checks, a timing per spec shape."""
    timings = tuple(Timing(shape=s.name, world=SPEC.target_world, source=source, seconds=1e-3,
                           bound_seconds=4e-4, baseline_seconds=1e-3 * speedup) for s in SPEC.shapes)
    checks = tuple(RankCheck(tier=Tier.EMULATED, world=w, shape=s.name, rank=r, ok=True, max_abs_err=1e-3)
                   for w in SPEC.emulation_world_sizes for s in SPEC.emulation_shapes for r in range(w))
    return Evaluation(
        candidate_id=cid, status=Status.OK, stage=Stage.SCORE, reason=f"all ranks match {text}".strip(),
        build=BuildStats(arch="sm_90a", comm_backend=point.split("/")[0], seconds=2.5,
                         kernels=(KernelStats(name=f"fused_{text}" if text else "fused", registers=96,
                                              smem_bytes=49152, spill_stores=2, spill_loads=1, mma=64),)),
        checks=checks, timings=timings, flags=("memory_ordering_unchecked",) + ((text,) if text else ()),
        stage_seconds={"guard": 0.01, "build": 2.5, "emulate": 1.25, "simulate": 0.02},
        logs=f"nvcc: ok\nemulate: 12 ranks passed\n{text}", observed_point=point,
        observed=(f"puts issued by 8 CTAs {text}".strip(),),
        features=CodeFeatures(tensor_core=True, tensor_core_flop_share=0.75, vector_width_bytes=16,
                              spill_bytes=12, registers=96, source="sass+emulator"),
    )


def failed_evaluation(cid: str, status: Status, text: str = "") -> Evaluation:
    stage = FAILED_AT.get(status, Stage.EMULATE)
    checks = (RankCheck(tier=Tier.EMULATED, world=2, shape=SPEC.emulation_shapes[0].name, rank=1, ok=False,
                        max_abs_err=0.5, mismatches=7, unwritten=3, note=f"tail unwritten {text}".strip()),)
    return Evaluation(candidate_id=cid, status=status, stage=stage, reason=f"{status.value} at {stage.value} {text}".strip(),
                      checks=checks if stage is Stage.EMULATE else (), stage_seconds={"guard": 0.01, stage.value: 0.5},
                      logs=f"{stage.value} log line 1\nerror: {status.value} {text}")


def _origin(kind: str, model, patch) -> Origin:
    return Origin(kind=OriginKind(kind), model=model, patch_type=patch)


def make_web_run(db: Union[str, Path], name: str = RUN, *, status: RunStatus = RunStatus.COMPLETE,
                 text: str = "") -> dict[str, str]:
    """Build the run described in this module's docstring in ``db``; returns key -> candidate id.
    ``text`` is put into every stored text (sources, reasons, logs, flags, LLM prompt and reply)."""
    ids: dict[str, str] = {}
    with Store.open(db) as store:
        store.create_run(RunInfo(name=name, spec_name=SPEC.name, pattern=SPEC.pattern, spec_hash="h" * 64,
                                 spec_json=SPEC.model_dump_json(), config={"generations": 4, "population": 3},
                                 status=status, note=text, created_at=T0, updated_at=T0 + timedelta(hours=1)))
        for key, (gen, island, origin, parents, point, outcome) in LAYOUT.items():
            cand = Candidate(parent_ids=tuple(ids[p] for p in parents), generation=gen, island=island,
                             origin=_origin(*origin), source=kernel_source(key, text),
                             point=DesignPoint.parse_key(POINTS[point]))
            store.add_candidate(name, cand)
            ids[key] = cand.id
            if key == "reevaluated":  # an earlier ok evaluation, superseded by the latest one
                store.add_evaluation(ok_evaluation(cand.id, POINTS[point], 3.0, text=text))
            if isinstance(outcome, float):
                source = TimingSource.MEASURED if key == "measured" else TimingSource.SIMULATED
                store.add_evaluation(ok_evaluation(cand.id, POINTS[point], outcome, source=source, text=text))
            elif outcome is not None:
                store.add_evaluation(failed_evaluation(cand.id, outcome, text))
        _add_llm_calls(store, name, ids["best"], text)
    return ids


def _add_llm_calls(store: Store, run: str, candidate_id: str, text: str) -> None:
    store.add_llm_call(run, LLMCall(purpose="fast_path.write", provider="anthropic", model="claude-y",
                                    prompt=f"analyze {text}", response=f"plan {text}", cost_usd=0.5,
                                    tokens_in=900, tokens_out=200, created_at=T0 + timedelta(minutes=1)))
    store.add_llm_call(run, LLMCall(purpose="slow_path.mutate", candidate_id=candidate_id, provider="openai",
                                    model=f"gpt-x{text}", prompt=PROMPT + text, response=REPLY + text,
                                    prompt_chars=len(PROMPT + text), tokens_in=1200, tokens_out=300,
                                    latency_s=2.5, cost_usd=0.0125, created_at=T0 + timedelta(minutes=5)))


def add_candidates(db: Union[str, Path], run: str, count: int, *, generation: int = 4,
                   speedup: float = 1.1) -> list[str]:
    """Append ``count`` ok candidates (generation ``generation``) with their evaluations; their ids."""
    ids = []
    with Store.open(db) as store:
        for i in range(count):
            cid = new_candidate_id()  # in the source too: every call adds new sources (the store dedups)
            cand = Candidate(id=cid, generation=generation, island=i % 2, origin=_origin("template", None, "mutate"),
                             source=kernel_source(f"added_{cid}"), point=DesignPoint.parse_key(POINTS["fused"]))
            store.add_candidate(run, cand)
            store.add_evaluation(ok_evaluation(cand.id, POINTS["fused"], speedup + 0.01 * i))
            ids.append(cand.id)
    return ids


def make_hostile_run(db: Union[str, Path], *, status: RunStatus = RunStatus.COMPLETE) -> tuple[str, dict[str, str]]:
    """The same run, named with markup and a slash, every stored text carrying both XSS payloads."""
    name = f"evil/{XSS_TEXT}"
    return name, make_web_run(db, name, status=status, text=XSS_TEXT)


@pytest.fixture
def web_run(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """(SQLite file, run name, key -> candidate id) of the run in this module's docstring."""
    db = tmp_path / "runs" / RUN / "cuco.db"
    ids = make_web_run(db)
    return db, RUN, ids
