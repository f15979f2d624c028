"""Check the exported op against the spec's torch reference (reference.py) on real GPUs:

    torchrun --nproc-per-node N check.py [--shapes emulation|sweep|NAME[,NAME...]] [--trials 2]

Each process takes GPU LOCAL_RANK. Every trial draws fresh inputs with the reference's
``make_inputs`` (seeded per rank and trial), runs the reference on a gloo group over CPU copies
and the op on the NCCL group, twice (the second call catches state that does not survive a
call), and compares every element within the spec's tolerance. Shapes change between trials, so
the communicator's reset between shapes is exercised too. Exit status 0 when every rank matched.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

HERE = Path(__file__).resolve().parent
MANIFEST = json.loads((HERE / "manifest.json").read_text())


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="emulation", help="emulation, sweep, or shape names (comma-separated)")
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def _shapes(config: dict, which: str) -> list:
    every = config["shapes"]["emulation"] + config["shapes"]["sweep"]
    if which in ("emulation", "sweep"):
        return config["shapes"][which]
    names = which.split(",")
    unknown = [n for n in names if n not in {s["name"] for s in every}]
    if unknown:
        sys.exit(f"check.py: unknown shape(s) {unknown}; known: {[s['name'] for s in every]}")
    return [s for s in every if s["name"] in names]


def _dims(shape: dict, world: int):
    """The shape's dims at ``world`` ranks (None: a dim grows with the world and the spec named no
    value for this one)."""
    if "dims_by_world" in shape:
        return shape["dims_by_world"].get(str(world))
    return dict(shape["dims"])


def _compare(got: torch.Tensor, want: torch.Tensor, tol: dict) -> tuple:
    got, want = got.detach().float().cpu(), want.detach().float()
    if got.shape != want.shape:
        return False, f"shape {list(got.shape)} != reference {list(want.shape)}"
    diff = (got - want).abs()
    bad = ~(diff <= tol["atol"] + tol["rtol"] * want.abs())  # NaN (an element never written) is bad too
    err = float(diff[~torch.isnan(diff)].max()) if diff.numel() and (~torch.isnan(diff)).any() else 0.0
    return not bool(bad.any()), f"max |err| {err:.3g}, {int(bad.sum())} of {bad.numel()} elements off"


def _one_shape(pkg, ref, shape: dict, trial: int, seed: int, gloo) -> tuple:
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = pkg.op.TORCH_DTYPES[pkg.op.native.built_dtype()]
    gen = torch.Generator().manual_seed((seed * 1009 + trial) * 1009 + rank)
    dims = _dims(shape, world)
    inputs = ref.make_inputs(dict(dims), rank, world, dtype, gen)
    want = ref.reference({k: v.clone() for k, v in inputs.items()}, dict(dims), gloo)
    device = torch.device("cuda", torch.cuda.current_device())
    args = [inputs[n].to(device) for n in pkg.INPUTS]
    notes = []
    for call in range(2):
        got = pkg.run(*args, **{a: dims[d] for a, d in zip(pkg.FLAGS, pkg.op.FLAG_DIMS)})
        got = got if isinstance(got, tuple) else (got,)
        torch.cuda.synchronize(device)
        for name, g in zip(pkg.OUTPUTS, got):
            ok, note = _compare(g, want[name], pkg.CONFIG["tolerance"])
            notes.append(f"call {call + 1} {name}: {note}")
            if not ok:
                return False, notes
    return True, notes


def main() -> int:
    args = _args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    gloo = dist.new_group(backend="gloo")  # the reference runs on CPU tensors, as cuco runs it
    sys.path.insert(0, str(HERE))
    pkg = importlib.import_module(MANIFEST["package"])
    try:
        ref = importlib.import_module("reference")
    except ImportError as e:
        sys.exit(f"check.py: cannot import the spec's reference.py ({e}); it may need packages of its own")
    rank, world = dist.get_rank(), dist.get_world_size()
    sig = pkg.op.SIG
    every_ok = True
    for trial in range(args.trials):
        for shape in _shapes(pkg.CONFIG, args.shapes):
            dims = _dims(shape, world)
            problems = (["its dims grow with the world size and the spec gives no value at this world"]
                        if dims is None else sig.problems(dims, world))
            if problems:
                if rank == 0 and trial == 0:
                    print(f"skip {shape['name']} at world {world}: {'; '.join(problems)}", flush=True)
                continue
            ok, notes = _one_shape(pkg, ref, shape, trial, args.seed, gloo)
            print(f"rank {rank}/{world} {shape['name']} trial {trial}: {'ok' if ok else 'WRONG'} ({notes[-1]})",
                  flush=True)
            flag = torch.tensor([0 if ok else 1])
            dist.all_reduce(flag, group=gloo)  # every rank stops together: no rank waits on one that gave up
            every_ok = every_ok and int(flag) == 0
            if not every_ok:
                break
        if not every_ok:
            break
    errors = pkg.close()
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    if rank == 0:
        print("check: " + ("every rank matched the reference" if every_ok and not errors else
                           f"FAILED{' (teardown: ' + '; '.join(errors) + ')' if errors else ''}"), flush=True)
    return 0 if every_ok and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
