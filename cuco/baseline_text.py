"""The CUDA statements of one rank's lowered ops (cuco/traced_ops.py), for the generated baseline
(cuco/baseline_codegen.py puts them together).

Every op becomes a call of the replay's kernels (kernels/traced/kernels.cuh.j2) on strided views:
a view is a storage's pointer (an input, or a slot of the workspace) plus the tensor's element
offset, and a geometry (``TrGeo``) that broadcasts each source to the destination's shape and merges
the dims every operand walks contiguously. Collectives stage through the symmetric buffer, as
evaluator/runtime/cuco_coll.h requires: its sum-reduce is in the build's dtype, so an all-reduce of
another dtype, or with max/min/product, is an all-gather then a local reduce.
"""

from __future__ import annotations

from math import prod
from typing import Any, Optional

from cuco.traced_ops import Refused, itemsize

MAX_DIMS = 6
C_TYPES = {"bfloat16": "__nv_bfloat16", "float16": "__half", "float32": "float", "float64": "double",
           "int64": "int64_t", "int32": "int32_t", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t",
           "bool": "bool"}
_REDUCE_FN = {"SUM": "TR_SUM", "MEAN": "TR_MEAN", "MAX": "TR_RMAX", "MIN": "TR_RMIN"}
_COLL_FN = {"sum": "TR_SUM", "max": "TR_RMAX", "min": "TR_RMIN", "product": "TR_PROD"}
_NULL = "(const float*)nullptr"


class Layout:
    """Where one rank's storages and scratch live: inputs stay in ``ctx.in`` unless the workload
    writes them (then a workspace copy), everything else gets a 256-byte aligned workspace slot."""

    def __init__(self, storages: list[dict], written: set[int], spec_dtype: str, world: int) -> None:
        self.spec_dtype, self.world = spec_dtype, world
        self.where: dict[int, tuple[str, int]] = {}
        self.ws_bytes = 0
        self.symm_bytes = 0
        self.prologue: list[tuple[str, list[str]]] = []
        for sid, s in enumerate(storages):
            if s["kind"] == "input" and sid not in written:
                self.where[sid] = ("in", s["index"])
                continue
            off = self.alloc(s["nbytes"])
            self.where[sid] = ("ws", off)
            if s["kind"] == "input":
                self.prologue.append((f"input {s['index']} is written: work on a copy", [
                    f"TR_TRY(cudaMemcpyAsync(ws + {off}, c.in[{s['index']}], {s['nbytes']}, "
                    "cudaMemcpyDeviceToDevice, s));"]))

    def alloc(self, nbytes: int) -> int:
        off = self.ws_bytes
        self.ws_bytes += (max(int(nbytes), 1) + 255) // 256 * 256
        return off

    def ctype(self, dtype: str) -> str:
        return "cuco_t" if dtype == self.spec_dtype else C_TYPES[dtype]

    def ptr(self, r: dict, const: bool = True) -> str:
        """A typed pointer to ``r``'s first element. A workspace view folds its offset into the byte
        offset, so views that differ between ranks only there differ only in one number."""
        kind, at = self.where[r["storage"]]
        t = self.ctype(r["dtype"])
        if kind == "in":
            base = f"(const {t}*)c.in[{at}]"
            return f"({base} + {r['offset']})" if r["offset"] else base
        return f"({'const ' if const else ''}{t}*)(ws + {at + r['offset'] * itemsize(r['dtype'])})"

    def symm_ptr(self, dtype: str, at: int, const: bool = True) -> str:
        t = self.ctype(dtype)
        return f"({'const ' if const else ''}{t}*)(sy + {at})"

    def need_symm(self, nbytes: int) -> None:
        self.symm_bytes = max(self.symm_bytes, int(nbytes))


def fnum(x: float) -> str:
    """A float literal (``INFINITY`` and ``NAN`` by name)."""
    x = float(x)
    if x != x:
        return "NAN"
    if x in (float("inf"), float("-inf")):
        return "INFINITY" if x > 0 else "-INFINITY"
    return f"{x!r}f"


def contiguous(shape: list[int]) -> list[int]:
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= max(int(s), 1)
    return out[::-1]


def is_contiguous(r: dict) -> bool:
    return all(st == c for st, c, n in zip(r["stride"], contiguous(r["shape"]), r["shape"]) if n != 1)


def broadcast(src: Any, shape: list[int]) -> list[int]:
    """``src``'s strides over ``shape`` (0 where it broadcasts; all 0 for a scalar)."""
    if not isinstance(src, dict):
        return [0] * len(shape)
    lead = len(shape) - len(src["shape"])
    if lead < 0:
        raise Refused(f"a source of {len(src['shape'])} dims broadcast to {len(shape)}")
    out = []
    for d, n in enumerate(shape):
        sd = d - lead
        out.append(0 if sd < 0 or (src["shape"][sd] == 1 and n != 1) else src["stride"][sd])
    return out


def coalesce(shape: list[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims, merge neighbours every operand walks contiguously; at least one dim."""
    keep = [d for d, n in enumerate(shape) if n != 1]
    size, st = [shape[d] for d in keep], [[s[d] for d in keep] for s in strides]
    d = len(size) - 2
    while d >= 0:
        if all(s[d] == s[d + 1] * size[d + 1] for s in st):
            size[d] *= size[d + 1]
            for s in st:
                s[d] = s[d + 1]
                del s[d + 1]
            del size[d + 1]
        d -= 1
    if not size:
        return [1], [[0] for _ in strides]
    if len(size) > MAX_DIMS:
        raise Refused(f"a view of {len(size)} dims that do not merge (at most {MAX_DIMS})")
    return size, st


def geo(shape: list[int], strides: list[list[int]]) -> str:
    size, st = coalesce(list(shape), [list(s) for s in strides])
    rows = ", ".join("{" + ", ".join(map(str, s)) + "}" for s in st)
    return f"TrGeo{{{len(size)}, {{{', '.join(map(str, size))}}}, {{{rows}}}}}"


def numel(r: dict) -> int:
    return prod(r["shape"])


def nbytes(r: dict) -> int:
    return numel(r) * itemsize(r["dtype"])


def _source(lay: Layout, src: Any) -> str:
    if isinstance(src, dict):
        return f"{lay.ptr(src)}, 0.f"
    return f"{_NULL}, {fnum(src)}"


def map_call(lay: Layout, fn: str, dst_ptr: str, shape: list[int], dst_strides: list[int], srcs: list,
             src_strides: Optional[list[list[int]]] = None, p: tuple = (0.0, 0.0),
             src_ptrs: Optional[list] = None) -> str:
    """One ``tr_map``: ``srcs`` are refs or numbers (``src_ptrs`` overrides where they are read)."""
    strides = [dst_strides] + (src_strides or [broadcast(x, shape) for x in srcs])
    texts = list(src_ptrs or [_source(lay, x) for x in srcs])
    texts += [f"{_NULL}, 0.f"] * (3 - len(texts))
    strides += [[0] * len(shape)] * (4 - len(strides))
    return (f"TR_TRY(tr_map(c, s, TR_{fn}, {dst_ptr}, {', '.join(texts)}, {fnum(p[0])}, {fnum(p[1])}, "
            f"{geo(shape, strides)}));")


def copy_call(lay: Layout, dst: dict, src: Any) -> str:
    return map_call(lay, "IDENT", lay.ptr(dst, const=False), dst["shape"], dst["stride"], [src])


def op_map(lay: Layout, op: dict) -> list[str]:
    dst = op["dst"]
    if numel(dst) == 0:
        return []
    return [map_call(lay, op["fn"], lay.ptr(dst, const=False), dst["shape"], dst["stride"], op["src"],
                     p=tuple(op["p"]))]


def _kept(r: Optional[dict], src: dict, dims: list[int]) -> list[int]:
    """A reduction result's strides over the source's dims (0 along the reduced ones)."""
    if r is None:
        return [0] * len(src["shape"])
    if len(r["shape"]) == len(src["shape"]):
        return [0 if d in dims else st for d, st in enumerate(r["stride"])]
    it = iter(r["stride"])
    return [0 if d in dims else next(it) for d in range(len(src["shape"]))]


def op_reduce(lay: Layout, op: dict) -> list[str]:
    src, dims, dst, idx = op["src"], op["dims"], op["dst"], op["idx"]
    if idx is not None and len(dims) != 1:
        raise Refused("max/min/argmax with indices over more than one dim")
    keep = [d for d in range(len(src["shape"])) if d not in dims]
    out_st, idx_st = _kept(dst, src, dims), _kept(idx, src, dims)
    outer = geo([src["shape"][d] for d in keep], [[out_st[d] for d in keep], [src["stride"][d] for d in keep],
                                                 [idx_st[d] for d in keep]])
    inner = geo([src["shape"][d] for d in dims], [[0] * len(dims), [src["stride"][d] for d in dims]])
    if idx is not None and len(dims) == 1:  # the index walks the one reduced dim, never merged away
        inner = f"TrGeo{{1, {{{src['shape'][dims[0]]}}}, {{{{0}}, {{{src['stride'][dims[0]]}}}}}}}"
    d = lay.ptr(dst, const=False) if dst is not None else "(float*)nullptr"
    i = lay.ptr(idx, const=False) if idx is not None else "(int64_t*)nullptr"
    return [f"TR_TRY(tr_reduce(c, s, {_REDUCE_FN[op['fn']]}, {d}, {lay.ptr(src)}, {i}, {outer}, {inner}));"]


def op_softmax(lay: Layout, op: dict) -> list[str]:
    src, dst, dim = op["src"], op["dst"], op["dim"]
    keep = [d for d in range(len(src["shape"])) if d != dim]
    outer = geo([src["shape"][d] for d in keep], [[dst["stride"][d] for d in keep], [src["stride"][d] for d in keep]])
    inner = f"TrGeo{{1, {{{src['shape'][dim]}}}, {{{{{dst['stride'][dim]}}}, {{{src['stride'][dim]}}}}}}}"
    return [f"TR_TRY(tr_softmax(c, s, {int(op['log'])}, {lay.ptr(dst, const=False)}, {lay.ptr(src)}, {outer}, "
            f"{inner}));"]


def _as3(r: dict, rows: int, cols: int) -> list[int]:
    """(batch, row, col) strides of a 2-D or 3-D operand (batch stride 0 for 2-D)."""
    return [0, *r["stride"]] if len(r["shape"]) == 2 else list(r["stride"])


def op_mm(lay: Layout, op: dict) -> list[str]:
    a, b, dst, bias = op["a"], op["b"], op["dst"], op["bias"]
    if not all(isinstance(x, dict) for x in (a, b)) or (bias is not None and not isinstance(bias, dict)):
        raise Refused("a matrix product with a scalar operand")
    batch = dst["shape"][0] if len(dst["shape"]) == 3 else 1
    m, n, k = dst["shape"][-2], dst["shape"][-1], a["shape"][-1]
    if numel(dst) == 0:
        return []
    sa, sb, sd = _as3(a, m, k), _as3(b, k, n), _as3(dst, m, n)
    sc = broadcast(bias, [batch, m, n]) if bias is not None else [0, 0, 0]
    mm = (f"TrMm{{{batch}, {m}, {n}, {k}, {{{', '.join(map(str, sa))}}}, {{{', '.join(map(str, sb))}}}, "
          f"{{{', '.join(map(str, sd))}}}, {{{', '.join(map(str, sc))}}}}}")
    bias_ptr = lay.ptr(bias) if bias is not None else _NULL
    scal = f"{fnum(op['alpha'])}, {fnum(op['beta'] if bias is not None else 0.0)}"
    tile = a["dtype"] == b["dtype"] == lay.spec_dtype and (sa[2] == 1 or k == 1) and (sb[2] == 1 or sb[1] == 1)
    if tile:
        b_nk = int(sb[2] != 1 and n > 1)
        return [f"TR_TRY(tr_mm_tile(s, {lay.ptr(dst, const=False)}, {lay.ptr(a)}, {lay.ptr(b)}, {b_nk}, {bias_ptr}, "
                f"{scal}, {mm}));"]
    return [f"TR_TRY(tr_mm_plain(c, s, {lay.ptr(dst, const=False)}, {lay.ptr(a)}, {lay.ptr(b)}, {bias_ptr}, {scal}, "
            f"{mm}));"]


def _send(lay: Layout, t: dict) -> tuple[list[str], str]:
    """(staging lines, pointer) of ``t`` as contiguous bytes a collective can send."""
    if is_contiguous(t):
        return [], lay.ptr(t)
    off, ctype = lay.alloc(nbytes(t)), lay.ctype(t["dtype"])
    stage = map_call(lay, "IDENT", f"({ctype}*)(ws + {off})", t["shape"], contiguous(t["shape"]), [t])
    return [stage], f"(const {ctype}*)(ws + {off})"


def _from_symm(lay: Layout, dst: dict, at: int) -> str:
    """Copy a contiguous region of the symmetric buffer (dst's shape and dtype) into ``dst``."""
    src = lay.symm_ptr(dst["dtype"], at)
    return map_call(lay, "IDENT", lay.ptr(dst, const=False), dst["shape"], dst["stride"], [None],
                    src_strides=[contiguous(dst["shape"])], src_ptrs=[f"{src}, 0.f"])


def op_allreduce(lay: Layout, op: dict) -> list[str]:
    t, n = op["t"], numel(op["t"])
    if n == 0:
        return []
    if op["op"] == "sum" and t["dtype"] == lay.spec_dtype:
        lay.need_symm(nbytes(t))
        lines = [map_call(lay, "IDENT", lay.symm_ptr(t["dtype"], 0, const=False), t["shape"], contiguous(t["shape"]),
                          [t])]
        if is_contiguous(t):
            return lines + [f"TR_TRY(cuco_coll_allreduce(c, 0, {n}, {lay.ptr(t, const=False)}, s));"]
        off = lay.alloc(nbytes(t))
        lines.append(f"TR_TRY(cuco_coll_allreduce(c, 0, {n}, ws + {off}, s));")
        scratch = f"(const cuco_t*)(ws + {off}), 0.f"
        return lines + [map_call(lay, "IDENT", lay.ptr(t, const=False), t["shape"], t["stride"], [None],
                                 src_strides=[contiguous(t["shape"])], src_ptrs=[scratch])]
    # another dtype or reduce op: every rank's tensor gathered, then reduced here in fp32
    lay.need_symm(lay.world * nbytes(t))
    lines, send = _send(lay, t)
    lines.append(f"TR_TRY(cuco_coll_allgather(c, {send}, {nbytes(t)}, 0, s));")
    outer = geo(t["shape"], [t["stride"], contiguous(t["shape"]), [0] * len(t["shape"])])
    inner = f"TrGeo{{1, {{{lay.world}}}, {{{{0}}, {{{n}}}}}}}"
    return lines + [f"TR_TRY(tr_reduce(c, s, {_COLL_FN[op['op']]}, {lay.ptr(t, const=False)}, "
                    f"{lay.symm_ptr(t['dtype'], 0)}, (int64_t*)nullptr, {outer}, {inner}));"]


def op_allgather(lay: Layout, op: dict) -> list[str]:
    src = op["src"]
    lay.need_symm(lay.world * nbytes(src))
    lines, send = _send(lay, src)
    lines.append(f"TR_TRY(cuco_coll_allgather(c, {send}, {nbytes(src)}, 0, s));")
    return lines + [_from_symm(lay, dst, at) for dst, at in op["dst"] if dst is not None]


def op_broadcast(lay: Layout, op: dict) -> list[str]:
    t = op["t"]
    lay.need_symm(lay.world * nbytes(t))
    lines, send = _send(lay, t)
    lines.append(f"TR_TRY(cuco_coll_allgather(c, {send}, {nbytes(t)}, 0, s));  // broadcast from rank {op['root']}")
    return lines + [_from_symm(lay, t, op["root"] * nbytes(t))]


def op_alltoall(lay: Layout, op: dict) -> list[str]:
    block, total = op["block"], op["block"] * lay.world
    lay.need_symm(2 * total)
    lines = [map_call(lay, "IDENT", lay.symm_ptr(t["dtype"], at, const=False), t["shape"], contiguous(t["shape"]), [t])
             for t, at in op["src"]]
    lines.append(f"TR_TRY(cuco_coll_alltoall(c, 0, {block}, {total}, s));")
    return lines + [_from_symm(lay, t, total + at) for t, at in op["dst"]]


OPS = {"map": op_map, "reduce": op_reduce, "softmax": op_softmax, "mm": op_mm, "allreduce": op_allreduce,
       "allgather": op_allgather, "broadcast": op_broadcast, "alltoall": op_alltoall}
