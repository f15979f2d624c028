"""Emulate stage: the candidate compiled by g++ against the CUDA shim (comm backend ``cpu``),
run with 2 and 4 ranks as processes over shared memory on tiny shapes, every output compared
with the reference run on gloo. Checks logic, indexing and the signalling protocol; it cannot
catch memory-ordering bugs (x86 is stronger than the GPU memory model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from design_space.errors import InfrastructureError
from design_space.evaluation import RankCheck, Status, Tier, trim_log
from design_space.patterns import Pattern
from design_space.spec import KernelSpec
from evaluator import sandbox, shim_build
from evaluator.reference import ReferenceCase

EXIT_CRASH, EXIT_DEADLOCK, EXIT_RUN_ERROR, EXIT_HARNESS, EXIT_NOT_EMULATABLE = 2, 3, 4, 5, 6
EXIT_MEMORY, EXIT_CONTRACT = 7, 8  # a red zone written / allocations over budget; a stream never joined


@dataclass(frozen=True)
class EmulationOutcome:
    status: Status
    reason: str
    checks: tuple[RankCheck, ...] = ()
    log: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    network_isolated: bool = False  # every run had a private network namespace
    isolation: str = ""  # what the sandbox gave the runs (jail.Isolation.describe())


@dataclass(frozen=True)
class EmulationSettings:
    num_sms: int = 8  # virtual SMs per rank: persistent grids size themselves from it
    iterations: int = 2  # calls per run: the second catches signals that do not survive an epoch
    stall_seconds: float = 3.0
    timeout_s: float = 60.0
    workspace_bytes: int = 1 << 16  # at least; a pattern may ask for more
    address_space_bytes: int = 4 << 30  # per rank process: 4 ranks x 4 GiB stays under a 24 GiB machine


def as_float32(path: Path, dtype: str, shape: Sequence[int]) -> np.ndarray:
    raw = np.fromfile(path, dtype=np.uint8)
    if dtype == "bfloat16":
        arr = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    elif dtype == "float16":
        arr = raw.view(np.float16).astype(np.float32)
    elif dtype == "float32":
        arr = raw.view(np.float32)
    else:
        raise InfrastructureError(f"unsupported reference dtype {dtype}", "use bf16, fp16 or fp32 tensors")
    return arr.reshape(tuple(shape))


def compare(out: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> tuple[bool, float, int, int]:
    """(ok, max abs error, mismatches, unwritten) for one output tensor."""
    if out.shape != ref.shape:
        return False, float("inf"), ref.size, 0
    unwritten = int(np.count_nonzero(np.isnan(out) & ~np.isnan(ref)))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        good = err <= atol + rtol * np.abs(ref.astype(np.float64))
    mismatches = int(good.size - np.count_nonzero(good))
    finite = err[np.isfinite(err)]
    return mismatches == 0, float(finite.max()) if finite.size else 0.0, mismatches, unwritten


def _manifest(case: ReferenceCase, spec: KernelSpec, pattern: Pattern, folder: Path, s: EmulationSettings) -> Path:
    dims = [case.shape.dims[d] for d in pattern.dims]
    inputs = [(r, slot, tf.path, tf.nbytes) for r, rd in enumerate(case.ranks) for slot, tf in enumerate(rd.inputs)]
    outputs = [(r, slot, folder / f"r{r}_out{slot}.bin", tf.nbytes)
               for r, rd in enumerate(case.ranks) for slot, tf in enumerate(rd.outputs)]
    path = folder / "manifest.txt"
    shim_build.write_manifest(
        path, world=case.world, num_sms=s.num_sms, iterations=s.iterations, stall_seconds=s.stall_seconds,
        dims=dims, dtype_code=spec.dtype.code, symm_bytes=pattern.symm_bytes(case.shape.dims, case.world, spec.dtype),
        workspace_bytes=max(s.workspace_bytes, pattern.workspace_bytes(case.shape.dims, case.world, spec.dtype)),
        inputs=inputs, outputs=outputs,
    )
    return path


def _classify(res: sandbox.SandboxResult, case: ReferenceCase) -> tuple[Status, str] | None:
    where = f"world {case.world}, shape {case.shape.name}"
    last = (res.output.strip().splitlines() or [""])[-1][:300]
    if res.timed_out:
        return Status.TIMEOUT, f"emulation exceeded its time limit ({where}): a hang or an endless loop"
    if res.returncode == 0:
        return None
    if res.returncode == EXIT_DEADLOCK:
        return Status.TIMEOUT, f"deadlock ({where}): {_first(res.output, 'deadlock:') or last}"
    if res.returncode == EXIT_NOT_EMULATABLE:
        return Status.EMULATION_FAILED, f"not emulatable: {_first(res.output, 'not emulatable') or last}"
    if res.returncode == EXIT_HARNESS:
        raise InfrastructureError(f"the emulator harness failed ({where}): {last}", "report this as a cuco bug")
    if res.returncode == EXIT_MEMORY:
        return Status.CRASHED, f"memory violation ({where}): {_first(res.output, 'memory:') or last}"
    if res.returncode == EXIT_CONTRACT:
        return Status.REJECTED, f"contract violation ({where}): {_first(res.output, 'contract:') or last}"
    if res.returncode == EXIT_RUN_ERROR:
        return Status.CRASHED, f"cuco_run or a CUDA call returned an error ({where}): {last}"
    crash = _first(res.output, "crash:") or res.signal_name or f"exit code {res.returncode}"
    return Status.CRASHED, f"crashed ({where}): {crash}"


def _first(text: str, needle: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if needle in ln), "")


def _check_outputs(case: ReferenceCase, folder: Path, spec: KernelSpec) -> list[RankCheck]:
    tol = spec.tolerances[spec.dtype]
    checks = []
    for r, rd in enumerate(case.ranks):
        worst = (True, 0.0, 0, 0)
        for slot, ref_tf in enumerate(rd.outputs):
            out = as_float32(folder / f"r{r}_out{slot}.bin", ref_tf.dtype, ref_tf.shape)
            ok, err, mism, unw = compare(out, as_float32(ref_tf.path, ref_tf.dtype, ref_tf.shape), tol.atol, tol.rtol)
            worst = (worst[0] and ok, max(worst[1], err), worst[2] + mism, worst[3] + unw)
        checks.append(RankCheck(tier=Tier.EMULATED, world=case.world, shape=case.shape.name, rank=r,
                                trial=case.trial, ok=worst[0], max_abs_err=worst[1], mismatches=worst[2],
                                unwritten=worst[3]))
    return checks


def emulate(source: str, *, spec: KernelSpec, pattern: Pattern, cases: Sequence[ReferenceCase], work_dir: Path,
            cache_dir: Path, settings: EmulationSettings = EmulationSettings()) -> EmulationOutcome:
    """Compile once, run every reference case; stop at the first failing case."""
    build = shim_build.compile_emulator(source, work_dir, dtype_code=spec.dtype.code, cache_dir=cache_dir)
    seconds = {"emulate_compile": build.seconds}
    if not build.ok:
        why = "not emulatable" if build.not_emulatable else "g++ could not compile the candidate for emulation"
        return EmulationOutcome(Status.EMULATION_FAILED, why, log=trim_log(build.log), seconds=seconds)
    checks: list[RankCheck] = []
    logs = []
    isolated, isolation = True, ""
    # the candidate reads its inputs from the reference cache; the expected outputs there read as empty
    answers = [tf.path for case in cases for rd in case.ranks for tf in rd.outputs]
    for case in cases:
        folder = work_dir / f"w{case.world}-{case.shape.name}-t{case.trial}"
        folder.mkdir(parents=True, exist_ok=True)
        manifest = _manifest(case, spec, pattern, folder, settings)
        # CPU time and address space are per rank process; fiber stacks are mapped lazily
        limits = sandbox.Limits(wall_s=settings.timeout_s, cpu_s=int(settings.timeout_s) + 5,
                                address_space_bytes=settings.address_space_bytes, file_size_bytes=64 << 20)
        res = sandbox.run([str(build.binary), str(manifest)], workdir=folder, limits=limits, hidden=answers)
        isolated = isolated and res.network_isolated
        isolation = res.isolation.describe()
        key = f"emulate_w{case.world}"
        seconds[key] = seconds.get(key, 0.0) + res.wall_s
        logs.append(f"$ emu world={case.world} shape={case.shape.name}\n{res.output}")
        failure = _classify(res, case)
        if failure:
            return EmulationOutcome(failure[0], failure[1], tuple(checks), trim_log("\n".join(logs)), seconds)
        case_checks = _check_outputs(case, folder, spec)
        checks.extend(case_checks)
        bad = [c for c in case_checks if not c.ok]
        if bad:
            c = bad[0]
            # unwritten elements are still NaN-poisoned: they have no error figure, so name them first
            err = (f"max abs error {c.max_abs_err:.3g} over the written ones" if c.unwritten
                   else f"max abs error {c.max_abs_err:.3g}")
            reason = (f"wrong result (world {case.world}, shape {case.shape.name}): rank {c.rank} has {c.mismatches} "
                      f"mismatching elements ({c.unwritten} never written), {err}")
            return EmulationOutcome(Status.WRONG_RESULT, reason, tuple(checks), trim_log("\n".join(logs)), seconds)
    return EmulationOutcome(Status.OK, "", tuple(checks), trim_log("\n".join(logs)), seconds, isolated, isolation)
