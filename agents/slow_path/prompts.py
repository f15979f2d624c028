"""Building the slow path's prompts from the template files, within the character budget.

Each builder returns the system text, the user text and a ``PromptSize`` (sent vs untrimmed
characters per section) for the prompt-size figure. Trimming order and guarantees: budget.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from design_space.hardware import HardwareProfile
from design_space.patterns import Pattern
from design_space.spec import KernelSpec
from agents.slow_path import context as ctx
from agents.slow_path.blocks import evolve_text
from agents.slow_path.budget import DEFAULT_BUDGET, LOG_FLOOR, PromptSize, Section, fit, trim_middle
from agents.slow_path.selection import Member
from agents.slow_path.templates import load_template, read_doc

FORM_INSTRUCTIONS = {
    "diff": "Make one focused, well-reasoned change (or a few related ones) to the evolve blocks with "
            "SEARCH/REPLACE blocks.",
    "full": "Rewrite the evolve blocks as a whole if a better design needs it (a different placement, sync "
            "scope or backend); return the complete file.",
    "repair": "Reply with SEARCH/REPLACE blocks against the code below, or with the complete corrected file.",
}


@dataclass(frozen=True)
class BuiltPrompt:
    system: str
    user: str
    size: PromptSize


def _build(template: str, purpose: str, sections: list[Section], budget: int) -> BuiltPrompt:
    system = load_template("system").render({})
    tpl = load_template(template)
    fixed = len(system) + len(tpl.render({s.name: "" for s in sections}))
    untrimmed = fixed + sum(s.original for s in sections)
    fits = fit(sections, fixed, budget)
    user = tpl.render({s.name: s.text for s in sections})
    size = PromptSize(purpose=purpose, budget=budget, chars=len(system) + len(user), untrimmed_chars=untrimmed,
                      sections={s.name: (s.original, len(s.text)) for s in sections}, over_budget=not fits)
    return BuiltPrompt(system=system, user=user, size=size)


def _shared(spec: KernelSpec, pattern: Pattern, hardware: HardwareProfile, backend: Optional[str],
            meta: str) -> list[Section]:
    return [
        Section("spec", ctx.spec_text(spec, pattern)),
        Section("design_space", ctx.design_space_text(pattern, spec), group="design_space"),
        Section("comm_api", ctx.comm_api_text(backend), group="comm_api"),
        Section("hardware", ctx.hardware_text(hardware), group="hardware"),
        Section("meta", meta.strip() or "Nothing yet: this is an early generation.", group="meta"),
    ]


def _reply_format(form: str) -> str:
    return read_doc("reply_diff" if form == "diff" else "reply_full").strip()


def mutate_prompt(*, spec: KernelSpec, pattern: Pattern, hardware: HardwareProfile, parent: Member,
                  inspirations: Sequence[Member], meta: str, form: str,
                  budget: int = DEFAULT_BUDGET) -> BuiltPrompt:
    """A diff or full-rewrite mutation of ``parent`` (form "diff" or "full")."""
    cand, ev = parent
    backend = cand.point.backend.value if cand.point else None
    sections = _shared(spec, pattern, hardware, backend, meta) + [
        Section("form_instructions", FORM_INSTRUCTIONS[form]),
        Section("parent_point", ctx.point_key(cand.point)),
        Section("parent_code", cand.source.rstrip("\n")),
        Section("parent_evaluation", ctx.evaluation_text(ev)),
        Section("parent_logs", ctx.logs_text(ev), group="logs", shrink=trim_middle, floor=LOG_FLOOR),
        Section("inspirations", "", group="inspirations",
                items=ctx.inspiration_items(cand, inspirations) or ["(none yet)"]),
        Section("reply_format", _reply_format(form)),
    ]
    return _build("slow_mutate", "slow_path.mutate", sections, budget)


def crossover_prompt(*, spec: KernelSpec, pattern: Pattern, hardware: HardwareProfile,
                     parents: tuple[Member, Member], meta: str, budget: int = DEFAULT_BUDGET) -> BuiltPrompt:
    """Combine parent A (whose frozen frame the child keeps) with parent B (evolve blocks shown)."""
    (a, ea), (b, eb) = parents
    backend = a.point.backend.value if a.point else None
    sections = _shared(spec, pattern, hardware, backend, meta) + [
        Section("parent_a_point", ctx.point_key(a.point)),
        Section("parent_a_code", a.source.rstrip("\n")),
        Section("parent_a_evaluation", ctx.evaluation_text(ea)),
        Section("parent_a_logs", ctx.logs_text(ea), group="logs", shrink=trim_middle, floor=LOG_FLOOR),
        Section("parent_b_point", ctx.point_key(b.point)),
        Section("parent_b_code", (evolve_text(b.source) or b.source).rstrip("\n")),
        Section("parent_b_evaluation", ctx.evaluation_text(eb)),
        Section("parent_b_logs", ctx.logs_text(eb), group="logs", shrink=trim_middle, floor=LOG_FLOOR),
        Section("reply_format", _reply_format("full")),
    ]
    return _build("slow_crossover", "slow_path.crossover", sections, budget)


PREVIOUS_REPLY_CHARS = 3000
REPAIR_KINDS = {
    "patch": "The edit could not be applied",
    "point": "The DESIGN-POINT declaration is missing or invalid",
    "check": "The static checker rejected the code",
    "compile": "The code does not compile (nvcc)",
}


def repair_prompt(*, kind: str, error: str, code: str, point: str, previous_reply: str, full_only: bool = False,
                  budget: int = DEFAULT_BUDGET) -> BuiltPrompt:
    """One bounded repair: the error, the code to start from, the failed reply."""
    sections = [
        # the failed reply is cut before the error message (same group, earlier in the list)
        Section("previous_reply", trim_middle(previous_reply.strip(), PREVIOUS_REPLY_CHARS) or "(empty)",
                group="logs", shrink=trim_middle),
        Section("error_kind", REPAIR_KINDS[kind]),
        Section("error", error.strip() or "(no message)", group="logs", shrink=trim_middle, floor=LOG_FLOOR),
        Section("form_instructions", FORM_INSTRUCTIONS["full" if full_only else "repair"]),
        Section("point", point),
        Section("code", code.rstrip("\n")),
        Section("reply_format", _reply_format("full") if full_only else
                _reply_format("diff") + "\n\nOr, instead:\n" + _reply_format("full")),
    ]
    return _build("slow_repair", "slow_path.repair", sections, budget)
