"""What the exported op takes and returns, per cuco workload pattern (standalone: no cuco import).

For each pattern: the input tensors in ``ctx.in[]`` order with their per-rank shapes, the
outputs in ``ctx.out[]`` order, the integer flags the op takes as arguments (dims that no input
shape carries; a flag whose dim shares an input's name takes another argument name), how the
global dims (``ctx.dims[]`` order) follow from the input shapes and the world size, and the
symmetric buffer and workspace one rank needs. The byte sizes and the shape
rules mirror cuco's pattern definitions (design_space/families); cuco's tests compare the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Sequence, Tuple

Shape = Tuple[int, ...]
Dims = Dict[str, int]


def _a16(x: int) -> int:
    return (x + 15) // 16 * 16


@dataclass(frozen=True)
class Signature:
    dims: Tuple[str, ...]  # ctx.dims[] order
    inputs: Tuple[Tuple[str, str], ...]  # (name, per-rank shape in words), ctx.in[] order
    outputs: Tuple[Tuple[str, str], ...]  # (name, per-rank shape in words), ctx.out[] order
    weights: Tuple[str, ...]  # inputs a layer holds as parameters (the README's example)
    from_inputs: Callable[[Mapping[str, Shape], int], Dims]  # dims the input shapes carry
    input_shapes: Callable[[Dims, int], List[Shape]]  # what the inputs must look like, given the dims
    output_shapes: Callable[[Dims, int], List[Shape]]
    problems: Callable[[Dims, int], List[str]]  # why these dims do not fit this world size
    symm_bytes: Callable[[Dims, int, int], int]  # (dims, world, element size)
    workspace_bytes: Callable[[Dims, int, int], int] = lambda d, w, e: 0
    flags: Dict[str, str] = field(default_factory=dict)  # op arguments: dim name -> meaning
    # dim name -> the op argument that sets it, where an input tensor already has the dim's name
    # (gemm_allgather's bias flag and bias tensor): one schema cannot hold two arguments of one name
    flag_args: Dict[str, str] = field(default_factory=dict)

    def flag_arg(self, dim: str) -> str:
        """The op argument (and wrapper keyword) that sets flag ``dim``."""
        return self.flag_args.get(dim, dim)


def _not_divisible(d: Dims, world: int, names: Sequence[str]) -> List[str]:
    return [f"{k}={d[k]} is not divisible by world size {world}" for k in names if d[k] % world]


def _one_of(d: Dims, name: str, allowed: Sequence[int], meaning: str) -> List[str]:
    return [] if d[name] in allowed else [f"{name}={d[name]} must be one of {list(allowed)} ({meaning})"]


def _moe_cap(d: Dims, world: int) -> int:
    return d["t"] * min(d["k"], d["e"] // world)


MOE_MAX_CHUNKS, MOE_SCRATCH_ROWS, MOE_MAX_WORKERS = 48, 64, 256  # frozen in the MoE templates' header
KV_MAX_CHUNKS = 1024  # the KV-transfer templates' chunk slots: a layer never shares one
RING_MAX_D = 128  # the ring-attention templates keep a head's row in shared memory


def _moe_symm(d: Dims, world: int, e: int) -> int:
    row = d["h"] * e
    hi = (2 + d["e"] // world + MOE_MAX_CHUNKS + 1) // 2 * 2
    headers = (2 + world) * world * hi * 8
    blocks = world * _moe_cap(d, world) * row
    return _a16(_a16(headers + blocks) + blocks) + (d["t"] * d["k"] + _moe_cap(d, world)) * row


def _moe_workspace(d: Dims, world: int, e: int) -> int:
    pairs = d["t"] * d["k"]
    tables = _a16(_a16(d["e"] * 4) + d["e"] * 4) + world * 4
    tables = _a16(_a16(_a16(_a16(tables) + pairs * 4) + pairs * 4) + pairs * 4)
    return tables + MOE_MAX_WORKERS * MOE_SCRATCH_ROWS * d["f"] * e


def _moe_problems(d: Dims, world: int) -> List[str]:
    out = [] if d["e"] % world == 0 else [f"e={d['e']} experts do not spread evenly over world size {world}"]
    return out + ([f"k={d['k']} choices per token exceed e={d['e']} experts"] if d["k"] > d["e"] else [])


def _kv_problems(d: Dims, world: int) -> List[str]:
    out = [] if world >= 2 and world % 2 == 0 else [
        f"world size {world} must be even: ranks [0, n/2) prefill, [n/2, n) decode"]
    return out + ([f"l={d['l']} layers exceed {KV_MAX_CHUNKS}"] if d["l"] > KV_MAX_CHUNKS else [])


def _ring_problems(d: Dims, world: int) -> List[str]:
    out = _not_divisible(d, world, ("s",))
    out += [f"d={d['d']} exceeds {RING_MAX_D}"] if d["d"] > RING_MAX_D else []
    return out + _one_of(d, "mask", (1, 2), "1 full attention, 2 causal")


def _moe_router_problems(d: Dims, world: int) -> List[str]:
    # the router's [H, E] weight of rank below E could not give every expert its own logit
    low = [f"h={d['h']} hidden features cannot separate e={d['e']} experts' logits"] if d["h"] < d["e"] else []
    return _moe_problems(d, world) + low


def _moe_router_workspace(d: Dims, world: int, e: int) -> int:
    """moe_dispatch_combine's workspace, then the router's fp32 logits [T, E], the chosen expert
    ids [T*K] (int32) and their routing weights [T*K] (fp32), each 16-byte aligned."""
    pairs = d["t"] * d["k"]
    ids = _a16(_a16(_moe_workspace(d, world, e)) + d["t"] * d["e"] * 4)
    return _a16(ids + pairs * 4) + pairs * 4


ULYSSES_DIMS = ("b", "s", "h", "d")
ULYSSES_SHAPES = {"x": "[B, S/n, H, D]", "y": "[B, S, H/n, D]"}  # x: a sequence shard, y: a head group


def _ulysses_problems(d: Dims, world: int) -> List[str]:
    low = [f"{k}={d[k]} must be at least 1" for k in ULYSSES_DIMS if d[k] < 1]
    return low + _not_divisible(d, world, ("s", "h"))


def _ulysses_shape(name: str, d: Dims, world: int) -> Shape:
    if name == "x":
        return (d["b"], d["s"] // world, d["h"], d["d"])
    return (d["b"], d["s"], d["h"] // world, d["d"])


def _ulysses_dims(name: str, shape: Shape, world: int) -> Dims:
    b, s, h, dd = shape
    return {"b": b, "s": s * world, "h": h, "d": dd} if name == "x" else {"b": b, "s": s, "h": h * world, "d": dd}


def _ulysses(src: str, dst: str) -> Signature:
    """One direction of the Ulysses all-to-all: ``src`` (x or y) in, the other out; no weights."""
    return Signature(
        dims=ULYSSES_DIMS,
        inputs=((src, ULYSSES_SHAPES[src]),),
        outputs=((dst, ULYSSES_SHAPES[dst]),),
        weights=(),
        from_inputs=lambda s, w: _ulysses_dims(src, s[src], w),
        input_shapes=lambda d, w: [_ulysses_shape(src, d, w)],
        output_shapes=lambda d, w: [_ulysses_shape(dst, d, w)],
        problems=_ulysses_problems,
        # SEND and RECV: one rank's whole tensor each (the same bytes in both layouts)
        symm_bytes=lambda d, w, e: 2 * d["b"] * (d["s"] // w) * d["h"] * d["d"] * e,
    )


SIGNATURES: Dict[str, Signature] = {
    "allgather_gemm": Signature(
        dims=("m", "n", "k", "bias"),
        inputs=(("a", "[M/n, K]"), ("b", "[K, N/n]"), ("bias", "[N/n]")),
        outputs=(("c", "[M, N/n]"),),
        weights=("b", "bias"),
        from_inputs=lambda s, w: {"m": s["a"][0] * w, "k": s["a"][1], "n": s["b"][1] * w},
        input_shapes=lambda d, w: [(d["m"] // w, d["k"]), (d["k"], d["n"] // w), (d["n"] // w,)],
        output_shapes=lambda d, w: [(d["m"], d["n"] // w)],
        problems=lambda d, w: _not_divisible(d, w, ("m", "n")) + _one_of(d, "bias", (1, 2), "1 adds the bias"),
        symm_bytes=lambda d, w, e: d["m"] * d["k"] * e,
        flags={"bias": "1: C_r = allgather(A) @ B_r + bias_r, 2: C_r = allgather(A) @ B_r, the bias tensor passed "
                       "but not added"},
        flag_args={"bias": "add_bias"},
    ),
    "gemm_reducescatter": Signature(
        dims=("m", "n", "k"),
        inputs=(("a", "[M, K/n]"), ("b", "[K/n, N]")),
        outputs=(("c", "[M/n, N]"),),
        weights=("b",),
        from_inputs=lambda s, w: {"m": s["a"][0], "k": s["a"][1] * w, "n": s["b"][1]},
        input_shapes=lambda d, w: [(d["m"], d["k"] // w), (d["k"] // w, d["n"])],
        output_shapes=lambda d, w: [(d["m"] // w, d["n"])],
        problems=lambda d, w: _not_divisible(d, w, ("m", "k")),
        symm_bytes=lambda d, w, e: 2 * d["m"] * d["n"] * e,
    ),
    "gemm_allreduce": Signature(
        dims=("m", "n", "k", "rmsnorm"),
        inputs=(("a", "[M, K/n]"), ("b", "[K/n, N]"), ("gamma", "[N]")),
        outputs=(("y", "[M, N]"),),
        weights=("b", "gamma"),
        from_inputs=lambda s, w: {"m": s["a"][0], "k": s["a"][1] * w, "n": s["b"][1]},
        input_shapes=lambda d, w: [(d["m"], d["k"] // w), (d["k"] // w, d["n"]), (d["n"],)],
        output_shapes=lambda d, w: [(d["m"], d["n"])],
        problems=lambda d, w: (_not_divisible(d, w, ("k",))
                               + _one_of(d, "rmsnorm", (1, 2, 3), "1 applies RMSNorm, 3 adds the bias")),
        symm_bytes=lambda d, w, e: (2 * d["m"] + w * (-(-d["m"] // w))) * d["n"] * e,
        flags={"rmsnorm": "1: RMSNorm(Y) * gamma (eps 1e-6), 2: plain Y, 3: Y + gamma (the [N] input is the "
                           "layer's bias, added once after the sum)"},
    ),
    "kv_cache_transfer": Signature(
        dims=("l", "t", "h", "dkv"),
        inputs=(("x", "[L, T, H]"), ("w", "[L, H, 2*Dkv]")),
        outputs=(("kv", "[L, T, 2*Dkv]"),),
        weights=("w",),
        from_inputs=lambda s, w: {"l": s["x"][0], "t": s["x"][1], "h": s["x"][2], "dkv": s["w"][2] // 2},
        input_shapes=lambda d, w: [(d["l"], d["t"], d["h"]), (d["l"], d["h"], 2 * d["dkv"])],
        output_shapes=lambda d, w: [(d["l"], d["t"], 2 * d["dkv"])],
        problems=_kv_problems,
        symm_bytes=lambda d, w, e: d["l"] * d["t"] * 2 * d["dkv"] * e,
    ),
    "moe_dispatch_combine": Signature(
        dims=("t", "h", "f", "e", "k", "skew"),
        inputs=(("x", "[T, H]"), ("route", "[T, 2*K]"), ("w1", "[E/n, H, F]"), ("w2", "[E/n, F, H]")),
        outputs=(("out", "[T, H]"),),
        weights=("w1", "w2"),
        from_inputs=lambda s, w: {"t": s["x"][0], "h": s["x"][1], "f": s["w1"][2], "e": s["w1"][0] * w,
                                  "k": s["route"][1] // 2},
        input_shapes=lambda d, w: [(d["t"], d["h"]), (d["t"], 2 * d["k"]), (d["e"] // w, d["h"], d["f"]),
                                   (d["e"] // w, d["f"], d["h"])],
        output_shapes=lambda d, w: [(d["t"], d["h"])],
        problems=_moe_problems,
        symm_bytes=_moe_symm,
        workspace_bytes=_moe_workspace,
    ),
    "ring_attention": Signature(
        dims=("h", "s", "d", "mask"),
        inputs=(("q", "[H, S/n, D]"), ("k", "[H, S/n, D]"), ("v", "[H, S/n, D]")),
        outputs=(("o", "[H, S/n, D]"),),
        weights=(),
        from_inputs=lambda s, w: {"h": s["q"][0], "s": s["q"][1] * w, "d": s["q"][2]},
        input_shapes=lambda d, w: [(d["h"], d["s"] // w, d["d"])] * 3,
        output_shapes=lambda d, w: [(d["h"], d["s"] // w, d["d"])],
        problems=_ring_problems,
        symm_bytes=lambda d, w, e: (w + 1) * 2 * d["h"] * (d["s"] // w) * d["d"] * e,
        workspace_bytes=lambda d, w, e: d["h"] * (d["s"] // w) * (d["d"] + 2) * 4,
        flags={"mask": "1: full attention, 2: causal"},
    ),
    "gemm_allgather": Signature(
        dims=("m", "n", "k", "bias"),
        inputs=(("x", "[M, K]"), ("w", "[K, N/n]"), ("bias", "[N/n]")),
        outputs=(("y", "[M, N]"),),
        weights=("w", "bias"),
        from_inputs=lambda s, w: {"m": s["x"][0], "k": s["x"][1], "n": s["w"][1] * w},
        input_shapes=lambda d, w: [(d["m"], d["k"]), (d["k"], d["n"] // w), (d["n"] // w,)],
        output_shapes=lambda d, w: [(d["m"], d["n"])],
        problems=lambda d, w: _not_divisible(d, w, ("n",)) + _one_of(d, "bias", (1, 2), "1 adds the bias"),
        symm_bytes=lambda d, w, e: d["m"] * (d["n"] // w) * w * e,
        flags={"bias": "1: Y_r = X @ W_r + bias_r, 2: Y_r = X @ W_r, the bias tensor passed but not added"},
        flag_args={"bias": "add_bias"},
    ),
    "reducescatter_rmsnorm": Signature(
        dims=("m", "n", "rmsnorm", "residual"),
        inputs=(("p", "[M, N]"), ("gamma", "[N]"), ("residual", "[M/n, N]")),
        outputs=(("y", "[M/n, N]"),),
        weights=("gamma",),
        from_inputs=lambda s, w: {"m": s["p"][0], "n": s["p"][1]},
        input_shapes=lambda d, w: [(d["m"], d["n"]), (d["n"],), (d["m"] // w, d["n"])],
        output_shapes=lambda d, w: [(d["m"] // w, d["n"])],
        problems=lambda d, w: (_one_of(d, "rmsnorm", (1, 2), "1 applies RMSNorm")
                               + _one_of(d, "residual", (1, 2), "1 adds the residual")
                               + _not_divisible(d, w, ("m",))),
        symm_bytes=lambda d, w, e: 2 * d["m"] * d["n"] * e,
        flags={"rmsnorm": "1: y = RMSNorm(h) * gamma (eps 1e-6), 2: y = h",
               "residual": "1: h = this rank's rows of the sum + residual, 2: h = the rows of the sum alone"},
        flag_args={"residual": "add_residual"},
    ),
    "ulysses_seq_to_head": _ulysses("x", "y"),
    "ulysses_head_to_seq": _ulysses("y", "x"),
    "moe_router_swiglu": Signature(
        dims=("t", "h", "f", "e", "k"),
        inputs=(("x", "[T, H]"), ("wg", "[H, E]"), ("w13", "[E/n, H, 2*F]"), ("w2", "[E/n, F, H]")),
        outputs=(("out", "[T, H]"),),
        weights=("wg", "w13", "w2"),
        from_inputs=lambda s, w: {"t": s["x"][0], "h": s["x"][1], "e": s["wg"][1], "f": s["w2"][1]},
        input_shapes=lambda d, w: [(d["t"], d["h"]), (d["h"], d["e"]), (d["e"] // w, d["h"], 2 * d["f"]),
                                   (d["e"] // w, d["f"], d["h"])],
        output_shapes=lambda d, w: [(d["t"], d["h"])],
        problems=_moe_router_problems,
        symm_bytes=_moe_symm,
        workspace_bytes=_moe_router_workspace,
        flags={"k": "experts per token (top-k, softmax over the k chosen logits)"},
    ),
    "tp_mlp": Signature(
        dims=("m", "h", "f", "act"),
        inputs=(("x", "[M/n, H]"), ("w1", "[H, F/n]"), ("w3", "[H, F/n]"), ("w2", "[F/n, H]")),
        outputs=(("y", "[M/n, H]"),),
        weights=("w1", "w3", "w2"),
        from_inputs=lambda s, w: {"m": s["x"][0] * w, "h": s["x"][1], "f": s["w1"][1] * w},
        input_shapes=lambda d, w: [(d["m"] // w, d["h"]), (d["h"], d["f"] // w), (d["h"], d["f"] // w),
                                   (d["f"] // w, d["h"])],
        output_shapes=lambda d, w: [(d["m"] // w, d["h"])],
        problems=lambda d, w: _not_divisible(d, w, ("m", "f")) + _one_of(d, "act", (1, 2, 3), "the activation"),
        symm_bytes=lambda d, w, e: 3 * d["m"] * d["h"] * e,  # GATHER, STAGE and RECV: M x H each
        workspace_bytes=lambda d, w, e: d["m"] * (d["f"] // w) * e,  # U = act(X @ w1), [M, F/n]
        flags={"act": "1: GELU (tanh), 2: SiLU, 3: SwiGLU, silu(X @ w1) * (X @ w3) (w3 is read only then)"},
    ),
}


def dims_of(sig: Signature, shapes: Sequence[Shape], world: int, flags: Mapping[str, int],
            fixed: Mapping[str, int]) -> Dims:
    """The global dims of one call, checked: ValueError naming the mismatch when the input shapes
    do not fit together (or the world size), so a wrong call fails before any kernel runs."""
    names = [n for n, _ in sig.inputs]
    if len(shapes) != len(names):
        raise ValueError(f"expected {len(names)} inputs ({', '.join(names)}), got {len(shapes)}")
    if world < 1:
        raise ValueError(f"world size must be at least 1, got {world}")
    by_name = {n: tuple(int(x) for x in s) for n, s in zip(names, shapes)}
    for (name, words), shape in zip(sig.inputs, shapes):
        if len(shape) != words.count(",") + 1:
            raise ValueError(f"input {name} must be {words}, got a tensor of shape {list(shape)}")
    dims = dict(sig.from_inputs(by_name, world))
    dims.update({k: int(v) for k, v in flags.items()})
    dims.update({k: int(v) for k, v in fixed.items() if k not in dims})
    missing = [k for k in sig.dims if k not in dims]
    if missing:
        raise ValueError(f"dims {missing} are neither in the input shapes nor given")
    problems = [f"{k}={dims[k]} must be positive" for k in sig.dims if dims[k] <= 0] or sig.problems(dims, world)
    want = sig.input_shapes(dims, world)
    problems += [f"input {n} must be {words} = {list(exp)} for these dims, got {list(by_name[n])}"
                 for (n, words), exp in zip(sig.inputs, want) if tuple(exp) != by_name[n]]
    if problems:
        raise ValueError("; ".join(problems))
    return dims
