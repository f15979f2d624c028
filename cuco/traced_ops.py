"""The op set a generated baseline replays: recorded aten and c10d ops (cuco/op_trace.py) lowered
to a few kernel kinds (cuco/baseline_codegen.py writes their CUDA).

Kinds: ``map`` (any elementwise op, a copy, a cast, a fill, ``arange``: one strided kernel with
broadcasting, computing in fp32), ``reduce`` (sum, mean, amax/amin, max/min with indices, argmax/
argmin over any dims), ``softmax`` (softmax / log_softmax over one dim), ``mm`` (mm, addmm, bmm,
baddbmm), and the collectives ``allreduce``, ``allgather``, ``alltoall``, ``broadcast``. View ops
were never recorded (a view is geometry, not work), and allocations need no kernel.

``lower(record)`` gives one rank's kernel ops and the names of the ops it cannot replay; the first
refusal of ``cuco init --traced`` names them all.
"""

from __future__ import annotations

from typing import Any, Optional

UNARY = {"neg": "NEG", "relu": "RELU", "silu": "SILU", "sigmoid": "SIGMOID", "tanh": "TANH", "exp": "EXP",
         "log": "LOG", "rsqrt": "RSQRT", "sqrt": "SQRT", "abs": "ABS", "reciprocal": "RECIP", "erf": "ERF",
         "sin": "SIN", "cos": "COS", "logical_not": "NOT", "bitwise_not": "NOT", "clone": "IDENT",
         "_to_copy": "IDENT", "lift_fresh_copy": "IDENT", "alias_copy": "IDENT"}
BINARY = {"add": "ADD", "sub": "SUB", "mul": "MUL", "div": "DIV", "maximum": "MAX", "minimum": "MIN", "eq": "EQ",
          "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE", "logical_and": "AND", "logical_or": "OR",
          "bitwise_and": "AND", "bitwise_or": "OR"}
FILLS = {"zeros": 0.0, "ones": 1.0, "zeros_like": 0.0, "ones_like": 1.0, "new_zeros": 0.0, "new_ones": 1.0}
ALLOCS = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")
REDUCES = {"sum": "SUM", "mean": "MEAN", "amax": "MAX", "amin": "MIN", "max": "MAX", "min": "MIN",
           "argmax": "MAX", "argmin": "MIN"}
MATMULS = ("mm", "addmm", "bmm", "baddbmm")
DTYPES = ("bfloat16", "float16", "float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")
_COLL_REFUSED = {"send": "send/recv (point-to-point)", "recv_": "send/recv (point-to-point)",
                 "recv_any_source_": "send/recv (point-to-point)", "reduce_scatter_": "reduce_scatter",
                 "_reduce_scatter_base_": "reduce_scatter", "reduce_": "reduce (to one rank)",
                 "gather_": "gather", "scatter_": "scatter", "allreduce_coalesced_": "all_reduce_coalesced",
                 "allgather_into_tensor_coalesced_": "all_gather_into_tensor_coalesced"}
REDUCE_OPS = ("sum", "max", "min", "product")


class Refused(Exception):
    """An op outside the set (its one-line name)."""


def ref(arg: Any) -> Optional[dict]:
    """The tensor ref of an encoded argument, or None."""
    return arg.get("tensor") if isinstance(arg, dict) else None


def scalar(arg: Any) -> float:
    if isinstance(arg, bool):
        return float(arg)
    if isinstance(arg, (int, float)):
        return float(arg)
    if arg in ("inf", "-inf", "nan"):
        return float(arg)
    raise Refused(f"a non-numeric scalar argument {arg!r}")


def operand(arg: Any) -> Any:
    """A tensor ref, or a number (a Python scalar operand)."""
    r = ref(arg)
    return r if r is not None else scalar(arg)


def _dst(entry: dict, result_index: int = 0) -> dict:
    """Where an op's result lands: the argument it writes (in-place, ``out=``) or what it returned."""
    args = entry["args"]
    for name in entry["writes"]:
        if ref(args.get(name)) is not None:
            return ref(args[name])
    res = entry["result"]
    if isinstance(res, list):
        res = res[result_index]
    r = ref(res)
    if r is None:
        raise Refused(f"{entry['op']} (returns no tensor)")
    return r


def _map(fn: str, dst: dict, srcs: list, p0: float = 0.0, p1: float = 0.0) -> dict:
    return {"k": "map", "fn": fn, "dst": dst, "src": srcs, "p": [p0, p1]}


def _elementwise(name: str, entry: dict) -> Optional[dict]:
    a = entry["args"]
    if name in UNARY:
        return _map(UNARY[name], _dst(entry), [operand(a["self"])])
    if name == "gelu":
        return _map("GELU_TANH" if a.get("approximate") == "tanh" else "GELU", _dst(entry), [operand(a["self"])])
    if name == "pow":
        return _map("POW", _dst(entry), [operand(a["self"]), operand(a["exponent"])])
    if name in ("clamp", "clamp_min", "clamp_max"):
        lo = a.get("min") if name != "clamp_max" else None
        hi = a.get("max") if name != "clamp_min" else None
        return _map("CLAMP", _dst(entry), [operand(a["self"])], scalar(lo) if lo is not None else float("-inf"),
                    scalar(hi) if hi is not None else float("inf"))
    if name == "leaky_relu":
        return _map("LEAKY", _dst(entry), [operand(a["self"])], scalar(a.get("negative_slope", 0.01)))
    if name in BINARY or name == "rsub":
        if name == "div" and a.get("rounding_mode") is not None:
            raise Refused(f"div (rounding_mode={a['rounding_mode']})")
        x, y = operand(a["self"]), operand(a["other"])
        alpha = scalar(a.get("alpha", 1))
        if name == "rsub":
            return _map("SUB", _dst(entry), [y, x], alpha)
        return _map(BINARY[name], _dst(entry), [x, y], alpha)
    if name == "where":
        return _map("WHERE", _dst(entry), [operand(a["condition"]), operand(a["self"]), operand(a["other"])])
    if name == "masked_fill":
        return _map("WHERE", _dst(entry), [operand(a["mask"]), operand(a["value"]), operand(a["self"])])
    return None


def _fill(name: str, entry: dict) -> Optional[dict]:
    a = entry["args"]
    if name in FILLS:
        return _map("IDENT", _dst(entry), [FILLS[name]])
    if name in ("full", "full_like", "new_full"):
        return _map("IDENT", _dst(entry), [scalar(a["fill_value"])])
    if name == "scalar_tensor":
        return _map("IDENT", _dst(entry), [scalar(a["s"])])
    if name in ("fill", "copy"):
        return _map("IDENT", _dst(entry), [operand(a["value"] if name == "fill" else a["src"])])
    if name == "zero":
        return _map("IDENT", _dst(entry), [0.0])
    if name == "arange":
        start = scalar(a.get("start", 0))
        return _map("IOTA", _dst(entry), [], start, scalar(a.get("step", 1)))
    return None


def _norm_dims(dims: Any, nd: int) -> list[int]:
    if dims is None or dims == []:
        return list(range(nd))
    dims = dims if isinstance(dims, list) else [dims]
    return sorted({int(d) % max(nd, 1) for d in dims})


def _reduction(name: str, entry: dict) -> Optional[dict]:
    if name not in REDUCES:
        return None
    a = entry["args"]
    src = ref(a["self"])
    dims = _norm_dims(a.get("dim"), len(src["shape"]))
    res = entry["result"]
    if name in ("max", "min") and isinstance(res, list):  # max.dim: values and indices
        return {"k": "reduce", "fn": REDUCES[name], "src": src, "dims": dims, "dst": ref(res[0]), "idx": ref(res[1])}
    if name in ("argmax", "argmin"):
        if a.get("dim") is None and len(src["shape"]) > 1:
            raise Refused(f"{name} over every dim (a flat index)")
        return {"k": "reduce", "fn": REDUCES[name], "src": src, "dims": dims, "dst": None, "idx": _dst(entry)}
    return {"k": "reduce", "fn": REDUCES[name], "src": src, "dims": dims, "dst": _dst(entry), "idx": None}


def _cat(entry: dict) -> list[dict]:
    """One copy per input into its slice of the result."""
    a, dst = entry["args"], _dst(entry)
    parts = [ref(t) for t in a["tensors"]]
    nd = len(dst["shape"])
    dim = int(a.get("dim", 0)) % nd
    out, at = [], 0
    for p in parts:
        if p is None:  # an empty tensor (torch's legacy 1-D [0] too) adds nothing
            continue
        size = p["shape"][dim]
        view = {**dst, "offset": dst["offset"] + at * dst["stride"][dim],
                "shape": [size if d == dim else s for d, s in enumerate(dst["shape"])]}
        out.append(_map("IDENT", view, [p]))
        at += size
    return out


def _matmul(name: str, entry: dict) -> dict:
    a = entry["args"]
    if name in ("mm", "bmm"):
        x, y, bias, alpha, beta = ref(a["self"]), ref(a["mat2"]), None, 1.0, 0.0
    else:
        first, second = ("mat1", "mat2") if name == "addmm" else ("batch1", "batch2")
        x, y, bias = ref(a[first]), ref(a[second]), operand(a["self"])
        alpha, beta = scalar(a.get("alpha", 1)), scalar(a.get("beta", 1))
    return {"k": "mm", "a": x, "b": y, "bias": bias if beta != 0 else None, "alpha": alpha, "beta": beta,
            "dst": _dst(entry)}


def _collective(name: str, entry: dict, world: int) -> list[dict]:
    a, note = entry["args"], entry.get("note") or {}
    if name in _COLL_REFUSED:
        raise Refused(f"torch.distributed {_COLL_REFUSED[name]}")
    if note.get("group") == "subgroup":
        raise Refused("a collective on a process subgroup")
    if name == "allreduce_":
        op = note.get("op", "sum")
        if op not in REDUCE_OPS:
            raise Refused(f"all_reduce with ReduceOp.{op.upper()}")
        return [{"k": "allreduce", "t": ref(t), "op": op} for t in a["tensors"]]
    if name == "allgather_":
        src = ref(a["input_tensors"][0])
        nbytes = _nbytes(src)
        return [{"k": "allgather", "src": src, "dst": [[ref(t), r * nbytes] for r, t in enumerate(outs)]}
                for outs in a["output_tensors"]]
    if name == "_allgather_base_":
        return [{"k": "allgather", "src": ref(a["input_tensor"]), "dst": [[ref(a["output_tensor"]), 0]]}]
    if name == "broadcast_":
        return [{"k": "broadcast", "t": ref(t), "root": int(a["root_rank"])} for t in a["tensors"]]
    if name == "alltoall_base_":
        splits = [*a.get("output_split_sizes", []), *a.get("input_split_sizes", [])]
        if len(set(splits)) > 1:
            raise Refused("all_to_all_single with uneven splits (cuco_coll_alltoall moves equal blocks)")
        src, dst = ref(a["input"]), ref(a["output"])
        return [{"k": "alltoall", "src": [[src, 0]], "dst": [[dst, 0]], "block": _nbytes(src) // world}]
    if name == "alltoall_":
        srcs, dsts = [ref(t) for t in a["input_tensors"]], [ref(t) for t in a["output_tensors"]]
        sizes = {_nbytes(t) for t in srcs + dsts}
        if len(sizes) != 1:
            raise Refused("all_to_all with tensors of different sizes (cuco_coll_alltoall moves equal blocks)")
        block = sizes.pop()
        return [{"k": "alltoall", "src": [[t, j * block] for j, t in enumerate(srcs)],
                 "dst": [[t, j * block] for j, t in enumerate(dsts)], "block": block}]
    raise Refused(f"torch.distributed op c10d::{name}")


def _nbytes(r: dict) -> int:
    from math import prod

    return prod(r["shape"]) * itemsize(r["dtype"])


def itemsize(dtype: str) -> int:
    return {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1}[dtype]


def lower_op(entry: dict, world: int) -> list[dict]:
    """The kernel ops of one recorded op (``Refused`` when it is outside the set)."""
    namespace, _, name = entry["op"].partition("::")
    if namespace == "c10d":
        return [] if name == "barrier" else _collective(name, entry, world)
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    _check_dtypes(entry)
    if base in ALLOCS:
        return []
    if base == "_local_scalar_dense":
        raise Refused(".item() or a Python branch on a tensor's value (the op sequence would depend on data)")
    if base == "cat":
        return _cat(entry)
    if base in MATMULS:
        return [_matmul(base, entry)]
    if base in ("_softmax", "_log_softmax"):
        src = ref(entry["args"]["self"])
        return [{"k": "softmax", "log": base == "_log_softmax", "src": src, "dst": _dst(entry),
                 "dim": int(entry["args"]["dim"]) % len(src["shape"])}]
    for lowering in (_elementwise, _fill, _reduction):
        op = lowering(base, entry)
        if op is not None:
            return [op]
    raise Refused(f"{entry['op']}.{entry['overload']}")


def _check_dtypes(entry: dict) -> None:
    def walk(v):
        if isinstance(v, dict):
            t = v.get("tensor")
            if t is not None and t["dtype"] not in DTYPES:
                raise Refused(f"{entry['op']} on {t['dtype']} tensors")
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(list(entry["args"].values()) + [entry["result"]])


def lower(record: dict, world: int) -> tuple[list[dict], list[str]]:
    """One rank's kernel ops, and the names of the recorded ops outside the set (in order, once each)."""
    ops, refused = [], []
    for s in record["storages"]:
        if s["kind"] == "const" and _numel(s.get("shape", [])) != 1:
            refused.append(f"a tensor of shape {s.get('shape')} built outside the call (pass it as an input)")
    for entry in record["ops"]:
        try:
            ops.extend({**op, "from": f"{entry['op']}.{entry['overload']}"} for op in lower_op(entry, world))
        except Refused as e:
            refused.append(str(e))
    return ops, list(dict.fromkeys(refused))


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n
