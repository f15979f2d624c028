"""``cuco doctor``: what this machine can do, as probed by ``evaluator.machine_probe`` right now:
compilers, GPUs, driver, CUDA, NCCL, torch, the sandbox's isolation, the evaluator tiers with
their comm backends, and the names (never the values) of the LLM keys that are set.

Exit 0 when the CPU tiers (build, emulate) work; 1 with a one-line error naming the fix when not.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

from evaluator.machine_probe import MachineReport, TierStatus, probe_machine

CPU_TIERS = ("build", "emulate")


def run_doctor(*, json_out: bool, console) -> int:
    report = probe_machine()
    if json_out:
        print(json.dumps(doctor_json(report), indent=2))
    else:
        for renderable in doctor_renderables(report):
            console.print(renderable)
    problem = cpu_tier_problem(report)
    if problem:
        sys.stderr.write(problem + "\n")  # one plain line, never wrapped by rich
        return 1
    return 0


def doctor_json(report: MachineReport) -> dict[str, Any]:
    data = report.to_dict()
    data["cpu_tiers_ok"] = cpu_tier_problem(report) is None
    return data


def cpu_tier_problem(report: MachineReport) -> Optional[str]:
    """``error: ...`` naming the fix when a CPU tier cannot run, else None."""
    for name in CPU_TIERS:
        tier = report.tier(name)
        if not tier.available:
            text = " ".join(tier.reason.split())
            return f"error: the {name} tier cannot run here: {text}"
    return None


def doctor_renderables(r: MachineReport) -> list:
    from rich.text import Text

    head = Text.assemble(("cuco doctor", "bold"), f": what this machine can do (probed in {r.probe_s:.2f} s)")
    return [head, _machine_table(r), _tiers_table(r)]


def _yes(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[red]no[/]"


def _machine_table(r: MachineReport):
    from cuco.shown_text import shown  # probe output (versions, paths, reasons) is data
    from cuco.terminal import TEXT, WORD, table

    t = table(title="machine", show_header=False)
    t.add_column("what", style="bold", **WORD)
    t.add_column("ok", **WORD)
    t.add_column("detail", **TEXT)
    for tool in (r.python, r.nvcc, r.gxx, r.cuda_runtime):
        t.add_row(tool.name, _yes(tool.available), shown(f"{tool.version} ({tool.path})" if tool.available
                                                           else tool.reason))
    for name, ok, detail in _gpu_rows(r) + _nccl_rows(r) + [_torch_row(r)]:
        t.add_row(name, _yes(ok), shown(detail))
    for i, cap in enumerate(r.isolation):
        t.add_row("sandbox" if i == 0 else "", _yes(cap.available), shown(f"{cap.name}: {cap.detail}"),
                  end_section=i == len(r.isolation) - 1)
    keys = ", ".join(r.llm_keys) if r.llm_keys else "none set (the template proposer needs none)"
    t.add_row("LLM keys", _yes(True) if r.llm_keys else "[dim]none[/]", shown(keys + " — names only, values never shown"))
    return t


def _gpu_rows(r: MachineReport) -> list[tuple[str, bool, str]]:
    g = r.gpu
    if not g.available:
        rows = [("GPUs", False, g.reason)]
    else:
        rows = [(f"GPU {d.index}", True, f"{d.name}, {d.memory_bytes / 2**30:.0f} GiB, {d.sm_count} SMs, "
                 f"compute {d.compute_capability}, multicast {'yes' if d.multicast else 'no'}") for d in g.devices]
    if g.driver_version or g.cuda_driver_version:
        rows.append(("driver", True, f"{g.driver_version or '?'} (CUDA {g.cuda_driver_version or '?'})"))
    return rows


def _nccl_rows(r: MachineReport) -> list[tuple[str, bool, str]]:
    n, c = r.nccl, r.nccl_comm
    lib = f"library {n.lib_version}" if n.lib_version else "library not loadable"
    head = f"headers {n.header_version}" if n.header_version else "headers not found"
    api = "device API (>= 2.28) yes" if n.device_api else f"device API no: {n.reason}"
    rows = [("NCCL", n.device_api, f"{lib}; {head}; {api}")]
    if c.available:
        rows.append(("NCCL comm", bool(c.device_api_support), f"1-rank communicator: deviceApiSupport "
                     f"{c.device_api_support}, multimemSupport {c.multimem_support}, ginType {c.gin_type}"))
    else:
        rows.append(("NCCL comm", False, c.reason))
    return rows


def _torch_row(r: MachineReport) -> tuple[str, bool, str]:
    t = r.torch
    if not t.available:
        return ("torch", False, t.reason)
    build = f"CUDA {t.cuda_build} build" if t.cuda_build else "CPU build"
    symm = "symmetric memory " + ("yes" if t.symmetric_memory else "no")
    if t.cuda_usable is None:
        usable = t.reason
    else:
        usable = f"cuda usable {'yes' if t.cuda_usable else 'no'} (import {t.import_s:.2f} s)" + (
            f": {t.reason}" if t.reason else "")
    return ("torch", True, f"{t.version}, {build}, {symm}; {usable}")


def _tiers_table(r: MachineReport):
    from cuco.terminal import TEXT, WORD, table

    t = table(title="tiers and their comm backends",
              caption="emulate checks logic, indexing and signalling on the CPU, not GPU memory ordering")
    t.add_column("tier", style="bold", **WORD)
    t.add_column("ok", **WORD)
    t.add_column("backends", **WORD)
    t.add_column("why not / how", **TEXT)
    for tier in r.tiers:
        t.add_row(tier.name, _yes(tier.available), _backends(tier), _why(tier))
    return t


def _backends(tier: TierStatus) -> str:
    return " ".join(f"[green]{b.name}[/]" if b.available else f"[dim strike]{b.name}[/]" for b in tier.backends)


def _why(tier: TierStatus):
    from cuco.shown_text import shown  # probe output is data

    if not tier.available:
        return shown(tier.reason)
    off = [f"{b.name}: {b.detail}" for b in tier.backends if not b.available]
    on = [f"{b.name}: {b.detail}" for b in tier.backends if b.available]
    return shown("; ".join(on + [f"not {x}" for x in off]))
