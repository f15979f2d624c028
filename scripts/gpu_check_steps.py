"""The GPU-side steps of scripts/gpu_check.py (imported only on the machine that runs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gpu_check as gc

import design_space as ds
from cuco.spec_loader import load_spec
from evaluator import sandbox
from evaluator.gpu import api, health

VERIFY_BUDGET_S = 240.0


def _jobs(built: list[dict], cache: Path, worlds: tuple[int, ...]) -> tuple[list[dict], list[str]]:
    jobs, labels = [], []
    for item in built:
        if not item["ok"]:
            continue
        spec = load_spec(gc.ROOT / item["folder"])
        pattern = ds.get_pattern(spec.pattern)
        for world in worlds:
            job, _ = api.prepare_virtual_job("", spec, pattern, world=world, shapes=spec.emulation_shapes, trials=1,
                                             seed=gc.SEED, task="verify", work_dir=cache / "work", cache_dir=cache,
                                             lib=cache / "prepared" / item["so"])
            jobs.append(job)
            labels.append(f"{item['workload']} {item['point']} w{world}")
    return jobs, labels


def run_batch(jobs: list[dict], cache: Path, tag: str, wall_s: float) -> list[dict]:
    """All jobs in ONE sandboxed worker process (torch and CUDA start once)."""
    run_dir = cache / "runs" / tag
    run_dir.mkdir(parents=True, exist_ok=True)
    for f in run_dir.glob("result_*.json"):
        f.unlink()
    (run_dir / "job.json").write_text(json.dumps({"batch": jobs}))
    res = sandbox.run([sys.executable, "-m", "evaluator.gpu.worker", str(run_dir / "job.json")], workdir=run_dir,
                      limits=health.gpu_limits(wall_s), env=health.gpu_env())
    out = []
    for i in range(len(jobs)):
        f = run_dir / f"result_{i}.json"
        out.append(json.loads(f.read_text()) if f.is_file() else
                   {"status": "not_run", "reason": "timed out before it" if res.timed_out else res.output[-200:]})
    return out


def verify_step(built: list[dict], cache: Path) -> list[tuple]:
    start = time.monotonic()
    jobs, labels = _jobs(built, cache, (2, 4))
    results = run_batch(jobs, cache, "verify", VERIFY_BUDGET_S)
    rows = []
    for label, r in zip(labels, results):
        if r["status"] != "ok":
            rows.append((f"verify {label}", "FAIL", f"{r['status']}: {r.get('reason', '')[:150]}", r.get("seconds", 0)))
    passed = sum(r["status"] == "ok" for r in results)
    failed_builds = [b for b in built if not b["ok"]]
    detail = f"{passed}/{len(results)} runs passed; {len(failed_builds)} builds failed"
    status = "ok" if passed == len(results) and not failed_builds else "FAIL"
    return [("virtual verify (2 and 4 ranks)", status, detail, time.monotonic() - start)] + rows


def gemm_step(built: list[dict], cache: Path) -> list[tuple]:
    """The compute part of each GEMM family at one rank vs torch.matmul (cuBLAS) on the same GEMM."""
    import torch

    rows = []
    for workload in gc.GEMM_WORKLOADS:
        item = next((b for b in built if b["workload"] == workload and b["ok"] and "/sequential/" in b["point"]), None)
        if item is None:
            rows.append((f"gemm {workload}", "skip", "no built sequential point", 0.0))
            continue
        start = time.monotonic()
        spec = load_spec(gc.ROOT / item["folder"])
        pattern = ds.get_pattern(spec.pattern)
        dims = {**spec.emulation_shapes[0].dims, **gc.PREFILL}
        shape = ds.ShapeCase(name="prefill-check", dims=dims)
        job, _ = api.prepare_virtual_job("", spec, pattern, world=1, shapes=[shape], trials=1, seed=gc.SEED,
                                         task="bench", work_dir=cache / "work", cache_dir=cache,
                                         lib=cache / "prepared" / item["so"], timeout_s=120)
        job.update(warmup=3, iters=20)
        r = run_batch([job], cache, f"gemm-{workload}", 180)[0]
        if r["status"] != "ok" or not r["timings"]:
            rows.append((f"gemm {workload}", "FAIL", f"{r['status']}: {r.get('reason', '')[:150]}",
                         time.monotonic() - start))
            continue
        mine = r["timings"][0]["seconds"]
        ref = _matmul_seconds(torch, dims["m"], dims["n"], dims["k"])
        tflops = 2 * dims["m"] * dims["n"] * dims["k"] / mine / 1e12
        rows.append((f"gemm {workload}", "info", f"{item['point']}: {mine * 1e3:.3f} ms ({tflops:.0f} TFLOP/s), "
                     f"cuBLAS {ref * 1e3:.3f} ms, ratio {ref / mine:.2f}", time.monotonic() - start))
    return rows


def _matmul_seconds(torch, m: int, n: int, k: int) -> float:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return sorted(times)[len(times) // 2]


def smoke_nccl(helper_path: Path) -> int:
    """(subprocess) A 1-rank NCCL device communicator: open, query, pointers, close."""
    from evaluator.gpu.ctx_layout import SIGNAL_PAD_BYTES
    from evaluator.gpu.native import NcclHelper

    import torch  # loads torch's libnccl.so.2 first, as the worker does

    torch.cuda.set_device(0)
    h = NcclHelper(helper_path)
    h.open(h.unique_id(), 0, 1, 1 << 20, SIGNAL_PAD_BYTES)
    props, ptrs = h.properties(), h.pointers()
    peer = h.peer_pointers(0)
    err = h.close()
    print(f"nccl {h.version()} device_api={props['device_api']} multimem={props['multimem']} "
          f"gin_type={props['gin_type']} symm={'set' if ptrs['symm'] else 'NULL'} peer0={'ok' if peer[0] else 'NULL'} "
          f"teardown={'clean' if not err else err}")
    return 0 if ptrs["symm"] and ptrs["comm"] and not err else 1


def smoke_symm() -> int:
    """(subprocess) torch symmetric memory on a 1-rank NCCL group: empty + rendezvous + pointers."""
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29533", rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    buf = symm_mem.empty(1 << 20, dtype=torch.uint8, device="cuda")
    hdl = symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
    print(f"buffer_ptrs={len(hdl.buffer_ptrs)} signal_pad_ptrs={len(hdl.signal_pad_ptrs)} "
          f"multicast={'yes' if getattr(hdl, 'multicast_ptr', 0) else 'no'}")
    ok = int(hdl.buffer_ptrs[0]) == buf.data_ptr()
    dist.destroy_process_group()
    return 0 if ok else 1


def _sub(args: list[str], timeout: float) -> tuple[str, str]:
    env = {**os.environ, "PYTHONPATH": str(gc.ROOT)}
    try:
        p = subprocess.run([sys.executable, str(Path(__file__).with_name("gpu_check.py")), *args], env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "FAIL", f"timed out after {timeout:.0f} s"
    last = ((p.stdout + p.stderr).strip().splitlines() or [""])[-1][:200]
    return ("ok" if p.returncode == 0 else "FAIL"), last


def run_all(cache: Path, limit, out_dir: Path | None = None) -> list[tuple]:
    from evaluator import toolchain
    from evaluator.gpu.shared_build import build_nccl_helper

    rows = []
    t = time.monotonic()
    v = gc.versions()
    rows.append(("versions", "info", "; ".join(f"{k}: {x}" for k, x in v.items()), time.monotonic() - t))
    t = time.monotonic()
    try:
        built = gc.build_all(gc.plan(limit), cache)
    except Exception as e:  # noqa: BLE001  (no nvcc and no prepared dir: say so in the table)
        rows.append(("build", "FAIL", f"{type(e).__name__}: {str(e)[:200]}", time.monotonic() - t))
        return rows
    rows.append(("build (symm, checked)", "ok" if all(b["ok"] for b in built) else "FAIL",
                 f"{sum(b['ok'] for b in built)}/{len(built)} candidates", time.monotonic() - t))
    rows += verify_step(built, cache)
    rows += gemm_step(built, cache)
    from gpu_calibrate import calibrate_step
    rows += calibrate_step(cache, _matmul_seconds, out_dir)
    t = time.monotonic()
    helper = build_nccl_helper(arch=gc.ARCH, tc=toolchain.toolchain(), cache_dir=cache, work_dir=cache / "work" / "h")
    status, detail = _sub(["smoke-nccl", "--helper", str(helper.path)], 90) if helper.ok else ("FAIL", "no helper")
    rows.append(("nccl 1-rank device comm", status, detail, time.monotonic() - t))
    t = time.monotonic()
    status, detail = _sub(["smoke-symm"], 90)
    rows.append(("torch symmetric memory", status, detail, time.monotonic() - t))
    return rows
