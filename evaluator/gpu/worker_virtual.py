"""Virtual ranks: N rank instances of the candidate in this one process on one GPU, each on its
own stream with its share of the SMs (total / N), peer tables over the instances' buffers.
Inputs and references were written by the parent (spec hooks on gloo, CPU) before this ran."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluator.gpu import worker as w
from evaluator.gpu.native import CandidateLib
from evaluator.gpu.rank_memory import virtual_memory
from evaluator.gpu.rank_runner import Runner
from evaluator.gpu.worker_bench import record, rotation_count


def load_tensor(tf: dict, device):
    import torch

    raw = torch.from_numpy(np.fromfile(tf["path"], dtype=np.uint8))
    return raw.view(getattr(torch, tf["dtype"])).reshape(tf["shape"]).to(device)


def env_info(torch, props) -> dict:
    nccl = getattr(torch.cuda, "nccl", None)
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": props.name, "sms": props.multi_processor_count,
            "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
            "nccl": ".".join(map(str, nccl.version())) if nccl and hasattr(nccl, "version") else ""}


def run_virtual(job: dict, result: dict, out_dir: Path) -> None:
    import torch

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    world = job["world"]
    share = int(job.get("num_sms") or props.multi_processor_count // world)
    result["env"] = {**env_info(torch, props), "sm_share": share}
    if share < 1:
        w.fail(result, "error", f"{world} virtual ranks do not fit {props.multi_processor_count} SMs")
        return
    lib = CandidateLib(Path(job["lib"]))
    mems = virtual_memory(world, max(c["symm_bytes"] for c in job["cases"]), device)
    runner = Runner(lib, range(world), world, mems, device=device, num_sms=share, dtype_code=job["dtype_code"],
                    run_timeout_s=job["run_timeout_s"], barrier=lambda: torch.cuda.synchronize(device))
    for c in job["cases"]:
        if not _one_case(job, c, runner, mems, device, result):
            return


def _one_case(job: dict, c: dict, runner: Runner, mems, device, result: dict) -> bool:
    import torch

    case = w.case_of(c)
    where = f"world {job['world']}, shape {case.name}"
    for m in mems:
        m.zero()
    runner.epoch = 0
    ws = [torch.zeros(max(case.workspace_bytes, 256), dtype=torch.uint8, device=device) for _ in runner.ranks]
    first_inputs = None
    for t, trial in enumerate(c["trials"]):
        inputs = [[load_tensor(tf, device) for tf in rk["inputs"]] for rk in trial["ranks"]]
        refs = [[load_tensor(tf, "cpu") for tf in rk["outputs"]] for rk in trial["ranks"]]
        exacts = [[load_tensor(tf, "cpu") for tf in rk.get("exact", ())] for rk in trial["ranks"]]
        outputs = [[torch.empty(tuple(tf["shape"]), dtype=getattr(torch, tf["dtype"]), device=device)
                    for tf in rk["outputs"]] for rk in trial["ranks"]]
        ctxs = runner.contexts(case, inputs, outputs, ws)
        if t == 0:
            refusal = runner.dry_run(ctxs)
            if refusal:
                w.fail(result, "refused", f"{where}: {refusal}")
                return False
            first_inputs = (inputs, outputs)
        if job["task"] == "verify":
            ok = w.guarded(result, where, lambda: w.verify_runs(runner, ctxs, outputs, refs, job, case, t, result,
                                                                exacts=exacts))
            if not ok or result["status"] != "ok":
                return False
    if job["task"] == "bench":
        return w.guarded(result, where, lambda: _bench(job, case, runner, ws, *first_inputs, result))
    return True


def _bench(job: dict, case, runner: Runner, ws, inputs, outputs, result: dict) -> None:
    sets = rotation_count([t for rank in inputs for t in rank], runner.device, job)
    copies = [inputs] + [[[t.clone() for t in rank] for rank in inputs] for _ in range(sets - 1)]
    ctx_sets = [runner.contexts(case, cp, outputs, ws) for cp in copies]
    per_rank = runner.timed(ctx_sets, job["warmup"], job["iters"])
    result["timings"].append(record(case.name, per_rank, sets))
