"""The GPU worker: ``python -m evaluator.gpu.worker JOB.json`` inside ONE sandbox call, so a hang
is killed with every rank. Writes ``result.json`` next to the job; the facade (evaluator/gpu/api.py)
reads it back.

- virtual: this process runs N rank instances on one GPU (backend symm). Inputs and references
  come from files the parent made BEFORE this process started: the spec's input builder and torch
  reference run on gloo on CPU tensors (evaluator/reference.py) -- so virtual verification shapes
  must be small enough for a CPU reference.
- multi: this process starts one child per rank (``--rank r``); each takes GPU r, joins an NCCL
  process group on 127.0.0.1, builds its inputs with the spec's builder (fresh seed per trial,
  per rank), runs the spec's reference on the NCCL group, moves it to host memory, and only then
  sets up and calls the candidate.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

from evaluator.gpu.rank_runner import Case, Hang, RunFailed, Unjoined

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
EXIT_HANG = 3


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def new_result() -> dict:
    return {"status": "ok", "reason": "", "checks": [], "timings": [], "log": [], "env": {}}


def fail(result: dict, status: str, reason: str) -> dict:
    if result["status"] == "ok":  # the first failure is the diagnosis
        result["status"], result["reason"] = status, reason
    return result


def case_of(c: dict) -> Case:
    return Case(name=c["name"], dims=list(c["dims_list"]), symm_bytes=int(c["symm_bytes"]),
                workspace_bytes=int(c["workspace_bytes"]))


def check_outputs(outs, refs, tol: dict, world: int, case: str, rank: int, trial: int, run: int,
                  exacts=()) -> dict:
    """One rank's outputs against its reference (host tensors) and, where given, the reference's
    float64 run (evaluator/emulate.py `compare`), as a RankCheck dict."""
    from evaluator.emulate import compare

    ok, err, mism, unw = True, 0.0, 0, 0
    for i, (out, ref) in enumerate(zip(outs, refs)):
        o = out.detach().float().cpu().numpy()
        exact = exacts[i].float().numpy() if i < len(exacts) else None
        good, e, m, u = compare(o, ref.float().numpy(), tol["atol"], tol["rtol"], exact)
        ok, err, mism, unw = ok and good, max(err, e), mism + m, unw + u
    return {"world": world, "shape": case, "rank": rank, "trial": trial, "ok": ok, "max_abs_err": err,
            "mismatches": mism, "unwritten": unw, "note": f"call {run + 1}"}


def verify_runs(runner, ctxs, outputs, refs, job, case: Case, trial: int, result: dict,
                agree=lambda ok: ok, exacts=None) -> bool:
    """Poison, run, compare -- ``job['calls']`` times (the second call catches state that does not
    survive an epoch). Returns False after the first wrong rank; ``agree`` makes every process
    stop together (multi mode), so no rank waits on one that gave up."""
    import torch

    for call in range(job.get("calls", 2)):
        for outs in outputs:
            for t in outs:
                t.fill_(float("nan"))
        torch.cuda.synchronize(runner.device)
        runner.run(ctxs)
        mine_ok = True
        for i, r in enumerate(runner.ranks):
            chk = check_outputs(outputs[i], refs[i], job["tolerance"], job["world"], case.name, r, trial, call,
                                exacts[i] if exacts else ())
            result["checks"].append(chk)
            if not chk["ok"] and mine_ok:
                mine_ok = False
                fail(result, "wrong_result",
                     f"wrong result (world {job['world']}, shape {case.name}, trial {trial}, call {call + 1}): rank "
                     f"{r} has {chk['mismatches']} mismatching elements ({chk['unwritten']} never written), max abs "
                     f"error {chk['max_abs_err']:.3g}")
        if not agree(mine_ok):
            if mine_ok:
                fail(result, "wrong_result", "another rank produced a wrong result")
            return False
    return True


def guarded(result: dict, where: str, fn) -> bool:
    """Run ``fn``; map what the candidate can cause to a status. True when it went through."""
    try:
        fn()
        return True
    except Hang as e:
        fail(result, "timeout", f"{where}: {e}")
    except Unjoined as e:  # a contract violation, like a co-residency refusal
        fail(result, "refused", f"{where}: {e}")
    except RunFailed as e:
        status = "refused" if "co-residency" in str(e) else "crashed"
        fail(result, status, f"{where}: {e}")
    except RuntimeError as e:  # torch surfaces asynchronous CUDA faults as RuntimeError
        fail(result, "crashed", f"{where}: {str(e).strip().splitlines()[0][:300]}")
    return False


# ------------------------------------------------------------------------- entry points

def main(argv: list[str]) -> int:
    job_path = Path(argv[1])
    job = json.loads(job_path.read_text())
    out_dir = job_path.parent
    if "--rank" in argv:
        from evaluator.gpu.worker_multi import run_rank
        return run_rank(job, int(argv[argv.index("--rank") + 1]), out_dir)
    if "batch" in job:
        return run_batch(job, out_dir)
    result = new_result()
    try:
        if job["mode"] == "virtual":
            from evaluator.gpu.worker_virtual import run_virtual
            run_virtual(job, result, out_dir)
        else:
            spawn_ranks(job, job_path, result)
    except Exception as e:  # noqa: BLE001  (the harness's own failure: report it, do not hide it)
        fail(result, "error", f"GPU worker failed: {type(e).__name__}: {e}")
        result["log"].append(traceback.format_exc())
    write_json(out_dir / "result.json", result)
    return 0 if result["status"] == "ok" else 1


def run_batch(job: dict, out_dir: Path) -> int:
    """Several virtual-rank jobs in this one process (torch and CUDA start once): result_<i>.json
    each. A candidate that breaks the CUDA context fails the rest ('error'); the caller says so."""
    from evaluator.gpu.worker_virtual import run_virtual

    for i, sub in enumerate(job["batch"]):
        result = new_result()
        started = time.monotonic()
        try:
            run_virtual(sub, result, out_dir)
        except Exception as e:  # noqa: BLE001
            fail(result, "error", f"{type(e).__name__}: {str(e)[:300]}")
        result["seconds"] = time.monotonic() - started
        write_json(out_dir / f"result_{i}.json", result)
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_ranks(job: dict, job_path: Path, result: dict) -> None:
    """One child per rank, in this process group (a timeout kills them all); merge their results."""
    out_dir = job_path.parent
    job["port"] = free_port()
    write_json(job_path, job)
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(job["port"]),
           "NCCL_SOCKET_IFNAME": "lo", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "evaluator.gpu.worker", str(job_path), "--rank", str(r)],
                              env=env) for r in range(job["world"])]
    deadline = time.monotonic() + job["timeout_s"]
    for p in procs:
        try:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            fail(result, "timeout", f"rank processes did not finish within {job['timeout_s']:.0f} s")
    for p in procs:
        if p.poll() is None:
            p.kill()
    merge_rank_results(job, out_dir, result, [p.returncode for p in procs])


def merge_rank_results(job: dict, out_dir: Path, result: dict, codes: list) -> None:
    order = {"crashed": 0, "refused": 1, "wrong_result": 2, "error": 3, "timeout": 4, "ok": 5}
    parts = []
    missing = []
    for r in range(job["world"]):
        f = out_dir / f"result_r{r}.json"
        if f.is_file():
            parts.append(json.loads(f.read_text()))
        else:
            missing.append(f"rank {r} exited with code {codes[r]} without a result")
    for p in sorted(parts, key=lambda p: order.get(p["status"], 9)):  # a crash explains the others' hang
        if p["status"] != "ok":
            fail(result, p["status"], p["reason"])
    if missing:  # a rank killed at the deadline, or one that died hard (segfault in the candidate)
        fail(result, "crashed", "; ".join(missing))
    for p in parts:
        result["checks"] += p["checks"]
        result["log"] += p["log"]
        result["env"] = result["env"] or p["env"]
    if parts:
        result["timings"] = parts[0]["timings"]  # every rank holds the same gathered numbers


if __name__ == "__main__":
    sys.exit(main(sys.argv))
