"""The semantic probe's ranks: ``python -m cuco.semantic_probe JOB`` (forked per rank on gloo).

Each rank builds the user's inputs and runs the user's workload, then, for each family asked
about, reads the inputs as the family's (family_signatures.fit) and runs the family's canonical
reference on those very tensors, in every variant of the family's flags (a norm on or off, a
causal or full mask). Rank 0 writes what matched, and for what did not, why: shapes that fit no
dims, or outputs that differ (with the common reasons tried: an activation after the result, a
transposed output, a sum where the family means, or the reverse). A family whose reference names
an ``OPTIONAL_BATCH_DIM`` also takes tensors without that leading axis, as batch 1; weights may be
read transposed or two of them as one (cuco/tensor_readings.py). Runs the
user's own code, never a candidate's.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path

from cuco import family_signatures as fs
from cuco import tensor_readings as tr
from cuco import workload_forms
from evaluator.reference_worker import run_jobs


def _family_module(path: str):
    spec = importlib.util.spec_from_file_location(f"cuco_family_{Path(path).parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outputs_close(a, b, torch) -> bool:
    if not (hasattr(a, "shape") and hasattr(b, "shape")) or tuple(a.shape) != tuple(b.shape):
        return False
    a, b = a.double(), b.double()
    scale = float(b.abs().max()) if b.numel() else 0.0
    low = a.dtype != torch.float64 and (a.element_size() <= 2)
    return bool(torch.allclose(a, b, rtol=5e-2 if low else 2e-2, atol=(5e-2 if low else 2e-2) * max(scale, 1e-6)))


def _agree(flag: bool, torch, dist) -> bool:
    t = torch.tensor([1 if flag else 0], dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def _why_outputs(user, fam, world: int, torch) -> str:
    if len(user) != len(fam):
        return f"the reference returns {len(user)} output(s), the family {len(fam)}"
    for u, f in zip(user, fam):
        if tuple(u.shape) != tuple(f.shape):
            if u.dim() == 2 and tuple(u.shape) == tuple(f.shape[::-1]) and outputs_close(u.t(), f.to(u.dtype), torch):
                return f"the output is the family's transposed ({list(u.shape)} vs {list(f.shape)})"
            return f"an output shaped {list(u.shape)} where the family gives {list(f.shape)} (a different sharding)"
        f = f.to(torch.float64)
        tried = {"a ReLU": torch.relu(f), "a SiLU": torch.nn.functional.silu(f),
                 "a GELU": torch.nn.functional.gelu(f), "a tanh-GELU": torch.nn.functional.gelu(f, approximate="tanh")}
        for name, g in tried.items():
            if outputs_close(u, g, torch):
                return (f"the reference applies {name} to the family's result: an epilogue the family does not "
                        "compute (drop it from the reference, or pick a family with that epilogue)")
        for name, g in ((f"the family's result times the world size {world}", f * world),
                        (f"the family's result divided by the world size {world}", f / world)):
            if outputs_close(u, g, torch):
                return f"the reference returns {name} (a sum where it means, or a mean where it sums)"
    err = max(float((u.double() - f.double()).abs().max()) for u, f in zip(user, fam) if u.shape == f.shape)
    return f"the outputs differ from the family's (max abs error {err:.3g}): the reference computes something else"


def _copy(x):
    return x.clone() if hasattr(x, "clone") else x


def _variants(flags: dict) -> list[dict]:
    names = sorted(flags)
    return [dict(zip(names, combo)) for combo in itertools.product(*(flags[n] for n in names))] or [{}]


def _try_family(entry: dict, user_in: list, user_out: list, world: int, rank: int, torch, dist) -> dict:
    canon = _family_module(entry["reference_path"])
    gen = torch.Generator().manual_seed(4321 + rank)

    def build(dims):
        return canon.make_inputs(dict(dims), rank, world, torch.float32, gen)

    sig = fs.infer_signature(entry["name"], build, entry["base"], list(entry["base"]), world)
    shapes = [tuple(x.shape) if hasattr(x, "shape") else None for x in user_in]
    kinds = [fs.kind_of(x) for x in user_in]
    found_readings = tr.readings(sig, shapes, kinds, getattr(canon, "OPTIONAL_BATCH_DIM", None))
    if not found_readings:
        return {"status": "no_fit", "why": fs.mismatches(sig, shapes), "distance": fs.distance(sig, shapes)}
    first = None
    for reading in found_readings:
        found = _try_reading(entry, (canon, sig, build, shapes), reading.fit, reading.batch,
                             tr.as_read(user_in, reading), user_out, world, torch, dist)
        if found["status"] == "match":
            return {**found, "transposed": list(reading.flipped), "merged": list(reading.merged)}
        if reading.said():
            found = {**found, "why": [f"with {reading.said()}, {w}" for w in found["why"]]}
        first = first or found  # the plainest reading's reason is the one to give
    return first


def _try_reading(entry: dict, family: tuple, fitted, batch, user_in: list, user_out: list, world: int, torch,
                 dist) -> dict:
    """One reading of the user's tensors (``user_in`` as read: transposed, batched) in every variant
    of the family's flags; ``family`` is (canonical module, signature, input builder, user shapes)."""
    canon, sig, build, shapes = family
    last = ""
    for variant in _variants({d: v for d, v in entry["flags"].items() if d not in sig.sizes}):
        dims = {**entry["base"], **fitted.dims, **variant}
        filler = build(dims)
        named = {s.name: (_copy(user_in[u]) if u is not None else filler[s.name])
                 for s, u in zip(sig.inputs, fitted.order)}
        fam_out = workload_forms.as_list(canon.reference(named, dict(dims), dist.group.WORLD))
        if batch is not None:
            fam_out = [f.squeeze(0) if hasattr(f, "shape") else f for f in fam_out]
        ok = len(fam_out) == len(user_out) and all(outputs_close(u, f.to(u.dtype) if hasattr(u, "dtype") else f, torch)
                                                   for u, f in zip(user_out, fam_out))
        if _agree(ok, torch, dist):
            # an unbatched workload pins the batch to 1 like a flag (the emulation shapes keep it)
            return {"status": "match", "dims": {k: int(v) for k, v in dims.items()}, "order": list(fitted.order),
                    "variant": {**variant, **({batch: 1} if batch else {})}, "extra": list(fitted.extra),
                    "unbatched": batch is not None}
        last = _why_outputs(user_out, fam_out, world, torch)
    if fitted.extra:  # tensors the family has no use for, and outputs that differ: no nearer than no fit
        return {"status": "no_fit", "distance": fs.distance(sig, shapes),
                "why": [f"{len(fitted.extra)} input(s) more than {entry['name']} takes, and {last}"]}
    return {"status": "differs", "dims": {k: int(v) for k, v in {**entry["base"], **fitted.dims}.items()},
            "why": [last]}


def run(job: dict, rank: int) -> None:
    import torch
    import torch.distributed as dist

    world = job["world"]
    dist.init_process_group("gloo", init_method=f"file://{job['init_file']}", rank=rank, world_size=world)
    try:
        dtype = getattr(torch, job.get("dtype", "float32"))
        wl = workload_forms.load(Path(job["path"]), reference=job.get("reference"), inputs=job.get("inputs"),
                                 dims=job.get("native_dims"), dtype=dtype)
        torch.manual_seed(1234 + rank)
        user_in = wl.build(rank, world, torch.Generator().manual_seed(1234 + rank))
        # the user's code gets copies: one working in place must leave the tensors families read intact
        user_out = wl.call([_copy(x) for x in user_in], dist.group.WORLD)
        report = {"form": wl.form, "inputs": workload_forms.describe(user_in),
                  "outputs": workload_forms.describe(user_out), "input_names": list(wl.input_names), "families": {},
                  # the constructor's int arguments (sizes cuco may resize: cuco/workload_sizes.py)
                  "init_args": [v if type(v) is int else None for v in wl.init_args]}
        for entry in job["families"]:
            try:
                report["families"][entry["name"]] = _try_family(entry, user_in, user_out, world, rank, torch, dist)
            except Exception as e:  # noqa: BLE001 -- the family's reference refused the user's tensors
                report["families"][entry["name"]] = {"status": "differs",
                                                     "why": [f"the family's reference fails on these inputs: {e}"]}
        if rank == 0:
            Path(job["out"]).write_text(json.dumps(report))
    finally:
        dist.destroy_process_group()


def main(jobs) -> int:
    return run_jobs(jobs, run)


if __name__ == "__main__":
    sys.exit(main(json.loads(Path(sys.argv[1]).read_text())))
