"""One CUDA candidate that replays a recorded workload (cuco/op_trace.py) on every traced world
size: the host-driven baseline of a ``traced_<name>`` pattern (``cuco init --traced``).

Each world gets a ``replay_w<N>`` function (``cuco_run`` switches on ``ctx->world``): the rank's
lowered ops (cuco/traced_ops.py) as kernel calls and library collectives (cuco/baseline_text.py),
then a copy of each result into ``ctx->out`` in the build's dtype. The ranks of a world run one
sequence of ops; where a number differs between them (a slice at ``rank * rows``, an uneven
shard's size, a workspace offset) the statement reads ``tr_rank_i(c.rank, ...)``, and where a
statement differs otherwise it sits in a ``switch (c.rank)``. The kernels are real template files
(kernels/traced/*.j2) rendered by kernels/template_env.py.
"""

from __future__ import annotations

import re
from typing import Optional

from cuco.baseline_text import OPS, Layout, contiguous, map_call
from cuco.traced_ops import Refused, lower
from design_space.dimensions import Backend
from design_space.point import DesignPoint

POINT = "host_nccl/sequential/global_barrier/cta/4096K/1"  # the only design a generated baseline has
SPEC_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
_NUM = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?f?)(?![\w.])")


def written(ops: list[dict]) -> set[int]:
    """Storages some op writes (an input among them is copied to the workspace first)."""
    out = set()
    for op in ops:
        dst = op.get("dst")
        refs = [d for d, _ in dst] if isinstance(dst, list) else [dst]
        out |= {r["storage"] for r in [*refs, op.get("idx"), op.get("t")] if isinstance(r, dict)}
    return out


def describe(op: dict) -> str:
    """A comment line naming the recorded op a statement replays."""
    shape = next((op[k]["shape"] for k in ("dst", "t", "src") if isinstance(op.get(k), dict)), None)
    what = {"map": lambda: f"{op['fn'].lower()}", "reduce": lambda: f"{op['fn'].lower()} over dims {op['dims']}",
            "softmax": lambda: "log_softmax" if op["log"] else "softmax", "mm": lambda: "matrix product",
            "allreduce": lambda: f"all_reduce ({op['op']})", "allgather": lambda: "all_gather",
            "broadcast": lambda: f"broadcast from rank {op['root']}", "alltoall": lambda: "all_to_all"}[op["k"]]()
    return f"{op.get('from', op['k'])}: {what}" + (f" -> {list(shape)}" if shape is not None else "")


def rank_groups(record: dict, world: int, spec_dtype: str) -> tuple[list[tuple[str, list[str]]], int, int]:
    """One rank's statements, grouped per recorded op (comment, lines); its workspace and symmetric
    buffer bytes."""
    ops, refused = lower(record, world)
    if refused:
        raise Refused("; ".join(refused))
    lay = Layout(record["storages"], written(ops), spec_dtype, world)
    groups = list(lay.prologue)
    for sid, s in enumerate(record["storages"]):
        if s["kind"] == "const":
            dtype = record_dtype(record, sid)
            at = lay.where[sid][1]
            groups.append((f"a constant {s['values'][0]!r}", [
                map_call(lay, "IDENT", f"({lay.ctype(dtype)}*)(ws + {at})", [1], [1], [float(s["values"][0])])]))
    for op in ops:
        groups.append((describe(op), OPS[op["k"]](lay, op)))
    for j, out in enumerate(record["outputs"]):
        r = out.get("tensor") if isinstance(out, dict) else None
        if r is None:
            raise Refused(f"output {j} is not a tensor with elements")
        groups.append((f"output {j}: {list(r['shape'])} in the build's dtype", [
            map_call(lay, "IDENT", f"(cuco_t*)c.out[{j}]", r["shape"], contiguous(r["shape"]), [r])]))
    return groups, lay.ws_bytes, max(lay.symm_bytes, 256)


def record_dtype(record: dict, sid: int) -> str:
    """The dtype a storage is used with (its first ref in the ops)."""
    found: list[str] = []

    def walk(v):
        if isinstance(v, dict):
            t = v.get("tensor")
            if t is not None and t["storage"] == sid and not found:
                found.append(t["dtype"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(record["ops"])
    return found[0] if found else "float32"


def _merge_one(texts: list[list[str]]) -> list[str]:
    """One group's statements for every rank: as is, with per-rank numbers, or a switch."""
    if all(t == texts[0] for t in texts):
        return texts[0]
    joined = ["\n".join(t) for t in texts]
    parts = [_NUM.split(j) for j in joined]
    if all(len(p) == len(parts[0]) and p[0::2] == parts[0][0::2] for p in parts):
        out = list(parts[0])
        for i in range(1, len(out), 2):
            values = [p[i] for p in parts]
            if len(set(values)) > 1:
                floats = [any(ch in v for ch in ".ef") for v in values]
                if all(floats) or not any(floats):
                    out[i] = f"tr_rank_{'f' if floats[0] else 'i'}(c.rank, {', '.join(values)})"
                    continue
                return _switch(texts)
        return "".join(out).split("\n")
    return _switch(texts)


def _switch(texts: list[list[str]]) -> list[str]:
    lines = ["switch (c.rank) {"]
    done: set[int] = set()
    for r, t in enumerate(texts):
        if r in done:
            continue
        same = [q for q in range(r, len(texts)) if texts[q] == t]
        done.update(same)
        lines += [f"  case {q}:" for q in same] + ["  {"] + [f"    {x}" for x in t] + ["    break;", "  }"]
    return lines + ["}"]


def world_text(ranks: list[dict], world: int, spec_dtype: str) -> dict:
    """The replay of one world: its statements and the buffers it needs (the busiest rank's)."""
    per_rank = [rank_groups(r, world, spec_dtype) for r in ranks]
    counts = {len(g) for g, _, _ in per_rank}
    if len(counts) != 1:
        raise Refused(f"the ranks run different sequences of operations at world size {world} "
                      f"({', '.join(str(len(g)) for g, _, _ in per_rank)} steps)")
    lines: list[str] = []
    for j in range(counts.pop()):
        lines.append(f"// {per_rank[0][0][j][0]}")
        lines.extend(_merge_one([g[j][1] for g, _, _ in per_rank]))
    ws = max(w for _, w, _ in per_rank)
    symm = max(s for _, _, s in per_rank)
    colls = sum(1 for line in lines if "cuco_coll_" in line)
    return {"world": world, "lines": lines, "workspace_bytes": ws, "symm_bytes": symm,
            "summary": f"{len(ranks[0]['ops'])} recorded ops, {colls} library collective call(s), "
                       f"workspace {ws} B, symmetric buffer {symm} B per rank"}


def buffers(trace: dict, world: int) -> tuple[int, int]:
    """(workspace bytes, symmetric buffer bytes) a rank needs at ``world``."""
    w = world_text(trace["worlds"][str(world)], world, SPEC_DTYPES[trace["dtype"]])
    return w["workspace_bytes"], w["symm_bytes"]


def render(trace: dict, point: Optional[DesignPoint] = None) -> str:
    """The candidate source (see the module doc) for the baseline's one design point."""
    from kernels.template_env import render_file

    point = point or DesignPoint.parse_key(POINT)
    if point.key() != POINT or point.backend is not Backend.HOST_NCCL:
        raise Refused(f"a traced baseline renders {POINT} only, not {point.key()}")
    worlds = [world_text(trace["worlds"][w], int(w), SPEC_DTYPES[trace["dtype"]])
              for w in sorted(trace["worlds"], key=int)]
    return render_file("traced/candidate.cu.j2", pattern=f"traced_{trace['name']}", point=POINT,
                       origin=trace["origin"], chunk_bytes=point.chunk_bytes, comm_ctas=point.comm_ctas,
                       worlds=worlds)
