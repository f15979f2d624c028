"""A reference run: ``python -m evaluator.reference_worker JOB``.

Imports torch once, then forks one process per rank (cheaper than importing torch per rank on
a 2-core machine); JOB may list several runs (world sizes, specs), forked in turn after that one
import. Each rank builds its inputs with the spec's input builder, runs the spec's torch +
torch.distributed reference on gloo, and writes inputs and outputs as raw little-endian
bytes plus a JSON index. Runs in its own process, apart from any candidate.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def load_callable(ref: str, search_path: list[str]):
    for p in reversed(search_path):
        if p not in sys.path:
            sys.path.insert(0, p)
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _save(tensor, path: Path) -> dict:
    t = tensor.detach().contiguous().cpu()
    t.reshape(-1).view(__import__("torch").uint8).numpy().tofile(path)
    return {"file": path.name, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "nbytes": t.numel() * t.element_size()}


def _own_error(reference, inputs: dict, outputs: dict, dims: dict, group) -> tuple[dict, dict]:
    """How far the reference's own outputs are from a float64 run of it on the same inputs, per
    output: the 99.9th percentile of the relative error where |value| > 0.1 RMS, of the absolute
    error below, and the RMS (evaluator/tolerance.py turns them into tolerances); and the float64
    outputs themselves (a candidate within tolerance of them is right even where the reference's
    own rounding strays further). ({}, {}) when the reference cannot run in float64."""
    import torch

    wide = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in inputs.items()}
    try:
        exact = reference(wide, dims, group)
    except Exception:  # noqa: BLE001 -- a reference that only runs in its dtype gets no calibration
        return {}, {}
    out, kept = {}, {}
    for name, low in outputs.items():
        hi = exact.get(name) if isinstance(exact, dict) else None
        if not (torch.is_tensor(low) and torch.is_tensor(hi)) or hi.shape != low.shape or not low.numel():
            continue
        hi, err = hi.double(), (low.double() - hi.double()).abs()
        rms = float(hi.pow(2).mean().sqrt())
        big = hi.abs() > 0.1 * rms
        q = lambda t: float(torch.quantile(t.flatten()[:1 << 24], 0.999)) if t.numel() else 0.0  # noqa: E731
        out[name] = {"rel": q(err[big] / hi.abs()[big]), "abs": q(err[~big]), "rms": rms}
        kept[name] = hi.float()  # float32 keeps the float64 result far inside any dtype's tolerance
    return out, kept


def _copies(inputs: dict) -> dict:
    return {k: v.clone() if hasattr(v, "clone") else v for k, v in inputs.items()}


def run(job: dict, rank: int) -> None:
    import torch
    import torch.distributed as dist

    world = job["world"]
    dist.init_process_group("gloo", init_method=f"file://{job['init_file']}", rank=rank, world_size=world)
    try:
        make_inputs = load_callable(job["inputs"], job["search_path"])
        reference = load_callable(job["reference"], job["search_path"])
        dtype = getattr(torch, TORCH_DTYPES[job["dtype"]])
        index = []
        for case in job["cases"]:
            for trial, seed in enumerate(job["seeds"]):
                gen = torch.Generator().manual_seed(seed * 1009 + rank)
                inputs = make_inputs(dict(case["dims"]), rank, world, dtype, gen)
                # the reference gets copies: one that works in place (dist.all_reduce(x)) must not
                # change the inputs saved for candidates, nor those of its own float64 run
                outputs = reference(_copies(inputs), dict(case["dims"]), dist.group.WORLD)
                errors, exact = _own_error(reference, inputs, outputs, dict(case["dims"]), dist.group.WORLD)
                for name in job.get("optional_inputs", ()):  # left out: read only by a flag that is off
                    inputs.setdefault(name, torch.empty(0, dtype=dtype))
                folder = Path(job["out_dir"]) / f"{case['name']}" / f"t{trial}"
                folder.mkdir(parents=True, exist_ok=True)
                index.append({
                    "case": case["name"], "trial": trial, "rank": rank,
                    "inputs": {k: _save(v, folder / f"r{rank}_in_{k}.bin") for k, v in inputs.items()},
                    "outputs": {k: _save(v, folder / f"r{rank}_out_{k}.bin") for k, v in outputs.items()},
                    "errors": errors,
                    "exact": {k: _save(v, folder / f"r{rank}_exact_{k}.bin") for k, v in exact.items()},
                    "folder": str(folder.relative_to(job["out_dir"])),
                })
        (Path(job["out_dir"]) / f"index_r{rank}.json").write_text(json.dumps(index))
    finally:
        dist.destroy_process_group()


def fork_ranks(job: dict, run_rank) -> int:
    """Fork ``job["world"]`` ranks each running ``run_rank(job, rank)`` (torch is imported first, so
    every rank shares it); the exit status is non-zero when any rank failed."""
    import traceback

    import torch  # noqa: F401

    pids = []
    for rank in range(job["world"]):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                run_rank(job, rank)
            except BaseException:  # report everything the user's code raises, then exit
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        pids.append(pid)
    failed = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        failed |= status != 0
    return 1 if failed else 0


def run_jobs(jobs, run_rank) -> int:
    """``fork_ranks`` for one job or each of a list in turn, torch imported once for all of them;
    stops at the first that fails (the caller tells which from the outputs each left)."""
    for job in jobs if isinstance(jobs, list) else [jobs]:
        if fork_ranks(job, run_rank):
            return 1
    return 0


def main(jobs) -> int:
    return run_jobs(jobs, run)


if __name__ == "__main__":
    sys.exit(main(json.loads(Path(sys.argv[1]).read_text())))
