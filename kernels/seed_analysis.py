"""What a user's program communicates, read from its source: the torch.distributed calls of a
Python reference (``ast``) or the NCCL host collectives, kernel launches, cuBLAS calls and
streams of a host-driven ``.cu`` (a comment-aware scan). ``choose_pattern`` maps what was found
to a registered fusion pattern. Pure: reads strings, returns frozen values."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional

from design_space.errors import SpecError
from design_space.patterns import get_pattern, pattern_names

# Collective kind -> the patterns whose workload it is. Point-to-point is shared by several;
# words in the source decide among them (see _HINTS).
PATTERNS_BY_KIND: dict[str, tuple[str, ...]] = {
    "allgather": ("allgather_gemm",),
    "reducescatter": ("gemm_reducescatter",),
    "allreduce": ("gemm_allreduce",),
    "alltoall": ("moe_dispatch_combine",),
    "p2p": ("ring_attention", "kv_cache_transfer", "moe_dispatch_combine"),
}
# Whole words (identifiers split at '_' and camelCase) that mark a point-to-point workload.
_HINTS: dict[str, frozenset[str]] = {
    "ring_attention": frozenset({"attention", "attn", "softmax", "logsumexp", "lse", "flash", "sdpa"}),
    "kv_cache_transfer": frozenset({"cache", "kvcache", "prefill", "paged"}),
    "moe_dispatch_combine": frozenset({"expert", "experts", "moe", "dispatch", "combine", "routing", "router"}),
}
_TORCH_KINDS = (("all_gather", "allgather"), ("reduce_scatter", "reducescatter"), ("all_reduce", "allreduce"),
                ("all_to_all", "alltoall"), ("batch_isend_irecv", "p2p"), ("isend", "p2p"), ("irecv", "p2p"),
                ("send", "p2p"), ("recv", "p2p"), ("P2POp", "p2p"))
_NCCL_KINDS = {"ncclAllGather": "allgather", "ncclReduceScatter": "reducescatter", "ncclAllReduce": "allreduce",
               "ncclAlltoAll": "alltoall", "ncclAllToAll": "alltoall", "ncclAlltoAllv": "alltoall",
               "ncclSend": "p2p", "ncclRecv": "p2p", "ncclBroadcast": "broadcast", "ncclReduce": "reduce",
               "ncclBcast": "broadcast"}


@dataclass(frozen=True)
class CommCall:
    """One communication call found in a source: the name as written, its kind, its line."""

    name: str
    kind: str  # allgather | reducescatter | allreduce | alltoall | p2p | broadcast | reduce
    line: int


def torch_kind(op: str) -> Optional[str]:
    bare = op.lstrip("_")
    for prefix, kind in _TORCH_KINDS:
        if bare == prefix or (prefix.startswith("all_") or prefix == "reduce_scatter") and bare.startswith(prefix):
            return kind
    return None


# ---------------------------------------------------------------- Python reference (ast)

def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted module/object it stands for (only what can reach torch)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    names[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(node: ast.AST, aliases: dict[str, str]) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([aliases.get(node.id, node.id), *reversed(parts)])


def _reachable(tree: ast.Module, func: str) -> list[ast.AST]:
    """``func`` and the module-level functions it names, transitively (helpers count too)."""
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    seen, todo = [], [func]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.append(name)
        todo += [n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name) and n.id in defs]
    return [defs[n] for n in seen]


def reference_calls(source: str, func: str) -> tuple[CommCall, ...]:
    """torch.distributed communication used by ``func`` (and the helpers it calls)."""
    tree = ast.parse(source)
    aliases = _aliases(tree)
    calls = []
    for scope in _reachable(tree, func):
        for node in ast.walk(scope):
            if not isinstance(node, (ast.Attribute, ast.Name)):
                continue
            dotted = _dotted(node, aliases)
            if not dotted or not dotted.startswith("torch.distributed."):
                continue
            op = dotted.rsplit(".", 1)[1]
            kind = torch_kind(op)
            if kind:
                calls.append(CommCall(op, kind, node.lineno))
    return tuple(sorted(set(calls), key=lambda c: (c.line, c.name)))


def function_arity(source: str) -> dict[str, tuple[int, int]]:
    """Module-level function name -> (required positional args, max positional args or -1 for *args)."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = len(a.posonlyargs) + len(a.args)
            out[node.name] = (positional - len(a.defaults), -1 if a.vararg else positional)
    return out


# ---------------------------------------------------------------- host-driven .cu (scan)

@dataclass(frozen=True)
class Step:
    """One operation of the host program, in source order."""

    kind: str  # "collective" | "kernel" | "cublas"
    name: str
    line: int
    stream: Optional[str]
    comm: Optional[str] = None  # collective kind for "collective" steps
    grouped: bool = False  # inside ncclGroupStart/End


@dataclass(frozen=True)
class SeedAnalysis:
    path: str
    steps: tuple[Step, ...]
    kernels_defined: tuple[str, ...]
    cublas_calls: tuple[str, ...]  # every distinct cuBLAS function called (setup included)
    streams: tuple[str, ...]  # streams the steps run on or the program creates

    @property
    def collectives(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.kind == "collective")

    @property
    def kernels_launched(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.name for s in self.steps if s.kind == "kernel"))

    def comm_calls(self) -> tuple[CommCall, ...]:
        return tuple(CommCall(s.name, s.comm or "", s.line) for s in self.collectives)

    def summary_lines(self) -> list[str]:
        def where(s: Step) -> str:
            return f"line {s.line}" + (f", stream {s.stream}" if s.stream else "") + (", grouped" if s.grouped else "")
        coll = "; ".join(f"{s.name} ({where(s)})" for s in self.collectives) or "none"
        kern = "; ".join(f"{s.name} ({where(s)})" for s in self.steps if s.kind == "kernel") or "none"
        return [f"collectives in order: {coll}",
                f"kernels launched: {kern}" + (f" (defined here: {', '.join(self.kernels_defined)})"
                                               if self.kernels_defined else ""),
                f"cuBLAS calls: {', '.join(self.cublas_calls) or 'none'}",
                f"streams: {', '.join(self.streams) or 'default stream only'}",
                "order: " + (" -> ".join(s.name for s in self.steps) or "(nothing found)")]


def strip_comments(src: str) -> str:
    """Comments blanked out (newlines kept, so line numbers stay); string literals untouched."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in src[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _args(code: str, open_at: int, close: str = ")") -> list[str]:
    """Top-level comma-separated arguments starting after the bracket at ``open_at``."""
    depth, start, args = 0, open_at + 1, []
    for j in range(open_at + 1, len(code)):
        ch = code[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth > 0:
            depth -= 1
        elif depth == 0 and (ch == "," or code.startswith(close, j)):
            args.append(code[start:j].strip())
            start = j + 1
            if ch != ",":
                return args
    return args


_CALL = re.compile(r"\b(nccl[A-Z]\w*|cublas\w*)\s*\(")
_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;()]*>)?\s*<<<")
_LAUNCH_API = re.compile(r"\bcudaLaunch\w*Kernel\w*\s*\(\s*(?:\([^()]*\)\s*)?&?\s*([A-Za-z_]\w*)")
_GLOBAL = re.compile(r"__global__\s+(?:[\w:<>,]+\s+)*?([A-Za-z_]\w*)\s*\(")
_STREAM_CREATE = re.compile(r"\bcudaStreamCreate\w*\s*\(\s*&\s*([\w.\[\]>-]+)")
_GEMM_WORDS = re.compile(r"gemm|matmul|gemv", re.I)


def analyse_seed(source: str, path: str = "seed.cu") -> SeedAnalysis:
    code = strip_comments(source)
    line = lambda pos: code.count("\n", 0, pos) + 1  # noqa: E731
    events: list[tuple[int, Step]] = []
    cublas: list[str] = []
    group_marks = [(m.start(), +1 if m.group(1) == "Start" else -1)
                   for m in re.finditer(r"\bncclGroup(Start|End)\s*\(", code)]
    for m in _CALL.finditer(code):
        name = m.group(1)
        if name.startswith("cublas"):
            cublas.append(name)
            if _GEMM_WORDS.search(name):
                events.append((m.start(), Step("cublas", name, line(m.start()), None)))
        elif name in _NCCL_KINDS:
            args = _args(code, m.end() - 1)
            depth = sum(d for pos, d in group_marks if pos < m.start())
            events.append((m.start(), Step("collective", name, line(m.start()), args[-1] if args else None,
                                           _NCCL_KINDS[name], depth > 0)))
    for m in _LAUNCH.finditer(code):
        config = _args(code, m.end() - 1, ">>>")
        events.append((m.start(), Step("kernel", m.group(1), line(m.start()),
                                       config[3] if len(config) > 3 else None)))
    for m in _LAUNCH_API.finditer(code):
        args = _args(code, code.index("(", m.start()))
        events.append((m.start(), Step("kernel", m.group(1), line(m.start()), args[-1] if len(args) > 5 else None)))
    steps = tuple(s for _, s in sorted(events, key=lambda e: e[0]))
    streams = [m.group(1) for m in _STREAM_CREATE.finditer(code)] + [s.stream for s in steps if s.stream]
    return SeedAnalysis(path=path, steps=steps,
                        kernels_defined=tuple(dict.fromkeys(m.group(1) for m in _GLOBAL.finditer(code))),
                        cublas_calls=tuple(dict.fromkeys(cublas)),
                        streams=tuple(dict.fromkeys(s for s in streams if s not in ("0", "NULL", "nullptr"))))


# ---------------------------------------------------------------- pattern choice

def _fix() -> str:
    return f"pass --pattern with one of: {', '.join(pattern_names())}"


def choose_pattern(calls: tuple[CommCall, ...], text: str, what: str, override: Optional[str] = None) -> tuple[str, str]:
    """(pattern name, why) for the communication ``calls`` found in ``what``; ``override`` wins.
    Raises ``SpecError`` naming --pattern and the registered patterns when nothing or more than
    one pattern fits, or when the fitting pattern is not registered."""
    if override is not None:
        return get_pattern(override).name, "chosen with --pattern"
    kinds = list(dict.fromkeys(c.kind for c in calls))
    names = ", ".join(dict.fromkeys(c.name for c in calls))
    if not kinds:
        raise SpecError(f"found no collective or point-to-point call in {what}", _fix())
    if "alltoall" in kinds:  # all-to-all marks MoE even beside gathers of routing counts
        kinds = ["alltoall"]
    known = [k for k in kinds if k in PATTERNS_BY_KIND]
    if len(known) != 1:
        raise SpecError(f"{what} communicates with {names}: no single fusion pattern fits "
                        f"({'kinds ' + ', '.join(kinds)})", _fix())
    candidates = PATTERNS_BY_KIND[known[0]]
    if len(candidates) > 1:
        words = {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", text)}
        hit = [p for p in candidates if words & _HINTS.get(p, frozenset())]
        if len(hit) != 1:
            raise SpecError(f"{what} uses point-to-point calls ({names}), which fit "
                            f"{' or '.join(hit or candidates)}; cannot tell which", _fix())
        candidates = tuple(hit)
    chosen = candidates[0]
    if chosen not in pattern_names():
        raise SpecError(f"{what} uses {names}, the workload of pattern {chosen}, which is not registered", _fix())
    return chosen, f"from {names}"
