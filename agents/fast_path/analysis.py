"""The fast path's analyze step: what the program to port communicates, as a short structured
summary for the writer's prompt. No LLM: a host-driven seed ``.cu`` is scanned by
``kernels.seed_analysis`` (collectives, kernels, streams, cuBLAS) and its buffers traced from
collectives to the kernels that read them; without a seed, the spec reference's
torch.distributed calls are read from its source."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from design_space.dim_expr import WORLD_NOTE
from design_space.patterns import Pattern
from kernels.seed_analysis import SeedAnalysis, analyse_seed, reference_calls, strip_comments
from design_space.spec import KernelSpec

_BASE = re.compile(r"[&*\s]*([A-Za-z_]\w*)")
_ALLOC = re.compile(r"\b(?:cudaMalloc\w*|ncclMemAlloc)\s*\(\s*(?:\([^()]*\)\s*)?&\s*([A-Za-z_]\w*)")


def analyse(spec: KernelSpec, pattern: Pattern, seed_source: Optional[str]) -> str:
    """The summary: the workload and its layout in the device context, then what the seed or the
    reference does."""
    lines = [f"workload: {spec.name} (pattern {pattern.name}): {spec.description or pattern.description}",
             f"device context layout: ctx.dims = [{', '.join(pattern.dims)}] (global sizes); "
             f"ctx.in = [{', '.join(pattern.inputs)}]; ctx.out = [{', '.join(pattern.outputs)}]",
             f"dtype {spec.dtype.value}; world sizes {', '.join(map(str, spec.world_sizes))}; "
             f"emulated at world {', '.join(map(str, spec.emulation_world_sizes))} on shapes "
             + "; ".join(f"{s.name} {s.dims}" for s in spec.emulation_shapes)]
    if any(s.scales for s in (*spec.shapes, *spec.emulation_shapes)):
        lines.append(WORLD_NOTE)
    if seed_source is not None:
        lines += ["source analysed: the host-driven seed program"] + seed_lines(seed_source)
    else:
        lines += reference_lines(spec)
    return "\n".join(f"- {ln}" for ln in lines)


def seed_lines(source: str) -> list[str]:
    found = analyse_seed(source)
    buffers = dict.fromkeys(_ALLOC.findall(strip_comments(source)))
    return (found.summary_lines() + [f"device buffers allocated: {', '.join(buffers) or 'none found'}"]
            + dependency_lines(source, found))


def dependency_lines(source: str, found: SeedAnalysis) -> list[str]:
    """Which buffers each collective moves, and which later kernel launches read them: the data
    dependencies a device-initiated version must keep (or turn into signals)."""
    code = strip_comments(source).splitlines()
    launches = [(s.line, s.name, _launch_args(code, s.line, s.name)) for s in found.steps if s.kind == "kernel"]
    out = []
    for step in found.collectives:
        args = _call_args(code, step.line, step.name)
        buffers = [_base(a) for a in args[:2] if _base(a)]
        if not buffers:
            continue
        readers = sorted({name for line, name, kargs in launches if line > step.line
                          and {_base(a) for a in kargs} & set(buffers)})
        out.append(f"{step.name} (line {step.line}) moves {' -> '.join(buffers)}"
                   + (f"; later read by the kernel(s) {', '.join(readers)}" if readers else ""))
    return [f"dependencies: {'; '.join(out)}"] if out else []


def _call_args(code: list[str], line: int, name: str) -> list[str]:
    text = "\n".join(code[line - 1:line + 8])
    at = text.find(name)
    return _split_args(text, text.find("(", at)) if at >= 0 else []


def _launch_args(code: list[str], line: int, name: str) -> list[str]:
    text = "\n".join(code[line - 1:line + 8])
    at = text.find(">>>", text.find(name))
    return _split_args(text, text.find("(", at)) if at >= 0 else []


def _split_args(text: str, open_at: int) -> list[str]:
    if open_at < 0:
        return []
    depth, start, args = 0, open_at + 1, []
    for j in range(open_at + 1, len(text)):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return args + [text[start:j].strip()]
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:j].strip())
            start = j + 1
    return args


def _base(arg: str) -> str:
    """The variable an argument names: ``a_full[r]`` -> ``a_full``, ``&buf`` -> ``buf``."""
    m = _BASE.match(arg)
    return m.group(1) if m and not arg.strip()[:1].isdigit() else ""


def reference_lines(spec: KernelSpec) -> list[str]:
    """The reference's torch.distributed calls, read from its module file on the spec's search path."""
    module, func = spec.reference.split(":")
    path = reference_file(spec)
    if path is None:
        return [f"reference {spec.reference}: source not found on the spec's search path "
                f"({', '.join(spec.search_path) or 'empty'}); port the pattern's semantics above"]
    calls = reference_calls(path.read_text(), func)
    listed = "; ".join(f"{c.name} ({c.kind}, line {c.line})" for c in calls) or "none found"
    return [f"source analysed: the reference {spec.reference} ({path.name})",
            f"torch.distributed calls in {func} and its helpers: {listed}"]


def reference_file(spec: KernelSpec) -> Optional[Path]:
    relative = Path(*spec.reference.split(":")[0].split(".")).with_suffix(".py")
    for base in (*spec.search_path, "."):
        for candidate in (Path(base) / relative, Path(base) / relative.with_suffix("") / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None
