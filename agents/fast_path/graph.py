"""The fast path as a LangGraph state graph, checkpointed in SQLite so a killed run resumes.

``run_fast_path`` starts the graph for a thread (the run's name), resumes it from the last
completed node when a checkpoint says it was interrupted (a kill, a BudgetExhausted stop), or
returns the stored result of a finished thread without calling anything. langgraph is imported
here, lazily, so ``cuco --help`` stays fast.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Optional

from design_space.candidate import Candidate, Origin, OriginKind
from design_space.dimensions import Backend
from design_space.evaluation import Evaluation
from design_space.hardware import HardwareProfile
from design_space.patterns import Pattern
from design_space.point import DesignPoint
from design_space.spec import KernelSpec
from agents.fast_path.nodes import FastState, Nodes
from agents.fast_path.result import FastPathResult, FastPathStep, FastPathTools
from agents.llm.base import LLMClient


def build_graph(nodes: Nodes):
    """The uncompiled graph: analyze -> choose -> write -> check -> annotate, with judge -> write
    loops on failed checks, write -> write on unusable replies, and give_up at the budget of
    iterations or on an LLM call that failed for good."""
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(FastState)
    for name in ("analyze", "choose", "write", "check", "judge", "annotate", "give_up"):
        g.add_node(name, getattr(nodes, name))
    g.add_edge(START, "analyze")
    g.add_edge("analyze", "choose")
    g.add_edge("choose", "write")
    g.add_conditional_edges("write", nodes.after_write, ["check", "write", "give_up"])
    g.add_conditional_edges("check", nodes.after_check, ["annotate", "judge", "give_up"])
    g.add_conditional_edges("judge", nodes.after_judge, ["write", "give_up"])
    g.add_edge("annotate", END)
    g.add_edge("give_up", END)
    return g


def run_fast_path(*, spec: KernelSpec, pattern: Pattern, hardware: HardwareProfile, client: LLMClient,
                  tools: FastPathTools, checkpoint_path: Path, thread_id: str, backend: Optional[Backend] = None,
                  max_iterations: int = 4, seed_source: Optional[str] = None) -> FastPathResult:
    """Run (or resume, or read back) the fast path for ``thread_id``.

    LLMError ends it with status "gave_up" and the reason; BudgetExhausted propagates with the
    checkpoint intact (a rerun with more budget resumes where it stopped)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    nodes = Nodes(spec=spec, pattern=pattern, hardware=hardware, client=client, tools=tools, backend=backend,
                  max_iterations=max(1, max_iterations), seed_source=seed_source)
    checkpoint_path = Path(checkpoint_path)
    checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(checkpoint_path), check_same_thread=False)
    try:
        app = build_graph(nodes).compile(checkpointer=SqliteSaver(conn))
        # every iteration visits at most write, check and judge; "sync": each node's checkpoint is
        # on disk before the next node starts, so a kill loses at most the node it interrupted
        config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 8 + 4 * nodes.max_iterations}
        snapshot = app.get_state(config)
        if snapshot.values and not snapshot.next:
            values = snapshot.values  # finished earlier: the stored result, no new call
        elif snapshot.next:
            values = app.invoke(None, config, durability="sync")
        else:
            values = app.invoke({"model": client.label, "iteration": 0, "trajectory": []}, config, durability="sync")
    finally:
        conn.close()
    return result_from_state(values, client.label)


def result_from_state(values: dict, label: str) -> FastPathResult:
    trajectory = tuple(FastPathStep(**step) for step in values.get("trajectory", ()))
    evaluation = Evaluation.model_validate(values["evaluation"]) if values.get("evaluation") else None
    status = values.get("status") or "gave_up"
    candidate = None
    if status == "ok":
        candidate = Candidate(id=values["candidate_id"], generation=0,
                              origin=Origin(kind=OriginKind.LLM, model=values.get("model") or label,
                                            patch_type="fast_path"),
                              source=values["final_source"], point=DesignPoint.parse_key(values["final_point"]))
    reason = values.get("reason") or ("" if status == "ok" else "the fast path's checkpoint holds no result")
    return FastPathResult(status=status, candidate=candidate, trajectory=trajectory,
                          iterations=values.get("iteration", 0), reason=reason, evaluation=evaluation)
