"""Driver of scripts/gpu_check.sh: the GPU check of one machine with one GPU and no network.

  gpu_check.py plan                      list what would be built and verified
  gpu_check.py prepare [--limit N]       build the candidates (parallel) into a prepared dir (CPU is fine)
  gpu_check.py run [--out DIR]           versions, builds (or the prepared dir), virtual-rank verification
                                         (2 and 4 ranks) of one point per backend x placement of every
                                         workload, GEMM compute vs cuBLAS, NCCL device-communicator and
                                         torch symmetric-memory smoke tests, then a short table
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import design_space as ds  # noqa: E402
from cuco.spec_loader import load_spec  # noqa: E402

HARDWARE = "H200"
ARCH = "sm_90"
SEED = 7
GEMM_WORKLOADS = ("allgather_gemm", "gemm_reducescatter", "gemm_allreduce")
PREFILL = {"m": 2048, "n": 4096, "k": 4096}


def plan(limit: int | None = None) -> list[dict]:
    """One seeded representative point per (backend, placement) of every workload's family."""
    items = []
    for folder in sorted(p.parent for p in (ROOT / "examples").glob("*/spec.py")):
        spec = load_spec(folder)
        pattern = ds.get_pattern(spec.pattern)
        groups: dict[tuple, list] = {}
        for p in ds.valid_points(pattern, ds.get_profile(HARDWARE), spec.restrictions):
            groups.setdefault((p.backend.value, p.placement.value), []).append(p)
        for (backend, placement), pts in sorted(groups.items()):
            point = random.Random(f"{spec.name}/{backend}/{placement}").choice(pts)
            items.append({"folder": str(folder.relative_to(ROOT)), "workload": spec.name, "point": point.key()})
    return items[:limit] if limit else items


def _build_one(item: dict, cache: Path) -> dict:
    from evaluator import toolchain
    from evaluator.gpu.shared_build import build_shared

    spec = load_spec(ROOT / item["folder"])
    source = ds.get_pattern(spec.pattern).render(ds.DesignPoint.parse_key(item["point"]))
    work = cache / "work" / f"{item['workload']}-{item['point'].replace('/', '_')}"
    built = build_shared(source, arch=ARCH, backend="symm", dtype_code=spec.dtype.code, tc=toolchain.toolchain(),
                         cache_dir=cache, work_dir=work, timeout_s=300)
    shutil.rmtree(work, ignore_errors=True)
    out = {**item, "ok": built.ok, "seconds": round(built.seconds, 1)}
    if built.ok:  # a copy under a stable name: the prepared dir travels to the GPU machine
        name = f"{item['workload']}-{item['point'].replace('/', '_')}.so"
        (cache / "prepared").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built.path, cache / "prepared" / name)
        out["so"] = name
    else:
        out["error"] = next((ln for ln in built.log.splitlines() if "error" in ln), built.log[-300:])
    return out


def build_all(items: list[dict], cache: Path) -> list[dict]:
    """Every item built (in parallel; nvcc runs sandboxed); reuses ``cache/prepared`` when present."""
    manifest = cache / "prepared" / "manifest.json"
    done = {(m["workload"], m["point"]): m for m in json.loads(manifest.read_text())} if manifest.is_file() else {}
    todo = [i for i in items if not (done.get((i["workload"], i["point"]), {}).get("so") and
                                     (cache / "prepared" / done[(i["workload"], i["point"])]["so"]).is_file())]
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        for res in pool.map(lambda i: _build_one(i, cache), todo):
            done[(res["workload"], res["point"])] = res
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(list(done.values()), indent=1))
    return [done[(i["workload"], i["point"])] for i in items]


def versions() -> dict:
    def cmd(argv: list[str]) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return f"unavailable ({e.__class__.__name__})"
    import torch

    nccl = getattr(torch.cuda, "nccl", None)
    return {"nvidia-smi": cmd(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]),
            "torch": torch.__version__, "cuda (torch)": str(torch.version.cuda),
            "nccl (torch)": ".".join(map(str, nccl.version())) if nccl else "",
            "nvcc": (cmd([shutil.which("nvcc") or "nvcc", "--version"]).splitlines() or [""])[-1]}


def table(rows: list[tuple[str, str, str, float]]) -> str:
    w = max(len(r[0]) for r in rows)
    lines = [f"{'step':<{w}}  status  seconds  detail", "-" * (w + 40)]
    lines += [f"{name:<{w}}  {status:<6}  {sec:7.1f}  {detail}" for name, status, detail, sec in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="gpu_check")
    ap.add_argument("command", choices=["plan", "prepare", "run", "smoke-nccl", "smoke-symm"])
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("CUCO_GPU_CHECK_DIR", ROOT / ".gpu_check")))
    ap.add_argument("--out", type=Path, default=Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
    ap.add_argument("--limit", type=int, default=None, help="only the first N plan items")
    ap.add_argument("--helper", type=Path, help="(smoke-nccl) the built NCCL host helper")
    args = ap.parse_args(argv)
    import gpu_check_steps as steps  # next to this file; imports torch lazily

    if args.command == "plan":
        for i in plan(args.limit):
            print(f"{i['workload']:<22} {i['point']}")
        return 0
    if args.command == "prepare":
        start = time.monotonic()
        built = build_all(plan(args.limit), args.cache.resolve())
        bad = [b for b in built if not b["ok"]]
        print(f"prepared {len(built) - len(bad)}/{len(built)} candidates in {args.cache} "
              f"({time.monotonic() - start:.0f} s)" + "".join(f"\n  FAILED {b['workload']} {b['point']}: "
                                                           f"{b['error']}" for b in bad))
        return 1 if bad else 0
    if args.command == "smoke-nccl":
        return steps.smoke_nccl(args.helper)
    if args.command == "smoke-symm":
        return steps.smoke_symm()
    rows = steps.run_all(args.cache.resolve(), args.limit, args.out)
    text = table(rows)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_check.txt").write_text(text + "\n")
        # what cuco itself says this machine can do (GPUs, NCCL device API, multimem, GIN, tiers)
        doctor = subprocess.run([sys.executable, "-m", "cuco.cli", "doctor", "--json"], capture_output=True,
                                text=True, timeout=120, cwd=ROOT)
        (args.out / "doctor.json").write_text(doctor.stdout or doctor.stderr)
    print(text)
    return 0 if all(r[1] in ("ok", "info") for r in rows) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))
