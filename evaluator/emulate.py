"""Emulate stage: the candidate compiled by g++ against the CUDA shim (comm backend ``cpu``), run
with 2 and 4 ranks as processes on tiny shapes, every call's outputs compared with the reference
run on gloo. Checks logic, indexing and the signalling protocol; it cannot catch memory-ordering
bugs (x86 is stronger than the GPU memory model).

The trust boundary: the candidate runs in the emulator's processes, inside the sandbox. This
module decides the verdict in the evaluator's own process, from memory it created and reads
after the emulator exited (``emulator_io``): every call of every rank gets fresh inputs and its
own poisoned output buffer, each compared with its own reference. The emulator's exit status and
output only explain a failure; they never make a candidate pass.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from design_space.errors import InfrastructureError
from design_space.evaluation import RankCheck, Status, Tier, trim_log
from design_space.patterns import Pattern
from design_space.spec import KernelSpec
from evaluator import emulator_io, sandbox, shim_build
from evaluator.reference import ReferenceCase
from evaluator.tolerance import output_tolerance, reduced_collective

EXIT_CRASH, EXIT_DEADLOCK, EXIT_RUN_ERROR, EXIT_HARNESS, EXIT_NOT_EMULATABLE = 2, 3, 4, 5, 6
EXIT_MEMORY, EXIT_CONTRACT = 7, 8  # a red zone written / allocations over budget; a stream never joined


@dataclass(frozen=True)
class RunTrace:
    """What one emulator run's ranks reported doing (evaluator/shim/trace.cpp), per rank."""

    world: int
    dims: dict
    calls: int
    ranks: tuple[dict, ...]


@dataclass(frozen=True)
class EmulationOutcome:
    status: Status
    reason: str
    checks: tuple[RankCheck, ...] = ()
    log: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    network_isolated: bool = False  # every run had a private network namespace
    isolation: str = ""  # what the sandbox gave the runs (jail.Isolation.describe())
    traces: tuple[RunTrace, ...] = ()  # one per run that passed
    # The share of the outputs that changed when every GEMM tile's result got noise (the dependence
    # probe, run when the code used the tile): tile FLOPs count only as far as outputs depend on them.
    tile_dependence: Optional[float] = None


@dataclass(frozen=True)
class EmulationSettings:
    num_sms: int = 8  # virtual SMs per rank: persistent grids size themselves from it
    # Calls per run, each with fresh inputs: the first two behind a barrier, in opposite rank orders;
    # the third back to back (a rank may run into it while a peer is still in the second).
    iterations: int = 3
    stall_seconds: float = 3.0
    timeout_s: float = 60.0
    workspace_bytes: int = 1 << 16  # at least; a pattern may ask for more
    address_space_bytes: int = 4 << 30  # per rank process: 4 ranks x 4 GiB stays under a 24 GiB machine
    memory_bytes: int = 2 << 30  # the whole run (every rank), where the sandbox has a memory cgroup


# What an emulation its caller stopped returns; never stored (the caller stopped it because it has its verdict).
STOPPED = EmulationOutcome(Status.TIMEOUT, "emulation stopped by the evaluator: the candidate's verdict came from "
                                           "another stage")


def as_float32(path: Path, dtype: str, shape: Sequence[int]) -> np.ndarray:
    return decode(np.fromfile(path, dtype=np.uint8), dtype, shape)


def exact_of(rank_data, slot: int) -> Optional[np.ndarray]:
    """Output ``slot``'s float64-run values of one rank, None without them."""
    if slot >= len(rank_data.exact):
        return None
    tf = rank_data.exact[slot]
    return as_float32(tf.path, tf.dtype, tf.shape)


def decode(raw: np.ndarray, dtype: str, shape: Sequence[int]) -> np.ndarray:
    if dtype == "bfloat16":
        arr = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    elif dtype == "float16":
        arr = raw.view(np.float16).astype(np.float32)
    elif dtype == "float32":
        arr = raw.view(np.float32)
    else:
        raise InfrastructureError(f"unsupported reference dtype {dtype}", "use bf16, fp16 or fp32 tensors")
    return arr.reshape(tuple(shape))


def compare(out: np.ndarray, ref: np.ndarray, atol: float, rtol: float,
            exact: Optional[np.ndarray] = None) -> tuple[bool, float, int, int]:
    """(ok, max abs error, mismatches, unwritten) for one output tensor. With ``exact`` (the
    reference's float64 run) an element is right within tolerance of either: a candidate that rounds
    less than the reference must not fail where the reference's own rounding strays; the error is
    then the distance to the nearer of the two."""
    if out.shape != ref.shape:
        return False, float("inf"), ref.size, 0
    unwritten = int(np.count_nonzero(np.isnan(out) & ~np.isnan(ref)))
    err, good = _error(out, ref, atol, rtol, exact)
    mismatches = int(good.size - np.count_nonzero(good))
    finite = err[np.isfinite(err)]
    return mismatches == 0, float(finite.max()) if finite.size else 0.0, mismatches, unwritten


def _error(out: np.ndarray, ref: np.ndarray, atol: float, rtol: float,
           exact: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per element: the error against the nearer accepted answer, and whether it is within tolerance."""
    o = out.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(o - ref.astype(np.float64))
        good = err <= atol + rtol * np.abs(ref.astype(np.float64))
        if exact is not None and exact.shape == ref.shape:
            err_x = np.abs(o - exact.astype(np.float64))
            good_x = err_x <= atol + rtol * np.abs(exact.astype(np.float64))
            err, good = np.fmin(err, err_x), good | good_x
    return err, good


def group_cases(cases: Sequence[ReferenceCase]) -> list[tuple[ReferenceCase, ...]]:
    """One emulator run per (world, shape): its trials, in order, are the run's calls."""
    groups: dict[tuple[int, str], list[ReferenceCase]] = {}
    for c in cases:
        groups.setdefault((c.world, c.shape.name), []).append(c)
    return [tuple(sorted(g, key=lambda c: c.trial)) for g in groups.values()]


def _io_files(group: Sequence[ReferenceCase], spec: KernelSpec, pattern: Pattern,
              s: EmulationSettings, perturb: int = 0) -> emulator_io.IoFiles:
    first = group[0]
    sizes, inputs = [], {}
    for call, case in enumerate(group, start=1):
        for r, rd in enumerate(case.ranks):
            for slot, tf in enumerate(rd.inputs):
                sizes.append((r, call, False, slot, tf.nbytes))
                inputs[(r, call, slot)] = tf.path.read_bytes()
            for slot, tf in enumerate(rd.outputs):
                sizes.append((r, call, True, slot, tf.nbytes))
    slots, size = emulator_io.layout(sizes)
    dims = first.shape.dims
    text = emulator_io.manifest_text(
        world=first.world, num_sms=s.num_sms, calls=len(group), stall_seconds=s.stall_seconds,
        dims=[dims[d] for d in pattern.dims], dtype_code=spec.dtype.code,
        symm_bytes=pattern.symm_bytes(dims, first.world, spec.dtype),
        workspace_bytes=max(s.workspace_bytes, pattern.workspace_bytes(dims, first.world, spec.dtype)), slots=slots,
        traces_after=size, perturb_tile=perturb)
    return emulator_io.IoFiles(text, slots, size, inputs, world=first.world)


def _classify(res: sandbox.SandboxResult, where: str) -> Optional[tuple[Status, str]]:
    """What the emulator's exit says went wrong (None: it says nothing did, which proves nothing)."""
    last = (res.output.strip().splitlines() or [""])[-1][:300]
    if res.timed_out:
        return Status.TIMEOUT, f"emulation exceeded its time limit ({where}): a hang or an endless loop"
    if res.returncode == 0:
        return None
    if res.returncode == EXIT_DEADLOCK:
        return Status.TIMEOUT, f"deadlock ({where}): {_first(res.output, 'deadlock:') or last}"
    if res.returncode == EXIT_NOT_EMULATABLE:
        return Status.EMULATION_FAILED, f"not emulatable: {_first(res.output, 'not emulatable') or last}"
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


def tolerance(spec: KernelSpec, pattern: Pattern, case: ReferenceCase, rank: int, slot: int):
    """The tolerance of output ``slot`` of ``rank`` in ``case`` (evaluator/tolerance.py)."""
    name = pattern.outputs[slot]
    collective = reduced_collective(pattern.cost(case.shape.dims, case.world, spec.dtype))
    return output_tolerance(spec, name, world=case.world, collective=collective,
                            stats=case.ranks[rank].errors.get(name))


def _check_outputs(group: Sequence[ReferenceCase], io: emulator_io.IoFiles, spec: KernelSpec,
                   pattern: Pattern) -> list[RankCheck]:
    checks = []
    for call, case in enumerate(group, start=1):
        for r, rd in enumerate(case.ranks):
            worst = (True, 0.0, 0, 0)
            for slot, ref_tf in enumerate(rd.outputs):
                tol = tolerance(spec, pattern, case, r, slot)
                out = decode(np.frombuffer(io.output(r, call, slot), dtype=np.uint8), ref_tf.dtype, ref_tf.shape)
                ok, err, mism, unw = compare(out, as_float32(ref_tf.path, ref_tf.dtype, ref_tf.shape), tol.atol,
                                             tol.rtol, exact_of(rd, slot))
                worst = (worst[0] and ok, max(worst[1], err), worst[2] + mism, worst[3] + unw)
            checks.append(RankCheck(tier=Tier.EMULATED, world=case.world, shape=case.shape.name, rank=r,
                                    trial=case.trial, ok=worst[0], max_abs_err=worst[1], mismatches=worst[2],
                                    unwritten=worst[3]))
    return checks


def _wrong_result(case: ReferenceCase, c: RankCheck) -> str:
    # unwritten elements are still NaN-poisoned: they have no error figure, so name them first
    err = (f"max abs error {c.max_abs_err:.3g} over the written ones" if c.unwritten
           else f"max abs error {c.max_abs_err:.3g}")
    return (f"wrong result (world {case.world}, shape {case.shape.name}, call {c.trial + 1}): rank {c.rank} has "
            f"{c.mismatches} mismatching elements ({c.unwritten} never written), {err}")


@dataclass(frozen=True)
class _RunOutcome:
    failure: Optional[tuple[Status, str]]
    checks: tuple[RankCheck, ...]
    log: str
    result: sandbox.SandboxResult
    trace: Optional[RunTrace] = None


def run_group(binary: Path, group: Sequence[ReferenceCase], *, spec: KernelSpec, pattern: Pattern, folder: Path,
              settings: EmulationSettings, stop: Optional[threading.Event] = None) -> _RunOutcome:
    """One emulator run (every call of one world and shape), judged here from the I/O file."""
    case = group[0]
    where = f"world {case.world}, shape {case.shape.name}"
    with _io_files(group, spec, pattern, settings) as io:
        res = _run(binary, io, folder, settings, stop)
        log = f"$ emu world={case.world} shape={case.shape.name} calls={len(group)}\n{res.output}"
        failure = _classify(res, where)
        if failure:
            return _RunOutcome(failure, (), log, res)
        breach = io.red_zone_breach()
        if breach:
            return _RunOutcome((Status.CRASHED, f"memory violation ({where}): {breach}"), (), log, res)
        checks = tuple(_check_outputs(group, io, spec, pattern))
        trace = RunTrace(case.world, dict(case.shape.dims), len(group), tuple(io.trace(r) for r in range(case.world)))
    bad = next((c for c in checks if not c.ok), None)
    failure = (Status.WRONG_RESULT, _wrong_result(group[bad.trial], bad)) if bad else None
    return _RunOutcome(failure, checks, log, res, trace)


def _run(binary: Path, io: emulator_io.IoFiles, folder: Path, settings: EmulationSettings,
         stop: Optional[threading.Event]) -> sandbox.SandboxResult:
    folder.mkdir(parents=True, exist_ok=True)
    # CPU time and address space are per rank process; fiber stacks are mapped lazily
    limits = sandbox.Limits(wall_s=settings.timeout_s, cpu_s=int(settings.timeout_s) + 5,
                            address_space_bytes=settings.address_space_bytes, file_size_bytes=16 << 20,
                            memory_bytes=settings.memory_bytes, work_bytes=64 << 20)
    return sandbox.run([str(binary), *map(str, io.fds)], workdir=folder, limits=limits, pass_fds=io.fds,
                       view=(binary.parent,), stop=stop)


def probe_tile_dependence(binary: Path, group: Sequence[ReferenceCase], *, spec: KernelSpec, pattern: Pattern,
                          folder: Path, settings: EmulationSettings,
                          stop: Optional[threading.Event] = None) -> tuple[float, str, float]:
    """The dependence probe: ``group`` run twice more (same inputs, fresh processes: the candidate
    cannot tell them from a check) with noise added to every GEMM tile's result, positive in one
    run and of random sign in the other. Returns (the share of output elements that no longer
    match the reference in either run, log, seconds). Elements whose reference is within the
    absolute tolerance of zero (4 atol: a norm weight near zero, say) could not show a change and are left
    out. A run that fails with perturbed tiles depends on them (share 1.0)."""
    case = group[0]
    changed: Optional[np.ndarray] = None
    outputs = [(call, r, slot, tf) for call, c in enumerate(group, start=1) for r, rd in enumerate(c.ranks)
               for slot, tf in enumerate(rd.outputs)]
    tols = [tolerance(spec, pattern, group[call - 1], r, slot) for call, r, slot, _ in outputs]
    refs = [as_float32(tf.path, tf.dtype, tf.shape).astype(np.float64).ravel() for *_, tf in outputs]
    exacts = [exact_of(group[call - 1].ranks[r], slot) for call, r, slot, _ in outputs]
    visible = np.concatenate([np.abs(ref) > 4 * tol.atol for ref, tol in zip(refs, tols)])
    logs, wall = [], 0.0
    for mode in (1, 2):
        with _io_files(group, spec, pattern, settings, perturb=mode) as io:
            res = _run(binary, io, folder / f"mode{mode}", settings, stop)
            wall += res.wall_s
            logs.append(f"$ emu world={case.world} shape={case.shape.name} calls={len(group)} "
                        f"(tile dependence probe {mode})\n{res.output}")
            if _classify(res, "probe") or io.red_zone_breach():
                logs.append("probe: the run failed with perturbed tiles, so it depends on them")
                return 1.0, "\n".join(logs), wall
            mask = np.concatenate([_mismatch(io, call, r, slot, tf, ref, tol, exact)
                                   for (call, r, slot, tf), ref, tol, exact in zip(outputs, refs, tols, exacts)])
        changed = mask if changed is None else changed | mask
    if not visible.any():
        visible = np.ones_like(visible)
    seen = changed[visible] if changed is not None else np.ones(1, dtype=bool)
    share = float(seen.mean()) if seen.size else 1.0
    logs.append(f"probe: {int(seen.sum())} of {seen.size} output elements (|reference| > 4 atol) changed with "
                "perturbed tiles")
    return share, "\n".join(logs), wall


def _mismatch(io: emulator_io.IoFiles, call: int, rank: int, slot: int, ref_tf, ref: np.ndarray, tol,
              exact: Optional[np.ndarray]) -> np.ndarray:
    """Which elements of one output miss the reference and its float64 run (flat boolean masks)."""
    out = decode(np.frombuffer(io.output(rank, call, slot), dtype=np.uint8), ref_tf.dtype, ref_tf.shape)
    return ~_error(out.ravel(), ref, tol.atol, tol.rtol, None if exact is None else exact.ravel())[1]


def _probe_group(groups: Sequence[Sequence[ReferenceCase]], traces: Sequence[RunTrace]) -> Optional[int]:
    """The run the observed point reads (largest world, then largest shape), if its code used the tile."""
    best = max(range(len(traces)), key=lambda i: (traces[i].world, sum(traces[i].dims.values())), default=None)
    if best is None or not any(r.get("mma.calls", 0) for r in traces[best].ranks):
        return None
    return best


def emulate(source: str, *, spec: KernelSpec, pattern: Pattern, cases: Sequence[ReferenceCase], work_dir: Path,
            cache_dir: Path, settings: EmulationSettings = EmulationSettings(),
            canary: Optional[Callable[[], bool]] = None, check_object: bool = True,
            stop: Optional[threading.Event] = None, probe: bool = True) -> EmulationOutcome:
    """Compile once, run every (world, shape) group; stop at the first failing one.

    ``canary`` runs a known-good candidate through this same tier and says whether it passed: a
    result that looks like a harness fault is the candidate's unless the canary fails too.
    ``check_object=False`` skips the compiled-object checks: only for cuco's defence-in-depth
    tests, which show the sandbox holds on its own; the evaluator never passes it. ``probe=False``
    skips the tile dependence probe (it never changes the verdict, only the score: sweeps that
    check verdicts leave it out). Setting ``stop``
    (the caller no longer needs the verdict) ends the stage early with a ``STOPPED`` outcome."""
    build = shim_build.compile_emulator(source, work_dir / "build", dtype_code=spec.dtype.code, cache_dir=cache_dir,
                                        check_object=check_object, stop=stop)
    seconds = {"emulate_compile": build.seconds}
    if stop is not None and stop.is_set():
        return STOPPED
    if not build.ok:
        return EmulationOutcome(build.status, build.reason, log=trim_log(build.log), seconds=seconds)
    checks: list[RankCheck] = []
    logs, traces = [], []
    isolated, isolation = True, ""
    groups = group_cases(cases)
    for i, group in enumerate(groups):
        out = run_group(build.binary, group, spec=spec, pattern=pattern, folder=work_dir / f"run{i}",
                        settings=settings, stop=stop)
        if stop is not None and stop.is_set():
            return STOPPED
        isolated = isolated and out.result.network_isolated
        isolation = out.result.isolation.describe()
        key = f"emulate_w{group[0].world}"
        seconds[key] = seconds.get(key, 0.0) + out.result.wall_s
        logs.append(out.log)
        checks.extend(out.checks)
        failure = out.failure
        if out.result.returncode == EXIT_HARNESS and not out.result.timed_out:
            failure = _harness_fault(out.result, group[0], canary)
        if failure:
            return EmulationOutcome(failure[0], failure[1], tuple(checks), trim_log("\n".join(logs)), seconds)
        traces.append(out.trace)
    dependence = None
    probe_at = _probe_group(groups, traces) if probe else None
    if probe_at is not None:
        dependence, log, wall = probe_tile_dependence(build.binary, groups[probe_at], spec=spec, pattern=pattern,
                                                      folder=work_dir / "probe", settings=settings, stop=stop)
        if stop is not None and stop.is_set():
            return STOPPED
        seconds["emulate_probe"] = wall
        logs.append(log)
    return EmulationOutcome(Status.OK, "", tuple(checks), trim_log("\n".join(logs)), seconds, isolated, isolation,
                            tuple(traces), dependence)


def _harness_fault(res: sandbox.SandboxResult, case: ReferenceCase,
                   canary: Optional[Callable[[], bool]]) -> tuple[Status, str]:
    """Exit code 5 is the harness's own failure code, but the candidate shares its processes: it is
    the candidate's failure unless a known-good canary fails the same tier right after."""
    last = (res.output.strip().splitlines() or [""])[-1][:300]
    if canary is not None and not canary():
        raise InfrastructureError(f"the emulator harness failed (world {case.world}, shape {case.shape.name}) and a "
                                  f"known-good canary failed right after: {last}",
                                  "check the machine (memory, /dev/shm, process limits); report it as a cuco bug "
                                  "if it persists")
    return Status.CRASHED, (f"the emulator's harness stopped with its error code ({last}) while running this "
                            "candidate" + (", and a known-good canary passed right after" if canary else ""))
