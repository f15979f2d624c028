"""Meta-summaries: every K generations, what worked and what failed, in a few lines that later
prompts carry ("What was learned so far").

The facts are computed here, deterministically: statuses, the commonest failure reasons, the
design-space coordinates of the best candidates, which patch forms and models improved on their
parents. An LLM (purpose "slow_path.meta") turns them into recommendations; when it fails
(LLMError) the facts themselves, shortened, are the summary. BudgetExhausted propagates.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional, Sequence

from design_space.errors import LLMError
from design_space.point import DIMENSIONS
from agents.llm.base import LLMClient, LLMRequest
from agents.slow_path.budget import trim_tail
from agents.slow_path.selection import Member, fitness_of, ranked
from agents.slow_path.templates import load_template

MAX_WORDS = 150
SUMMARY_CHARS = 1500  # a meta-summary is cut to this before it enters later prompts


def facts(history: Sequence[Member], top: int = 5) -> str:
    """What the run has shown so far, as short lines."""
    evaluated = [(c, e) for c, e in history if e is not None]
    if not evaluated:
        return "No candidate evaluated yet."
    statuses = Counter(e.status.value for _, e in evaluated)
    lines = [f"{len(evaluated)} candidates evaluated: " + ", ".join(f"{n} {s}" for s, n in statuses.most_common())]
    reasons = Counter(_reason_key(e.reason) for _, e in evaluated if e.fitness is None and e.reason)
    if reasons:
        lines.append("Commonest failure reasons: " + "; ".join(f"{r} (x{n})" for r, n in reasons.most_common(4)))
    best = [m for m in ranked(evaluated) if fitness_of(m[1]) > 0][:top]
    if best:
        lines.append("Best candidates: " + "; ".join(f"{c.point.key() if c.point else '?'} fitness "
                                                     f"{fitness_of(e):.3f} ({c.origin.label()})" for c, e in best))
        lines += _dimension_trends(best, evaluated)
    lines += _what_improved(evaluated)
    return "\n".join(lines)


def _reason_key(reason: str) -> str:
    """A reason without its numbers and quoted names, so equal causes count together."""
    text = re.sub(r"\d+(\.\d+)?", "N", reason.split("\n")[0])
    return text[:120]


def _value(point, dim: str) -> str:
    v = getattr(point, dim)
    return str(getattr(v, "value", v))


def _dimension_trends(best: list[Member], evaluated: list[Member]) -> list[str]:
    """Values most of the best share, and values never yet correct (tried at least twice)."""
    trends = []
    for dim in DIMENSIONS:
        vals = Counter(_value(c.point, dim) for c, _ in best if c.point)
        if vals:
            value, n = vals.most_common(1)[0]
            if n > 1 or len(best) == 1:
                trends.append(f"{dim}={value} in {n} of the best {len(best)}")
    failing, correct = Counter(), Counter()
    for c, e in evaluated:
        if c.point:
            (correct if e.fitness is not None else failing).update(f"{d}={_value(c.point, d)}" for d in DIMENSIONS[:4])
    never = [v for v, n in failing.most_common() if n >= 2 and correct[v] == 0][:4]
    lines = ["Best share: " + "; ".join(trends)] if trends else []
    if never:
        lines.append("Never correct so far: " + ", ".join(never))
    return lines


def _what_improved(evaluated: list[Member]) -> list[str]:
    by_id = {c.id: e for c, e in evaluated}
    wins, tries = Counter(), Counter()
    for c, e in evaluated:
        if not c.parent_ids or c.origin.patch_type is None:
            continue
        key = c.origin.patch_type + (f" by {c.origin.model}" if c.origin.model else "")
        tries[key] += 1
        parent = by_id.get(c.parent_ids[0])
        if fitness_of(e) > fitness_of(parent) > 0 or (fitness_of(e) > 0 and fitness_of(parent) == 0):
            wins[key] += 1
    if not tries:
        return []
    return ["Children that beat their parent: " + ", ".join(f"{k} {wins[k]}/{n}" for k, n in tries.most_common(6))]


def fallback_summary(history: Sequence[Member]) -> str:
    """The deterministic summary used when no LLM could write one."""
    return trim_tail("Observed so far (automatic summary):\n" + facts(history), SUMMARY_CHARS)


def meta_summary(clients: Sequence[LLMClient], history: Sequence[Member], *, workload: str, generation: int,
                 previous: Optional[str] = None) -> tuple[str, Optional[str]]:
    """(summary, label of the model that wrote it, or None for the fallback). Tries each client in
    turn; LLMError moves on to the next, then to the fallback."""
    tpl = load_template("slow_meta")
    prev = f"The previous summary said:\n{previous}\n" if previous else ""
    prompt = tpl.render({"workload": workload, "facts": facts(history), "previous": prev, "max_words": str(MAX_WORDS)})
    system = "You summarise an automated kernel search for the engineers and the LLMs that drive it."
    for client in clients:
        request = LLMRequest(system=system, messages=(("user", prompt),), purpose="slow_path.meta", max_tokens=600,
                             temperature=0.3, agent_step=f"slow_path:gen{generation}/meta")
        try:
            text = client.complete(request).text.strip()
        except LLMError:
            continue
        if text:
            return trim_tail(text, SUMMARY_CHARS), client.label
    return fallback_summary(history), None
