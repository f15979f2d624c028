"""The fast-path agent: from a host-driven seed program or a spec's reference to a correct,
conservative, device-initiated generation-0 kernel (README, "LLM agents").

A LangGraph graph, checkpointed in SQLite (a killed run resumes): analyze -> choose -> write ->
check -> judge -> ... -> annotate. ``run_fast_path`` is the entry; the loop lends it an
``evaluate`` tool (agents never import the evaluator). langgraph is imported only when it runs.
"""

from agents.fast_path.graph import run_fast_path
from agents.fast_path.result import FastPathResult, FastPathStep, FastPathTools

__all__ = ["FastPathResult", "FastPathStep", "FastPathTools", "run_fast_path"]
