"""The facts a slow-path prompt is made of, each as plain text: the workload, the design space,
the comm API (the parent's backend first), the hardware, a candidate's evaluation and logs, and
inspirations as diffs against the parent. Pure functions of their inputs."""

from __future__ import annotations

import difflib
import re
from typing import Optional, Sequence

from design_space.candidate import Candidate
from design_space.dim_expr import WORLD_NOTE
from design_space.dimensions import DIMENSION_DOCS
from design_space.evaluation import Evaluation
from design_space.hardware import HardwareProfile
from design_space.patterns import Pattern
from design_space.point import DIMENSIONS, DesignPoint
from design_space.rules import RULES
from design_space.space import dimension_values
from design_space.spec import KernelSpec
from agents.slow_path.blocks import evolve_text
from agents.slow_path.budget import trim_middle
from agents.slow_path.selection import Member, fitness_of
from agents.slow_path.templates import read_doc

INSPIRATION_CHARS = 3000  # one inspiration's diff, before the budget trims further


def spec_text(spec: KernelSpec, pattern: Pattern) -> str:
    shapes = "; ".join(f"{s.name}: {s.shown()}" for s in spec.shapes)
    lines = [f"Kernel {spec.name}: pattern {pattern.name} -- {pattern.description}",
             spec.description.strip() and f"Description: {spec.description.strip()}",
             f"dtype {spec.dtype.value}; world sizes {', '.join(map(str, spec.world_sizes))} "
             f"(target {spec.target_world}); headline shape {spec.headline.name}",
             f"Shapes (global dims): {shapes}",
             any(s.scales for s in (*spec.shapes, *spec.emulation_shapes)) and WORLD_NOTE,
             f"Context layout: dims[] = {', '.join(pattern.dims)}; in[] = {', '.join(pattern.inputs)}; "
             f"out[] = {', '.join(pattern.outputs)}"]
    return "\n".join(line for line in lines if line)


def design_space_text(pattern: Pattern, spec: KernelSpec) -> str:
    """Each dimension's allowed values with what they mean, then the rules and their reasons."""
    values = dimension_values(pattern, spec.restrictions)
    out = ["Point key: backend/placement/sync_scope/issuer/<chunk KiB>K/comm_ctas, "
           "e.g. lsa/stream_overlap/per_peer_signal/warp/64K/8."]
    for dim in DIMENSIONS:
        vals = [str(getattr(v, "value", v)) for v in values[dim]]
        if dim in ("chunk_bytes", "comm_ctas"):
            shown = [f"{int(v) // 1024}K" for v in vals] if dim == "chunk_bytes" else vals
            out.append(f"- {dim}: {', '.join(shown)} ({next(iter(DIMENSION_DOCS[dim].values())).split(' ', 2)[-1]})")
            continue
        out.append(f"- {dim}:")
        out += [f"    {v}: {DIMENSION_DOCS[dim].get(v, '')}" for v in vals]
    out += [f"Pattern note: {n}" for n in pattern.notes]
    out.append("Rules (a point breaking one is invalid):")
    out += [f"- {r.name}: {r.reason}" for r in RULES]
    return "\n".join(out)


def comm_api_text(backend: Optional[str]) -> str:
    """The curated comm API docs: common part, the parent's backend, then the others."""
    doc = read_doc("comm_api")
    parts = re.split(r"^## ", doc, flags=re.MULTILINE)
    sections = {p.split("\n", 1)[0].strip(): "## " + p.strip() for p in parts if p.strip()}
    first = [sections.pop("common", "")]
    mine = sections.pop(f"backend: {backend}", None)
    return "\n\n".join(s for s in [*first, mine, *sections.values()] if s)


def hardware_text(hw: HardwareProfile) -> str:
    flops = ", ".join(f"{k} {v / 1e12:.0f} TFLOP/s" for k, v in hw.peak_flops.items())
    net = f"{hw.network.name} per GPU ({hw.network.bytes_per_s / 1e9:.0f} GB/s)" if hw.network else "no network"
    return (f"{hw.describe()}\n{hw.sms} SMs, L2 {hw.l2_bytes / 2**20:.0f} MiB, "
            f"HBM {hw.hbm_bytes_per_s / 1e12:.2f} TB/s, "
            f"peak {flops}; intra-node link {hw.link_bytes_per_s / 1e9:.0f} GB/s per GPU per direction, hop latency "
            f"{hw.link_alpha_s * 1e6:.1f} us; NVSwitch {'yes' if hw.nvswitch else 'no'}, multimem "
            f"{'yes' if hw.multimem and hw.nvswitch else 'no'}; {net}; kernel launch ~{hw.launch_s * 1e6:.0f} us, "
            f"device barrier ~{hw.barrier_s * 1e6:.0f} us.")


def evaluation_text(ev: Optional[Evaluation]) -> str:
    """Status, reason, build stats, timings with their source and SOL (never the logs)."""
    if ev is None:
        return "Not evaluated yet."
    out = [f"Status: {ev.status.value} at stage {ev.stage.value}" + (f" -- {ev.reason}" if ev.reason else "")]
    if ev.build is not None and ev.build.kernels:
        out.append("Build: " + "; ".join(f"{k.name} {k.registers} regs, {k.smem_bytes} B smem, "
                                         f"{k.spill_stores + k.spill_loads} spills" for k in ev.build.kernels[:6]))
    for t in ev.timings:
        out.append(f"- {t.shape} world {t.world}: {t.seconds * 1e6:.1f} us ({t.source.value}); bound "
                   f"{t.bound_seconds * 1e6:.1f} us, SOL {t.sol_fraction:.0%}; baseline {t.baseline_seconds * 1e6:.1f} "
                   f"us, speedup {t.speedup:.3f}x")
    if ev.fitness is not None:
        out.append(f"Fitness (geomean speedup): {ev.fitness:.4f}; SOL {ev.sol_fraction or 0:.0%}")
    failed = [c for c in ev.checks if not c.ok][:4]
    out += [f"- check failed: world {c.world} shape {c.shape} rank {c.rank}: max err {c.max_abs_err:.3g}, "
            f"{c.mismatches} mismatches, {c.unwritten} unwritten{(' -- ' + c.note) if c.note else ''}" for c in failed]
    if ev.flags:
        out.append("Flags: " + ", ".join(ev.flags))
    return "\n".join(out)


def logs_text(ev: Optional[Evaluation], limit: int = 6000) -> str:
    """A failed evaluation's log (trimmed), or '' for a success or no log."""
    if ev is None or not ev.logs.strip() or ev.fitness is not None:
        return ""
    return "Failure log:\n```\n" + trim_middle(ev.logs.strip(), limit) + "\n```"


def inspiration_items(parent: Candidate, members: Sequence[Member], limit: int = INSPIRATION_CHARS) -> list[str]:
    """One text per inspiration: its point and fitness, then a diff of its evolve blocks against the parent's."""
    base = (evolve_text(parent.source) or parent.source).splitlines()
    items = []
    for cand, ev in members:
        mine = (evolve_text(cand.source) or cand.source).splitlines()
        diff = "\n".join(difflib.unified_diff(base, mine, "parent", "inspiration", n=1, lineterm=""))
        head = (f"## {cand.point.key() if cand.point else 'undeclared point'} -- "
                f"{_fitness_line(ev)} ({cand.origin.label()})")
        items.append(f"{head}\n```diff\n{trim_middle(diff, limit)}\n```")
    return items


def _fitness_line(ev: Optional[Evaluation]) -> str:
    fit = fitness_of(ev)
    return f"fitness {fit:.4f}" if fit > 0 else f"status {ev.status.value if ev else 'unevaluated'}"


def point_key(point: Optional[DesignPoint]) -> str:
    return point.key() if point is not None else "undeclared"
