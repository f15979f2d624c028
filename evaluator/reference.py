"""Run a spec's reference on gloo once per (world size, shape, trial) and cache the data.

The reference runs in its own processes, before and apart from any candidate: a candidate
only ever receives input files, never the reference or its outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from design_space.errors import InfrastructureError, SpecError
from design_space.evaluation import trim_log
from design_space.patterns import Pattern
from design_space.spec import KernelSpec, ShapeCase

REFERENCE_TIMEOUT_S = 300.0
# 2: each output's own error against a float64 run; 3: inputs saved as built (the reference gets
# copies); 4: the float64 run's outputs kept too
REFERENCE_FORMAT = 4


@dataclass(frozen=True)
class TensorFile:
    path: Path
    shape: tuple[int, ...]
    dtype: str
    nbytes: int


@dataclass(frozen=True)
class RankData:
    inputs: tuple[TensorFile, ...]  # in the pattern's ctx.in[] order
    outputs: tuple[TensorFile, ...]  # in the pattern's ctx.out[] order
    # per output name: the reference's own error against a float64 run (evaluator/tolerance.py)
    errors: dict = field(default_factory=dict)
    # the float64 run's outputs (stored as float32), in outputs' order; () when the reference
    # cannot run in float64
    exact: tuple[TensorFile, ...] = ()


@dataclass(frozen=True)
class ReferenceCase:
    world: int
    shape: ShapeCase
    trial: int
    ranks: tuple[RankData, ...]


def _fingerprint(spec: KernelSpec, world: int, cases: Sequence[ShapeCase], seeds: Sequence[int]) -> str:
    # where the spec's folder lies is not part of its identity (the same spec in another checkout
    # has the same reference, so a sweep ledger keyed by it resumes there); its code is
    h = hashlib.sha256(json.dumps([REFERENCE_FORMAT, spec.model_dump(mode="json", exclude={"search_path"}), world,
                                   [c.model_dump() for c in cases], list(seeds)], sort_keys=True).encode())
    for folder in spec.search_path:
        for f in sorted(Path(folder).glob("*.py")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:20]


def run_worker(module: str, job_file: Path, timeout_s: float, what: str, world: int | str,
               env: dict | None = None) -> tuple[int, bytes]:
    """``python -m module job_file`` in its own session: (exit status, output); SpecError when it
    outlives ``timeout_s`` (its whole process group is killed)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", module, str(job_file)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise SpecError(f"{what} did not finish in {timeout_s:.0f} s at world size {world}",
                        "check the reference for a collective some rank never calls") from None
    return proc.returncode, out


def launch_jobs(module: str, jobs: Sequence[dict], job_file: Path, timeout_s: float, what: str,
                done: Callable[[dict], bool], env: dict | None = None) -> tuple[Optional[dict], bytes]:
    """Every job (each with its ``world``) in one launch of ``python -m module`` (whose main runs
    them with ``reference_worker.run_jobs``: torch imported once), ``timeout_s`` each: the first job
    that did not complete (``done``; the last one when the launch failed after all did), or None,
    and the output."""
    job_file.write_text(json.dumps(list(jobs)))
    returncode, out = run_worker(module, job_file, timeout_s * len(jobs), what,
                                 " or ".join(str(w) for w in dict.fromkeys(j["world"] for j in jobs)), env)
    failed = next((j for j in jobs if not done(j)), jobs[-1] if returncode != 0 else None)
    return failed, out


def last_lines(out: bytes) -> str:
    """A failed launch's last few output lines on one line, for an error message."""
    return " | ".join(out.decode(errors="replace").strip().splitlines()[-6:])[-1200:]


@dataclass(frozen=True)
class _Run:
    spec: KernelSpec
    world: int
    cases: tuple[ShapeCase, ...]
    folder: Path  # where its data lands once complete

    def complete(self) -> bool:
        return _all_ranks_saved(self.folder, self.world)


def _all_ranks_saved(folder: Path, world: int) -> bool:
    return all((Path(folder) / f"index_r{r}.json").is_file() for r in range(world))


def _run_worlds(runs: Sequence[_Run], seeds: Sequence[int], optional: Sequence[str] = ()) -> None:
    """Every run in one worker launch (torch is imported once, each run's ranks forked in turn);
    each run's data moves into its folder once complete. SpecError for the first that failed.
    ``optional``: inputs a builder may leave out (saved empty)."""
    tmps = []
    for run in runs:
        out = run.folder.resolve()  # gloo's file:// init URL needs an absolute path, or the ranks never meet
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        tmps.append(tmp)
    jobs = [{"world": r.world, "init_file": str(t / "pg_init"), "inputs": r.spec.inputs, "reference": r.spec.reference,
             "search_path": list(r.spec.search_path), "dtype": r.spec.dtype.value, "out_dir": str(t),
             "cases": [c.model_dump() for c in r.cases], "seeds": list(seeds), "optional_inputs": list(optional)}
            for r, t in zip(runs, tmps)]
    for job, tmp in zip(jobs, tmps):
        (tmp / "job.json").write_text(json.dumps(job))
    names = " and ".join(dict.fromkeys(r.spec.name for r in runs))
    try:
        failed, out_b = launch_jobs("evaluator.reference_worker", jobs, tmps[0] / "jobs.json", REFERENCE_TIMEOUT_S,
                                    f"the reference of {names}", lambda j: _all_ranks_saved(j["out_dir"], j["world"]))
    except SpecError:
        _remove(tmps)
        raise
    for run, job, tmp in zip(runs, jobs, tmps):
        if job is failed:
            _remove(tmps)
            raise SpecError(f"the reference or input builder of {run.spec.name} failed at world size {run.world}: "
                            + trim_log(out_b.decode(errors="replace"), 1500).replace("\n", " | "),
                            f"run `{run.spec.reference}` by hand on gloo and fix the error")
        install(tmp, run.folder, run.world)


def install(tmp: Path, folder: Path, world: int) -> None:
    """Move a finished run's data into its content-keyed folder without ever removing a complete
    one: another cuco process sharing the cache may have put the same data there and be reading it."""
    for _ in range(3):
        try:
            os.rename(tmp, folder)  # atomic; fails while the folder exists and is not empty
            return
        except OSError:
            if _all_ranks_saved(folder, world):
                shutil.rmtree(tmp, ignore_errors=True)
                return
            # an incomplete leftover (a removal cut short by a crash): set it aside atomically, retry
            aside = folder.with_name(f"{folder.name}.stale{os.getpid()}")
            try:
                os.rename(folder, aside)
            except OSError:
                pass
            shutil.rmtree(aside, ignore_errors=True)
    raise InfrastructureError(f"could not move the reference data {tmp} into {folder}",
                              "check that the cache directory (CUCO_CACHE_DIR) is writable and not full")


def _complete(pattern: Pattern, case: ShapeCase) -> ShapeCase:
    dims = pattern.full_dims(case.dims)
    return case if dims == case.dims else ShapeCase(name=case.name, dims=dims)


def _remove(folders: Sequence[Path]) -> None:
    for f in folders:
        shutil.rmtree(f, ignore_errors=True)


def _load(pattern: Pattern, world: int, folder: Path, cases: Sequence[ShapeCase]) -> list[ReferenceCase]:
    by_rank = [json.loads((folder / f"index_r{r}.json").read_text()) for r in range(world)]
    result = []
    for i, entry in enumerate(by_rank[0]):
        case = next(c for c in cases if c.name == entry["case"])
        ranks = []
        for r in range(world):
            e = by_rank[r][i]
            base = folder / e["folder"]

            def files(kind: str, names: Sequence[str]) -> tuple[TensorFile, ...]:
                missing = [n for n in names if n not in e[kind]]
                if missing:
                    raise SpecError(f"the {kind} of {pattern.name} must be named {list(names)}; missing {missing}",
                                    f"return a dict with keys {list(names)} from the spec's function")
                return tuple(TensorFile(base / e[kind][n]["file"], tuple(e[kind][n]["shape"]), e[kind][n]["dtype"],
                                        e[kind][n]["nbytes"]) for n in names)

            exact = files("exact", pattern.outputs) if set(pattern.outputs) <= set(e.get("exact") or {}) else ()
            ranks.append(RankData(inputs=files("inputs", pattern.inputs), outputs=files("outputs", pattern.outputs),
                                  errors=dict(e.get("errors") or {}), exact=exact))
        result.append(ReferenceCase(world=world, shape=case, trial=entry["trial"], ranks=tuple(ranks)))
    return result


def prepare(spec: KernelSpec, pattern: Pattern, cache_root: Path, *, worlds: Sequence[int],
            cases: Sequence[ShapeCase], seeds: Sequence[int] = (0,)) -> list[ReferenceCase]:
    """Reference data for every (world, case, seed); computed once, then read from ``cache_root``."""
    return prepare_many([(spec, cache_root)], pattern, worlds=worlds, cases=cases, seeds=seeds)[0]


def prepare_many(specs: Sequence[tuple[KernelSpec, Path]], pattern: Pattern, *, worlds: Sequence[int],
                 cases: Sequence[ShapeCase], seeds: Sequence[int] = (0,)) -> list[list[ReferenceCase]]:
    """``prepare`` for each (spec, cache root) of one pattern, whatever is not cached yet computed
    in a single worker launch."""
    runs: list[list[_Run]] = []
    for spec, cache_root in specs:
        runs.append([])
        for world in worlds:
            # a dim of the world size (``"64*n"``) is an int from here on: the reference, its cache key
            # and every stage after it (emulation, the observed point) see this world's value
            # and an optional flag the shape leaves out has its value written in
            cases_w = tuple(_complete(pattern, c.resolved(world)) for c in cases)
            for case in cases_w:
                problems = pattern.dim_problems(case.dims, world)
                if problems:
                    raise SpecError(f"emulation shape {case.name!r} does not fit world size {world}: "
                                    + "; ".join(problems), "change the spec's emulation_shapes or emulation_world_sizes")
            folder = cache_root / f"w{world}-{_fingerprint(spec, world, cases_w, seeds)}"
            runs[-1].append(_Run(spec, world, cases_w, folder))
    todo = [r for per_spec in runs for r in per_spec if not r.complete()]
    if todo:
        _run_worlds(todo, seeds, pattern.optional_inputs)
    return [[c for r in per_spec for c in _load(pattern, r.world, r.folder, r.cases)] for per_spec in runs]
