"""The PyTorch custom op ``<namespace>::run`` and its fake kernel (so torch.compile and
torch.export trace it without running it).

Schema: the pattern's input tensors (this rank's shards), its integer flags (named after the dims
they set, unless an input has that name: ``signature.Signature.flag_args``), the world size and the
process group's name; it returns this rank's output(s). The fake kernel derives the output shapes
from the input shapes and the world size; the real one checks them the same way, sets up (once)
the communicator of the group on the inputs' GPU and calls the kernel on the current stream.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import torch

from . import native, signature

CONFIG = native.CONFIG
NAMESPACE = CONFIG["namespace"]
SIG = signature.SIGNATURES[CONFIG["pattern"]]
INPUTS: Tuple[str, ...] = tuple(n for n, _ in SIG.inputs)
OUTPUTS: Tuple[str, ...] = tuple(n for n, _ in SIG.outputs)
FLAG_DIMS: Tuple[str, ...] = tuple(SIG.flags)  # the dims the flags set, in argument order
FLAGS: Tuple[str, ...] = tuple(SIG.flag_arg(d) for d in FLAG_DIMS)  # their argument names
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _schema() -> str:
    args = [f"Tensor {n}" for n in INPUTS] + [f"int {f}" for f in FLAGS] + ["int world", "str group_name"]
    outs = "Tensor" if len(OUTPUTS) == 1 else "(" + ", ".join("Tensor" for _ in OUTPUTS) + ")"
    return f"({', '.join(args)}) -> {outs}"


def _split(args: Sequence) -> Tuple[Sequence[torch.Tensor], dict, int, str]:
    n, f = len(INPUTS), len(FLAGS)
    return args[:n], dict(zip(FLAG_DIMS, args[n:n + f])), int(args[n + f]), str(args[n + f + 1])


def _plan(tensors: Sequence[torch.Tensor], flags: dict, world: int) -> Tuple[dict, List[Tuple[int, ...]]]:
    """(dims, output shapes); ValueError naming the problem when the inputs do not fit together."""
    dtype = tensors[0].dtype
    odd = [f"{n} is {t.dtype}" for n, t in zip(INPUTS, tensors) if t.dtype != dtype]
    if odd:
        raise ValueError(f"{NAMESPACE}::run: every input must have {INPUTS[0]}'s dtype {dtype}: {', '.join(odd)}")
    try:
        dims = signature.dims_of(SIG, [tuple(t.shape) for t in tensors], world, flags, CONFIG["fixed"])
    except ValueError as e:
        raise ValueError(f"{NAMESPACE}::run: {e}") from None
    return dims, [tuple(s) for s in SIG.output_shapes(dims, world)]


def _real(*args):
    tensors, flags, world, group_name = _split(args)
    dims, shapes = _plan(tensors, flags, world)
    device = tensors[0].device
    if device.type != "cuda" or any(t.device != device for t in tensors):
        raise ValueError(f"{NAMESPACE}::run: every input must be on the same CUDA device")
    built = native.built_dtype()
    if tensors[0].dtype != TORCH_DTYPES[built]:
        raise ValueError(f"{NAMESPACE}::run: the library was built for {built}, the inputs are {tensors[0].dtype} "
                         "(rebuild with DTYPE=... ./build.sh)")
    comm = native.communicator(group_name, device)
    if comm.world != world:
        raise ValueError(f"{NAMESPACE}::run: world={world} but group {group_name!r} has {comm.world} ranks")
    esize = tensors[0].element_size()
    symm = SIG.symm_bytes(dims, world, esize)
    comm.ensure(symm)
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device)
        ins = [t.contiguous() for t in tensors]
        outs = [torch.empty(s, dtype=tensors[0].dtype, device=device) for s in shapes]
        workspace = torch.empty(max(1 << 16, SIG.workspace_bytes(dims, world, esize)), dtype=torch.uint8,
                                device=device)
        comm.run([dims[k] for k in SIG.dims], ins, outs, workspace, symm, stream.cuda_stream)
    return outs[0] if len(outs) == 1 else tuple(outs)


OP = torch.library.custom_op(f"{NAMESPACE}::run", _real, mutates_args=(), schema=_schema())


@OP.register_fake
def _fake(*args):
    tensors, flags, world, _ = _split(args)
    _, shapes = _plan(tensors, flags, world)
    outs = [tensors[0].new_empty(s) for s in shapes]
    return outs[0] if len(outs) == 1 else tuple(outs)


def run(*inputs: torch.Tensor, group=None, **flags: int):
    """This rank's output(s) of the exported kernel over ``group`` (default: the world group).
    ``inputs``: this rank's tensors in the order of ``INPUTS``; ``flags``: the pattern's integer
    flags by argument name (``FLAGS``), defaulting to the spec's headline shape. Collective: every
    rank of the group calls it with the same shapes, in the same order."""
    import torch.distributed as dist

    unknown = sorted(set(flags) - set(FLAGS))
    if unknown:
        raise TypeError(f"unknown flag(s) {unknown}; this op takes {list(FLAGS) or 'none'}")
    group = group if group is not None else dist.group.WORLD
    values = [int(flags.get(a, CONFIG["flags"][d])) for a, d in zip(FLAGS, FLAG_DIMS)]
    return getattr(torch.ops, NAMESPACE).run(*inputs, *values, dist.get_world_size(group), group.group_name)


def close(group=None) -> List[str]:
    """Tear down the communicators this process made (of ``group``, or all); collective. Call it
    before ``torch.distributed.destroy_process_group()``. Returns the teardown errors."""
    return native.close(group)
