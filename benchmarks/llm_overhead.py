"""Prompt size and tokens per LLM call, and where a run's wall time goes, for an LLM-driven run.

Runs `cuco.evolve` with `--llm openai:gpt-4.1` against the scripted fake LLM server (no network,
no key: the fake answers instantly, so LLM latency here is the wire round trip, not a model's
think time), then reads every recorded call from the candidates database.

    .venv/bin/python benchmarks/llm_overhead.py [--generations 4] [--population 4] [--run-dir DIR]

Prints per purpose: calls, prompt characters (mean / max), tokens in / out (mean); then the
run's wall time split into prepare, evaluate (waiting for the evaluator), LLM (sum of call
latencies) and the rest of the loop (proposers, prompts, patches, novelty, store writes).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--population", type=int, default=4)
    ap.add_argument("--run-dir", type=Path, default=None)
    args = ap.parse_args()

    import cuco
    from agents.llm.fake_server import FakeLLMServer, placeholder_key
    from candidates_db import Store
    from cuco.agent_wiring import LLMSettings
    from tests.cuco import llm_scripts as S

    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="cuco-llm-bench-"))
    with FakeLLMServer(S.full_run_rules()) as server:
        os.environ.update(OPENAI_API_KEY=placeholder_key(), OPENAI_BASE_URL=server.base_url_openai)
        start = time.monotonic()
        summary = cuco.evolve(ROOT / "examples" / "allgather_gemm", run_dir=run_dir, generations=args.generations,
                              population=args.population, seed_points=(S.SEEDED,),
                              llm=LLMSettings(names=("openai:gpt-4.1",)))
        wall = time.monotonic() - start
    with Store.open(run_dir / "cuco.db") as store:
        calls = store.llm_calls(summary.run.name)
    print(f"run {summary.run.status.value} in {wall:.1f} s, {len(calls)} LLM calls, database {run_dir / 'cuco.db'}\n")
    print(f"{'purpose':<22}{'calls':>6}{'prompt chars mean':>19}{'max':>8}{'tokens in':>11}{'tokens out':>12}")
    for purpose in sorted({c.purpose for c in calls}):
        group = [c for c in calls if c.purpose == purpose]
        n = len(group)
        print(f"{purpose:<22}{n:>6}{sum(c.prompt_chars for c in group) / n:>19.0f}"
              f"{max(c.prompt_chars for c in group):>8}{sum(c.tokens_in for c in group) / n:>11.0f}"
              f"{sum(c.tokens_out for c in group) / n:>12.0f}")
    llm = sum(c.latency_s for c in calls)
    s = summary.seconds
    rest = s["propose"] - llm - s["agents_evaluator"]
    other = summary.wall_s - s["prepare"] - s["evaluate"] - s["propose"]
    print(f"\nwall {summary.wall_s:.1f} s = prepare {s['prepare']:.1f} + evaluate {s['evaluate']:.1f} "
          f"+ propose {s['propose']:.2f} [evaluator for the agents {s['agents_evaluator']:.2f}, LLM calls {llm:.2f}, "
          f"the loop's own work {rest:.2f}] + other {other:.2f}")
    print(f"outside the LLM and the evaluator: {rest + other:.2f} s ({100 * (rest + other) / summary.wall_s:.1f}% "
          f"of the wall time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
