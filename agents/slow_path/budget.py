"""The prompt's character budget: what is cut, in which order, and the numbers for the figure.

The system we re-create (CUCo, arXiv 2603.02376, its public code) sent 250-300k characters per
mutation prompt (context:
whole logs, every inspiration in full, all docs). Ours is bounded: the prompt (system + user) is
at most ``budget`` characters whenever its mandatory parts fit. Mandatory, never cut: the system
text, the task and reply format, the workload spec, the parent's code and its evaluation summary.
Trimmable, cut in this order until the prompt fits (TRIM_ORDER):

1. failure logs (head and tail kept, the middle goes first);
2. inspirations (the last ones dropped first, then the remaining one shortened);
3. the comm API docs (other backends' sections go first: the parent's backend comes first);
4. the design-space docs (the rules' reasons at the end go first);
5. the hardware facts;
6. the meta-recommendations.

A section may have a floor (the failure log keeps LOG_FLOOR characters, its head and tail: for a
failed parent the diagnosis matters more than a third inspiration): the first pass cuts each
group down to its floor in this order, a second pass, same order, cuts below the floors.

When even the mandatory parts exceed the budget (a parent far larger than any template), the
prompt is sent with every trimmable part removed and ``over_budget`` set in its stats.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

TRIM_ORDER = ("logs", "inspirations", "comm_api", "design_space", "hardware", "meta")
DEFAULT_BUDGET = 24_000
LOG_FLOOR = 1_500


def trim_middle(text: str, limit: int) -> str:
    """Head and tail of ``text`` in at most ``limit`` characters (a log's diagnosis is at its ends)."""
    if len(text) <= limit:
        return text
    marker = f"\n... [{len(text)} chars, middle trimmed for the prompt budget] ...\n"
    room = limit - len(marker)
    if room < 40:
        return _omitted(limit)
    return text[: room // 2] + marker + text[len(text) - (room - room // 2):]


def trim_tail(text: str, limit: int) -> str:
    """The first lines of ``text`` that fit in ``limit`` characters, with a note of what went."""
    if len(text) <= limit:
        return text
    marker = f"\n... [{len(text)} chars, rest trimmed for the prompt budget]"
    room = limit - len(marker)
    if room < 40:
        return _omitted(limit)
    cut = text.rfind("\n", 0, room)
    return text[: cut if cut > 0 else room] + marker


def _omitted(limit: int) -> str:
    note = "(omitted: prompt budget)"
    return note if len(note) <= limit else ""


def trim_items(items: Sequence[str], limit: int, sep: str = "\n\n") -> str:
    """Whole items while they fit (the first are the most relevant), the next one shortened."""
    out, used = [], 0
    for item in items:
        cost = len(item) + (len(sep) if out else 0)
        if used + cost <= limit:
            out.append(item)
            used += cost
            continue
        rest = limit - used - (len(sep) if out else 0)
        short = trim_middle(item, rest) if rest >= 200 else ""
        if short and not short.startswith("(omitted"):
            out.append(short)
        break
    text = sep.join(out)
    return text if text or not items else _omitted(limit)


@dataclass
class Section:
    name: str  # a placeholder of the template
    text: str
    group: Optional[str] = None  # its TRIM_ORDER group; None = mandatory
    shrink: Callable[[str, int], str] = trim_tail
    items: Optional[list[str]] = None  # item sections shrink by dropping items
    floor: int = 0  # the first trimming pass leaves at least this much
    original: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.items is not None:
            self.text = "\n\n".join(self.items)
        self.original = len(self.text)

    def cut_to(self, limit: int) -> None:
        if len(self.text) <= limit:
            return
        self.text = trim_items(self.items, limit) if self.items is not None else self.shrink(self.text, limit)


def fit(sections: Sequence[Section], fixed_chars: int, budget: int) -> bool:
    """Shrink trimmable sections in TRIM_ORDER until ``fixed_chars`` + all sections fit ``budget``.
    Returns False when they cannot (mandatory text alone is over budget)."""
    def total() -> int:
        return fixed_chars + sum(len(s.text) for s in sections)
    for floors in (True, False):
        for group in TRIM_ORDER:
            for s in [s for s in sections if s.group == group]:
                over = total() - budget
                if over <= 0:
                    return True
                s.cut_to(max(s.floor if floors else 0, len(s.text) - over))
    return total() <= budget


@dataclass(frozen=True)
class PromptSize:
    """One prompt's size: what was sent, what it would have been untrimmed, and per section."""

    purpose: str
    budget: int
    chars: int
    untrimmed_chars: int
    sections: dict[str, tuple[int, int]]  # name -> (original chars, sent chars)
    over_budget: bool = False


def prompt_size_stats(sizes: Sequence[PromptSize]) -> dict:
    """Summary for the figure "prompt size per mutation": counts, mean/max sent and untrimmed
    chars, how often each section was trimmed, and the budget."""
    if not sizes:
        return {"prompts": 0}
    sent = [s.chars for s in sizes]
    raw = [s.untrimmed_chars for s in sizes]
    names = sorted({n for s in sizes for n in s.sections})
    trimmed = {n: sum(1 for s in sizes if n in s.sections and s.sections[n][1] < s.sections[n][0]) for n in names}
    return {
        "prompts": len(sizes), "budget": max(s.budget for s in sizes),
        "chars_mean": round(statistics.fmean(sent), 1), "chars_max": max(sent), "chars_min": min(sent),
        "untrimmed_mean": round(statistics.fmean(raw), 1), "untrimmed_max": max(raw),
        "over_budget": sum(1 for s in sizes if s.over_budget), "trimmed_sections": trimmed,
        "by_purpose": {p: len([s for s in sizes if s.purpose == p]) for p in sorted({s.purpose for s in sizes})},
    }
