"""Multi-GPU ranks: this process is rank r on GPU r of an NCCL process group (127.0.0.1).
Inputs from the spec's builder (fresh seed per trial, per rank), the reference on the NCCL group
(and again in float64, as the CPU tier keeps it) moved to host memory BEFORE the candidate is set up; backend ``symm`` (torch SymmetricMemory)
or ``nccl`` (the candidate's own communicator through the host helper), torn down at the end,
on failure paths too."""

from __future__ import annotations

import datetime
import traceback
from pathlib import Path

from evaluator.gpu import worker as w
from evaluator.gpu.native import CandidateLib, NcclHelper
from evaluator.gpu.rank_memory import nccl_memory, symm_memory
from evaluator.gpu.rank_runner import Runner, timed_callable
from evaluator.gpu.worker_bench import record, rotation_count
from evaluator.gpu.worker_virtual import env_info
from evaluator.reference_worker import TORCH_DTYPES, load_callable


def run_rank(job: dict, rank: int, out_dir: Path) -> int:
    import torch.distributed as dist

    result = w.new_result()
    mem = None
    try:
        mem = _run(job, rank, result)
    except Exception as e:  # noqa: BLE001
        w.fail(result, "error", f"rank {rank}: {type(e).__name__}: {str(e)[:300]}")
        result["log"].append(traceback.format_exc())
    finally:
        w.write_json(out_dir / f"result_r{rank}.json", result)  # before teardown, which may hang
        if mem is not None and result["status"] not in ("timeout", "crashed"):
            err = mem.close()
            if err:
                result["log"].append(f"rank {rank} teardown: {err}")
                w.write_json(out_dir / f"result_r{rank}.json", result)
        if dist.is_initialized() and result["status"] not in ("timeout", "crashed"):
            dist.destroy_process_group()
    return 0 if result["status"] == "ok" else 1


def _run(job: dict, rank: int, result: dict):
    import torch
    import torch.distributed as dist

    world = job["world"]
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{job['port']}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=job["timeout_s"]), device_id=device)
    group = dist.group.WORLD
    props = torch.cuda.get_device_properties(device)
    result["env"] = env_info(torch, props)
    make_inputs = load_callable(job["spec"]["inputs"], job["spec"]["search_path"])
    reference = load_callable(job["spec"]["reference"], job["spec"]["search_path"])
    dtype = getattr(torch, TORCH_DTYPES[job["dtype"]])
    max_symm = max(c["symm_bytes"] for c in job["cases"])
    if job["backend"] == "nccl":
        mem = nccl_memory(NcclHelper(Path(job["nccl_helper"])), rank, world, max_symm)
    else:
        mem = symm_memory(rank, world, max_symm, device, group)

    def barrier() -> None:
        dist.barrier(device_ids=[rank])
        torch.cuda.synchronize(device)

    def agree(ok: bool) -> bool:
        every = [None] * world
        dist.all_gather_object(every, bool(ok))
        return all(every)

    runner = Runner(CandidateLib(Path(job["lib"])), [rank], world, [mem], device=device,
                    num_sms=int(job.get("num_sms") or props.multi_processor_count), dtype_code=job["dtype_code"],
                    run_timeout_s=job["run_timeout_s"], barrier=barrier)
    hooks = (make_inputs, reference, dtype, group)
    for c in job["cases"]:
        if not _one_case(job, c, rank, runner, mem, hooks, agree, result):
            break
    return mem


def _inputs_and_reference(job, c, rank, seed, hooks, device):
    """The spec's inputs on this GPU and its reference outputs in host memory."""
    import torch

    make_inputs, reference, dtype, group = hooks
    gen = torch.Generator().manual_seed(seed * 1009 + rank)
    inputs = {k: v.to(device) for k, v in make_inputs(dict(c["dims"]), rank, job["world"], dtype, gen).items()}
    # copies: a reference working in place must not change the inputs the candidate gets
    ref = reference({k: v.clone() for k, v in inputs.items()}, dict(c["dims"]), group)
    refs = [ref[n].detach().cpu() for n in job["output_names"]]
    torch.cuda.synchronize(device)
    return [inputs[n].contiguous() for n in job["input_names"]], refs


def exact_outputs(job, c, inputs, refs, hooks, agree) -> tuple:
    """The reference run again in float64 on the same inputs (host float32 copies, in output
    order), as the CPU tier keeps it (evaluator/reference_worker.py): a candidate within tolerance
    of it is right even where the reference's own rounding strays further. () on every rank when
    any rank's reference cannot run in float64 (an op without a float64 kernel, no memory for
    it): the outputs are then checked against the reference alone."""
    import torch

    _, reference, _, group = hooks
    wide = {n: t.double() if t.is_floating_point() else t.clone() for n, t in zip(job["input_names"], inputs)}
    try:
        out = reference(wide, dict(c["dims"]), group)
        kept = tuple(out[n].detach().float().cpu() for n in job["output_names"])
        if any(k.shape != r.shape for k, r in zip(kept, refs)):
            kept = None
    except Exception:  # noqa: BLE001 -- a reference that only runs in its dtype keeps its own check
        kept = None
    del wide
    return kept if agree(kept is not None) else ()


def _one_case(job, c, rank, runner, mem, hooks, agree, result) -> bool:
    import torch

    case = w.case_of(c)
    where = f"world {job['world']}, shape {case.name}"
    mem.zero()
    runner.barrier()  # every rank's pads are clean before any rank runs
    runner.epoch = 0
    ws = [torch.zeros(max(case.workspace_bytes, 256), dtype=torch.uint8, device=runner.device)]
    for t in range(job["trials"]):
        inputs, refs = _inputs_and_reference(job, c, rank, job["seed"] + t, hooks, runner.device)
        # before any candidate code runs on this GPU, as the reference itself
        exacts = [exact_outputs(job, c, inputs, refs, hooks, agree)] if job["task"] == "verify" else None
        outputs = [torch.empty(r.shape, dtype=r.dtype, device=runner.device) for r in refs]
        ctxs = runner.contexts(case, [inputs], [outputs], ws)
        if t == 0:
            refusal = runner.dry_run(ctxs)
            if not agree(not refusal):
                w.fail(result, "refused", f"{where}: {refusal or 'another rank refused a launch'}")
                return False
        if job["task"] == "verify":
            ok = w.guarded(result, where, lambda: w.verify_runs(runner, ctxs, [outputs], [refs], job, case, t,
                                                                  result, agree, exacts))
            if not ok or result["status"] != "ok":
                return False
        elif t == 0:
            return w.guarded(result, where, lambda: _bench(job, c, case, rank, runner, ws, hooks, outputs, result))
    return True


def _bench(job, c, case, rank, runner, ws, hooks, outputs, result) -> None:
    """Baseline (the spec's reference on the NCCL group) right before the candidate, same method."""
    import torch
    import torch.distributed as dist

    _, reference, _, group = hooks
    first, _ = _inputs_and_reference(job, c, rank, job["seed"], hooks, runner.device)
    sets = rotation_count(first, runner.device, job)
    copies = [first] + [_inputs_and_reference(job, c, rank, job["seed"] + 1000 + s, hooks, runner.device)[0]
                        for s in range(sets - 1)]
    named = [dict(zip(job["input_names"], cp)) for cp in copies]
    stream = torch.cuda.Stream(device=runner.device)
    base = timed_callable(lambda s: reference(dict(named[s]), dict(c["dims"]), group), stream, sets,
                          job["warmup"], job["iters"], runner.barrier)
    mine = runner.timed([runner.contexts(case, [cp], [outputs], ws) for cp in copies], job["warmup"], job["iters"])[0]
    every, every_base = [None] * job["world"], [None] * job["world"]
    dist.all_gather_object(every, mine)
    dist.all_gather_object(every_base, base)
    result["timings"].append(record(case.name, every, sets, every_base))
