"""The design point a candidate's code implements, read off what it was observed to do.

The emulator's trace (evaluator/shim/trace.cpp, one summary per rank and run) says which comm
operations ran with how many bytes, which CTAs issued them, which launches also ran GEMM tiles,
and which streams carried work. From it:

- **backend**: the mechanism that moved the most bytes (lsa puts, GIN puts, multimem operations,
  copy-engine copies of peer memory, library collectives); raw peer-pointer access alone is lsa;
- **placement**: work on other streams than the harness's is one of the overlapped placements
  (stream_overlap or split_put_wait, told apart by the declaration); else a launch whose CTAs
  both moved data and ran GEMM tiles, or one launch per call doing everything, is
  fused_persistent; else sequential;
- **sync_scope**: barriers without waits are global_barrier; waits on more distinct slots per
  call than there are peers are per_tile_signal, else per_peer_signal;
- **issuer**: the lsa put variant that moved the most bytes; copy engines issue their own copies
  (GIN and multimem operations are posted per item, so there it stays the declared one);
- **chunk_bytes / comm_ctas**: the code's own CHUNK_BYTES / COMM_CTAS constants when it defines
  them, else the largest single transfer and the most CTAs that communicated in one launch.

A dimension the tiny emulation shapes cannot settle keeps the declared value as long as nothing
observed contradicts it; any contradiction rejects the candidate, naming both points. The score
uses this observed point, so identical code scores identically whatever it declares wherever the
emulator can see the difference. What it cannot see (e.g. a chunk size larger than every
transfer at emulation shapes) is listed in ``Observation.unsettled``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from design_space.dimensions import CHUNK_BYTES, COMM_CTAS, Backend, Issuer, Placement, SyncScope
from design_space.errors import DesignPointError
from design_space.point import DesignPoint
from kernels import cuda_scan

_BYTES = {
    Backend.LSA: ("put_thread", "put_warp", "put_cta"),
    Backend.GIN: ("gin_put",),
    Backend.MULTIMEM: ("mm_reduce", "mm_store"),
    Backend.COPY_ENGINE: ("ce_copy",),
    Backend.HOST_NCCL: ("coll",),
}
_TRANSFERS = ("put_thread", "put_warp", "put_cta", "gin_put", "ce_copy", "coll")
_LSA_ISSUER = {"put_thread": Issuer.THREAD, "put_warp": Issuer.WARP, "put_cta": Issuer.CTA}


@dataclass(frozen=True)
class Observation:
    """The observed point (``point``: None when the code communicated with nobody), why each value
    was chosen, what contradicts the declaration, and what the emulation could not settle."""

    point: Optional[DesignPoint]
    evidence: tuple[str, ...]
    contradictions: tuple[str, ...] = ()
    unsettled: tuple[str, ...] = ()
    tile_flops_per_rank: float = 0.0  # GEMM FLOPs through the tile per call and rank (largest world)
    tile_flops_busiest: float = 0.0  # the same on the rank that ran the most
    world: int = 0
    dims: Mapping[str, int] = field(default_factory=dict)
    # per run: (its shape's dims, its world, host operations per call on its busiest rank)
    launches: tuple[tuple[Mapping[str, int], int, float], ...] = ()


def _totals(traces: Sequence) -> tuple[dict[str, float], int, Mapping[str, int], int]:
    """Per-call sums over the ranks of the largest-world run (max for the max_* keys)."""
    run = max(traces, key=lambda t: (t.world, sum(t.dims.values())))
    calls = max(1, run.calls)
    out: dict[str, float] = {}
    for rank in run.ranks:
        # the busiest rank's tile FLOPs (a pattern's cost may describe its busiest rank's work)
        out["busiest.mma.bytes"] = max(out.get("busiest.mma.bytes", 0), rank.get("mma.bytes", 0) / calls)
        for key, value in rank.items():
            if key.startswith("max_") or key.endswith(".max_bytes") or key.endswith(".slots"):
                out[key] = max(out.get(key, 0), value)
            elif key != "calls":
                out[key] = out.get(key, 0) + value / calls
    return out, run.world, run.dims, len(run.ranks)


_HOST_OPS = ("launches", "ce_copy.calls", "coll.calls")  # kernel launches, peer copies, library collectives


def launch_counts(traces: Sequence) -> tuple[tuple[Mapping[str, int], int, float], ...]:
    """Host operations per call of every run, on the rank that issued the most."""
    return tuple((dict(t.dims), t.world, max((sum(r.get(k, 0) for k in _HOST_OPS) / max(1, t.calls)
                                               for r in t.ranks), default=0.0)) for t in traces)


def _macro(source: str, name: str) -> Optional[int]:
    m = re.search(rf"^\s*#\s*define\s+{name}\s+\(?\s*(\d+)", cuda_scan.blank(source), re.M)
    return int(m.group(1)) if m else None


def _nearest_at_least(value: float, choices: Sequence[int]) -> int:
    return next((c for c in choices if c >= value), choices[-1])


def _backend(t: Mapping[str, float]) -> tuple[Optional[Backend], str]:
    moved = {b: sum(t.get(f"{k}.bytes", 0) for k in keys) for b, keys in _BYTES.items()}
    best = max(moved, key=lambda b: moved[b])
    if moved[best] > 0:
        shown = ", ".join(f"{b.value} {moved[b]:.0f} B" for b in moved if moved[b])
        return best, f"backend {best.value}: bytes moved per rank and call: {shown}"
    if t.get("peer.calls", 0):
        return Backend.LSA, "backend lsa: peer memory reached through cuco_peer pointers (no put or copy)"
    return None, "no communication observed"


def _placement(t: Mapping[str, float], world: int) -> tuple[Optional[Placement], str]:
    side = t.get("side_launches", 0) + t.get("side_copies", 0) + t.get("side_colls", 0)
    if side > 0:
        return None, f"placement overlapped: {side:.0f} operations per call on side streams"
    if t.get("fused_launches", 0) > 0:
        return Placement.FUSED_PERSISTENT, "placement fused_persistent: one launch both moved data and ran GEMM tiles"
    if t.get("launches", 0) / world <= 1 and t.get("comm_launches", 0) > 0:
        return Placement.FUSED_PERSISTENT, "placement fused_persistent: one launch per call does everything"
    return Placement.SEQUENTIAL, "placement sequential: all work on the harness's stream, in separate launches"


def _sync(t: Mapping[str, float], world: int) -> tuple[SyncScope, str]:
    waits = t.get("wait.calls", 0) + t.get("gin_wait.calls", 0)
    if waits == 0:
        return SyncScope.GLOBAL_BARRIER, "sync_scope global_barrier: no signal waits"
    slots = t.get("wait.slots", 0)
    scope = SyncScope.PER_TILE_SIGNAL if slots > max(1, world - 1) else SyncScope.PER_PEER_SIGNAL
    return scope, f"sync_scope {scope.value}: {slots:.0f} distinct wait slots per rank"


def _issuer(t: Mapping[str, float], backend: Backend) -> tuple[Optional[Issuer], str]:
    if backend is Backend.COPY_ENGINE:
        return Issuer.COPY_ENGINE, "issuer copy_engine: copies of peer memory on streams"
    if backend is Backend.LSA:
        moved = {k: t.get(f"{k}.bytes", 0) for k in _LSA_ISSUER}
        best = max(moved, key=lambda k: moved[k])
        if moved[best] > 0:
            return _LSA_ISSUER[best], f"issuer {_LSA_ISSUER[best].value}: cuco_{best} moved the most bytes"
    return None, ""  # GIN puts and multimem operations are posted per item whatever groups move them


def observe(traces: Sequence, source: str, declared: Optional[DesignPoint]) -> Observation:
    """The observed point of a candidate whose emulation passed (``traces``: its runs)."""
    if not traces:
        return Observation(None, ("no emulation trace",))
    t, world, dims, _ = _totals(traces)
    tile = t.get("mma.bytes", 0) / max(1, world)  # the tile reports its FLOPs in the bytes field
    busiest = t.get("busiest.mma.bytes", 0)
    evidence, unsettled, contra = [], [], []
    backend, why = _backend(t)
    evidence.append(why)
    if backend is None:
        return Observation(None, tuple(evidence), tile_flops_per_rank=tile, tile_flops_busiest=busiest, world=world,
                           dims=dims, launches=launch_counts(traces))
    placement, why = _placement(t, world)
    evidence.append(why)
    sync, why = _sync(t, world)
    evidence.append(why)
    issuer, why = _issuer(t, backend)
    if why:
        evidence.append(why)
    values = {"backend": backend, "placement": placement, "sync_scope": sync, "issuer": issuer}
    values.update(_sizes(t, source, declared, evidence, unsettled, contra))
    _check_comm_ctas(values, t, contra)
    _settle(values, declared, t, unsettled, contra)
    point = _point(values, evidence)
    if declared is not None and point is not None:
        contra += [f"{d}: the code does {getattr(point, d).value if hasattr(getattr(point, d), 'value') else getattr(point, d)}"
                   for d in ("backend", "placement", "issuer")
                   if getattr(point, d) != getattr(declared, d) and not any(c.startswith(f"{d}:") for c in contra)]
    return Observation(point, tuple(evidence), tuple(contra), tuple(unsettled), tile_flops_per_rank=tile,
                       tile_flops_busiest=busiest, world=world, dims=dims, launches=launch_counts(traces))


def _sizes(t, source, declared, evidence, unsettled, contra) -> dict:
    out = {}
    biggest = max((t.get(f"{k}.max_bytes", 0) for k in _TRANSFERS), default=0)
    chunk = _macro(source, "CHUNK_BYTES")
    if chunk is not None:
        out["chunk_bytes"] = _nearest_at_least(chunk, CHUNK_BYTES)
        evidence.append(f"chunk_bytes {chunk}: the code's CHUNK_BYTES")
    elif declared is not None and biggest <= 2 * declared.chunk_bytes:
        out["chunk_bytes"] = declared.chunk_bytes
        unsettled.append(f"chunk_bytes: the largest transfer ({biggest:.0f} B) fits the declared chunk")
    else:
        out["chunk_bytes"] = _nearest_at_least(biggest, CHUNK_BYTES)
        evidence.append(f"chunk_bytes: the largest single transfer was {biggest:.0f} B")
    ctas = _macro(source, "COMM_CTAS")
    seen = t.get("max_comm_blocks", 0)
    if ctas is not None:
        out["comm_ctas"] = _nearest_at_least(ctas, COMM_CTAS)
        evidence.append(f"comm_ctas {ctas}: the code's COMM_CTAS")
    elif declared is not None:
        out["comm_ctas"] = declared.comm_ctas
        unsettled.append(f"comm_ctas: {seen:.0f} CTAs communicated in one launch at emulation shapes")
    else:
        out["comm_ctas"] = _nearest_at_least(max(1, seen), COMM_CTAS)
        evidence.append(f"comm_ctas: {seen:.0f} CTAs communicated in one launch")
    return out


def _check_comm_ctas(values: dict, t: Mapping[str, float], contra: list) -> None:
    """Outside a fused kernel only the comm CTAs move data, so more CTAs moving data in one launch
    than the comm_ctas read (from the code's COMM_CTAS or the declaration) is a false claim: the
    model would charge compute for fewer SMs than the code takes."""
    moved = t.get("max_xfer_blocks", 0)
    if values.get("placement") is not Placement.FUSED_PERSISTENT and moved > values["comm_ctas"]:
        contra.append(f"comm_ctas: {moved:.0f} CTAs moved data in one launch, more than {values['comm_ctas']}")


def _settle(values: dict, declared: Optional[DesignPoint], t, unsettled: list, contra: list) -> None:
    """Fill what the trace left open from the declaration, unless the trace contradicts it."""
    if values["placement"] is None:
        if declared is not None and declared.placement in (Placement.STREAM_OVERLAP, Placement.SPLIT_PUT_WAIT):
            values["placement"] = declared.placement
        elif declared is not None:
            contra.append(f"placement: the code runs work on side streams, which {declared.placement.value} does not")
            values["placement"] = Placement.STREAM_OVERLAP
        else:
            values["placement"] = Placement.STREAM_OVERLAP
        unsettled.append("placement: stream_overlap and split_put_wait both run work on a side stream")
    if values["issuer"] is None:
        values["issuer"] = declared.issuer if declared is not None else Issuer.CTA
        unsettled.append("issuer: the transfers did not tell thread, warp and CTA issuers apart")
    if declared is not None and values["sync_scope"] != declared.sync_scope:
        waits = t.get("wait.calls", 0) + t.get("gin_wait.calls", 0)
        if declared.sync_scope is SyncScope.GLOBAL_BARRIER:
            # a barrier (or, for GIN, copy engines and library collectives, waiting for every peer's data)
            consistent = t.get("barrier.calls", 0) > 0 or values["backend"] in (Backend.GIN, Backend.HOST_NCCL,
                                                                                   Backend.COPY_ENGINE)
        else:
            consistent = waits > 0  # per-peer and per-tile designs look alike when a peer sends one chunk
        if consistent:
            unsettled.append(f"sync_scope: {declared.sync_scope.value} declared; the emulation shapes cannot tell it "
                             f"from the {values['sync_scope'].value} seen")
            values["sync_scope"] = declared.sync_scope
        else:
            contra.append(f"sync_scope: the code's synchronisation is {values['sync_scope'].value}")


def _point(values: dict, evidence: list) -> Optional[DesignPoint]:
    """The observed values as a point; where they break a rule, the nearest valid reading of the
    unsettled dimensions (sync scope, then issuer), said in the evidence."""
    try:
        return DesignPoint(**values)
    except DesignPointError as e:
        first = e.problem
    for sync in SyncScope:
        for issuer in (values["issuer"], *Issuer):
            try:
                point = DesignPoint(**{**values, "sync_scope": sync, "issuer": issuer})
            except DesignPointError:
                continue
            evidence.append(f"read as {point.key()}: the values seen break a rule ({first})")
            return point
    evidence.append(f"the observed combination breaks a rule: {first}")
    return None


def disagreement(declared: DesignPoint, obs: Observation) -> Optional[str]:
    """Why the declaration is refused, naming both points (None: it agrees with the code)."""
    if not obs.contradictions:
        return None
    observed = obs.point.key() if obs.point is not None else "(no valid point)"
    return (f"declared {declared.key()} but the code implements {observed}: " + "; ".join(obs.contradictions))
