"""``cuco export ID``: a stored candidate as a standalone folder that builds and runs without cuco:
its source, the comm runtime headers it includes, a host launcher, a build script, a PyTorch
custom op over the caller's torch.distributed group, the spec's reference with a checker, a
README and a manifest. The static pieces live in cuco/export_files; this module picks and fills them.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from design_space import Candidate, ConfigError, Evaluation, KernelSpec, RunInfo, SpecError, Status, StoreError, Tier
from design_space import get_pattern, get_profile
from evaluator.toolchain import RUNTIME_DIR
from cuco.browse import _find_store
from cuco.export_reference import export_reference
from cuco.shown_text import shown, visible

FILES = Path(__file__).with_name("export_files")
# Runtime headers that only cuco's own harnesses compile (the CPU emulator, the GPU harness's
# co-residency check): a GPU build of the export never opens them.
HARNESS_ONLY = frozenset({"cuco_comm_cpu.h", "cuco_launch_check.h"})
PACKAGE_FILES = {"package_init.py": "__init__.py", "op.py": "op.py", "native.py": "native.py",
                 "signature.py": "signature.py"}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([A-Za-z0-9_.]+)"', re.M)
BACKEND_NOTES = {
    "lsa": "The design uses peer loads and stores (lsa): every rank's GPU must reach every other's memory "
           "(one NVLink or PCIe peer-to-peer domain).",
    "multimem": "The design uses NVLink SHARP multicast (multimem): Hopper or newer GPUs on an NVSwitch, where "
                "NCCL reports multimem support; elsewhere the runtime falls back to peer loads and stores.",
    "gin": "The design uses GPU-initiated networking (gin): NCCL must report a GIN type (a NIC with GIN "
           "support), as across nodes.",
    "copy_engine": "The design uses copy-engine peer copies: every peer's buffers must be addressable from "
                   "this process (one node).",
    "host_nccl": "The design is host-driven (NCCL host collectives launched from cuco_run).",
}

# What the README's example layer is called, by pattern (else tensor-parallel): the parallelism
# a user splits the model by when this kernel sits in it.
LAYER_KINDS = {
    "ring_attention": "sequence-parallel", "ulysses_seq_to_head": "sequence-parallel",
    "ulysses_head_to_seq": "sequence-parallel", "reducescatter_rmsnorm": "sequence-parallel",
    "moe_dispatch_combine": "expert-parallel", "moe_router_swiglu": "expert-parallel",
    "kv_cache_transfer": "prefill/decode-disaggregated",
}


@dataclass(frozen=True)
class _Stored:
    cand: Candidate
    ev: Optional[Evaluation]
    run: RunInfo
    spec: KernelSpec


def run_export(candidate: str, *, run: Optional[str], db: Optional[str], out: Optional[Path], console,
               force: bool = False) -> Path:
    """Write the export of ``candidate`` (an id or a unique prefix) and return its folder. Only an
    ``ok`` candidate exports unless ``force``; the folder must be new, empty, or an earlier export
    of the same candidate. Raises ``CucoError`` subclasses whose messages name the fix."""
    cand, ev, info = _load(candidate, run, db)
    _require_exportable(cand, ev, force)
    st = _Stored(cand, ev, info, _spec(info))
    sig = _signature(st.spec.pattern)
    target = _target(out, st.cand)
    package = package_name(st.spec)
    headers = runtime_headers(st.cand.source)
    target.mkdir(parents=True, exist_ok=True)
    _write_sources(target, st, package, headers)
    _write_package(target / package, st, sig, package)
    carried = export_reference(st.spec)
    for source, name in ((carried.reference, "reference.py"), (carried.user, "user_reference.py")):
        if source is not None:
            shutil.copyfile(source, target / name)
    shutil.copyfile(FILES / "check.py", target / "check.py")
    manifest = _manifest(st, package)
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (target / "README.md").write_text(_readme(st, sig, package, headers, manifest, carried.note))
    console.print(shown(f"exported candidate {st.cand.id} ({manifest['status']}, {manifest['speedup_label']}) "
                        f"of run {st.run.name!r} to {target}"))
    console.print(shown(f"build it: {target / 'build.sh'}; then see {target / 'README.md'}"))
    return target


def _load(candidate: str, run: Optional[str], db: Optional[str]) -> tuple[Candidate, Optional[Evaluation], RunInfo]:
    with _find_store(candidate, run, db) as store:
        cand = store.get_candidate(candidate)
        return cand, store.evaluation(cand.id), store.get_run(store.run_of(cand.id))


def _spec(info: RunInfo) -> KernelSpec:
    try:
        spec = KernelSpec.model_validate_json(info.spec_json)
    except ValueError as e:  # pydantic's ValidationError is one
        raise StoreError(f"run {info.name!r} stores a spec this cuco cannot read ({str(e).splitlines()[0]})",
                         "export from a run written by this cuco version, or re-run `cuco evolve` on the spec") from e
    return spec


def _require_exportable(cand: Candidate, ev: Optional[Evaluation], force: bool) -> None:
    if force or (ev is not None and ev.status is Status.OK):
        return
    why = ("was never evaluated" if ev is None else
           f"failed: {ev.status.value} at stage {ev.stage.value}" + (f" ({ev.reason})" if ev.reason else ""))
    raise ConfigError(f"candidate {cand.id} {why}",
                      "export an ok candidate (`cuco leaderboard` lists them), or pass --force to export this one "
                      "anyway (its README then says it failed and why)")


def _signature_module():
    """cuco/export_files/signature.py, the same file the export ships (it imports nothing of cuco)."""
    name = "cuco._export_signature"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FILES / "signature.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module  # dataclasses look their module up while the file runs
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[name]


_SIGNATURES = _signature_module()


def _signature(pattern: str):
    sig = _SIGNATURES.SIGNATURES.get(pattern)
    if sig is None:
        raise SpecError(f"cuco export has no op signature for pattern {pattern!r}",
                        f"export a candidate of a built-in pattern ({', '.join(sorted(_SIGNATURES.SIGNATURES))}), "
                        "or use its source with your own launcher (`cuco show ID --source`)")
    return sig


def package_name(spec: KernelSpec) -> str:
    """The Python package and torch op namespace: ``cuco_<spec name>`` as an ASCII identifier."""
    return "cuco_" + re.sub(r"[^a-z0-9_]", "_", spec.name.lower())


def _previous_export(folder: Path) -> Optional[str]:
    try:
        data = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return data.get("candidate_id") if isinstance(data, dict) and data.get("exported_by") == "cuco export" else None


def _target(out: Optional[Path], cand: Candidate) -> Path:
    short = re.sub(r"[^A-Za-z0-9_-]", "", cand.id)[:8] or "candidate"
    target = Path(out) if out is not None else Path(f"cuco-export-{short}")
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} exists and is not a folder", "pass --out with a new or empty folder")
    if target.is_dir() and any(target.iterdir()):
        previous = _previous_export(target)
        if previous != cand.id:
            held = f" (it holds the export of candidate {previous})" if previous else ""
            raise ConfigError(f"{target} is not empty and is not an earlier export of candidate {cand.id}{held}",
                              "pass --out with a new or empty folder, or remove that one")
    return target


def runtime_headers(source: str) -> list[str]:
    """The runtime headers a GPU build of ``source`` opens: cuco_comm.h (the launcher's too) and
    what the source includes, transitively; never the harness-only ones."""
    wanted = ["cuco_comm.h", *_INCLUDE.findall(source)]
    found: list[str] = []
    while wanted:
        name = wanted.pop(0)
        path = RUNTIME_DIR / name
        if name in found or name in HARNESS_ONLY or not path.is_file():
            continue
        found.append(name)
        wanted += _INCLUDE.findall(path.read_text())
    return sorted(found)


def _write_sources(target: Path, st: _Stored, package: str, headers: list[str]) -> None:
    (target / "kernel.cu").write_bytes(st.cand.source.encode("utf-8"))
    runtime = target / "runtime"
    runtime.mkdir(exist_ok=True)
    for name in headers:
        shutil.copyfile(RUNTIME_DIR / name, runtime / name)
    shutil.copyfile(FILES / "launcher.cu", target / "launcher.cu")
    text = (FILES / "build.sh").read_text()
    for key, value in {"@PACKAGE@": package, "@ARCH@": get_profile(st.spec.hardware).arch,
                       "@DTYPE_NAME@": st.spec.dtype.value}.items():
        text = text.replace(key, value)
    (target / "build.sh").write_text(text)
    (target / "build.sh").chmod(0o755)


def _write_package(folder: Path, st: _Stored, sig, package: str) -> None:
    folder.mkdir(exist_ok=True)
    for src, dst in PACKAGE_FILES.items():
        shutil.copyfile(FILES / src, folder / dst)
    stale = folder / f"lib{package}.so"  # an earlier export's build: headers or launcher may differ
    if stale.exists():
        stale.unlink()
    (folder / "config.json").write_text(json.dumps(_config(st.spec, sig, package), indent=2) + "\n")


def _config(spec: KernelSpec, sig, package: str) -> dict[str, Any]:
    world = spec.emulation_world_sizes[0]
    pattern = get_pattern(spec.pattern)
    head = pattern.full_dims(spec.headline.at(world))  # an optional flag the spec leaves out, written in
    carried = set(sig.from_inputs(dict(zip([n for n, _ in sig.inputs], sig.input_shapes(head, world))), world))
    tol = spec.tolerances[spec.dtype]
    return {
        "namespace": package, "pattern": spec.pattern, "library": f"lib{package}.so", "dtype": spec.dtype.value,
        "flags": {f: int(head[f]) for f in sig.flags},
        # dims neither an input shape nor a flag carries (e.g. MoE's routing skew, which the kernels
        # do not read): the headline shape's value, so ctx.dims is always complete
        "fixed": {d: int(head[d]) for d in sig.dims if d not in carried and d not in sig.flags},
        "tolerance": {"atol": tol.atol, "rtol": tol.rtol},
        "shapes": {"emulation": [_shape(pattern, s, spec.emulation_world_sizes) for s in spec.emulation_shapes],
                   "sweep": [_shape(pattern, s, spec.world_sizes) for s in spec.shapes]},
        "world_sizes": list(spec.world_sizes),
    }


def _shape(pattern, case, worlds) -> dict[str, Any]:
    """A shape as check.py reads it, every dim written in; a dim of the world size (``"64*n"``)
    also as its value at each of the spec's world sizes, so the package needs no expression parser
    of its own."""
    out = {**case.model_dump(), "dims": pattern.full_dims(case.dims)}
    if case.scales:
        out["dims_by_world"] = {str(w): pattern.full_dims(case.at(w)) for w in worlds}
    return out


def _speedup_label(ev: Optional[Evaluation]) -> str:
    if ev is None or ev.speedup is None:
        return "no speedup stored"
    return f"{ev.speedup:.2f}x ({ev.timing_source.value})"


def _manifest(st: _Stored, package: str) -> dict[str, Any]:
    import cuco

    ev = st.ev
    return {
        "exported_by": "cuco export", "candidate_id": st.cand.id, "run": st.run.name, "spec_name": st.spec.name,
        "pattern": st.spec.pattern, "point": st.cand.point.key() if st.cand.point else None,
        "observed_point": ev.observed_point if ev else None,
        "status": ev.status.value if ev else "not_evaluated", "stage": ev.stage.value if ev else None,
        "reason": ev.reason if ev else "", "forced": not (ev is not None and ev.status is Status.OK),
        "speedup": ev.speedup if ev else None, "timing_source": ev.timing_source.value if ev and ev.timings else None,
        "speedup_label": _speedup_label(ev), "hardware": st.spec.hardware, "arch": get_profile(st.spec.hardware).arch,
        "dtype": st.spec.dtype.value, "comm_backend": "nccl", "package": package, "cuco_version": cuco.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


# --- the README -------------------------------------------------------------------------------

def _fence(text: str, ticks: int) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(ticks, longest + 1)


def _code(text: object) -> str:
    """Stored text (run names, points, ids) as one inline code span: control characters visible,
    on one line, and a fence no backtick run inside can close."""
    flat = " ".join(visible(str(text)).split())
    fence = _fence(flat, 1)
    return f"{fence} {flat} {fence}"


def _block(text: object) -> str:
    """Stored text (a failure reason, evaluation flags) as a fenced block it cannot break out of."""
    body = visible("\n".join(text) if isinstance(text, (list, tuple)) else str(text))
    fence = _fence(body, 3)
    return f"{fence}text\n{body}\n{fence}"


def _seconds(s: float) -> str:
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def _timings(ev: Optional[Evaluation]) -> list[dict]:
    return [{"shape": t.shape, "world": t.world, "source": t.source.value, "seconds": _seconds(t.seconds),
             "bound": _seconds(t.bound_seconds), "baseline": _seconds(t.baseline_seconds),
             "speedup": f"{t.speedup:.2f}x", "sol": f"{t.sol_fraction:.0%}"} for t in (ev.timings if ev else ())]


def _example(sig, spec: KernelSpec) -> dict[str, Any]:
    """The README's layer: weights are module parameters, the other inputs forward()'s arguments;
    flags go by their op argument names (``flag_arg``), which may differ from their dims'."""
    names = [n for n, _ in sig.inputs]
    acts = [n for n in names if n not in sig.weights]
    world = spec.emulation_world_sizes[0]
    pattern = get_pattern(spec.pattern)
    flag_defaults = {sig.flag_arg(f): int(pattern.full_dims(spec.headline.at(world))[f]) for f in sig.flags}
    return {
        "class_name": "".join(p.title() for p in spec.pattern.split("_")) + "Layer",
        "layer_kind": LAYER_KINDS.get(spec.pattern, "tensor-parallel"), "layer_doc": _layer_doc(sig),
        "flags": {sig.flag_arg(f): meaning + ("" if sig.flag_arg(f) == f else f" (the spec's dim `{f}`)")
                  for f, meaning in sig.flags.items()},
        "init_args": "".join(f"{w}, " for w in sig.weights) + "".join(f"{f}={v}, " for f, v in flag_defaults.items()),
        "activation_args": ", ".join(acts),
        "call_args": "".join(f"self.{n}, " if n in sig.weights else f"{n}, " for n in names)
                     + "".join(f"self.{f}, " for f in flag_defaults),
        "weight_call": ", ".join(f'inputs["{w}"]' for w in sig.weights),
        "activation_call": ", ".join(f'inputs["{a}"]' for a in acts),
        "run_args": "".join(f"{n}, " for n in names),
        "example_dims": repr(pattern.full_dims(spec.emulation_shapes[0].at(world))),
        "input_shapes": dict(sig.inputs), "flag_defaults": flag_defaults,
    }


def _layer_doc(sig) -> str:
    if not sig.weights:
        return "The exported kernel inside a layer: no weights; forward() takes this rank's tensors."
    # some weights are replicated (an RMSNorm gamma, a router): only a /n in the shape marks a shard
    return "The exported kernel inside a layer: weights are parameters (this rank's shards; whole if no /n)."


def _readme(st: _Stored, sig, package: str, headers: list[str], manifest: dict, reference_note: str) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(str(FILES)), autoescape=False, keep_trailing_newline=True,
                      undefined=StrictUndefined)
    env.filters.update(code=_code, block=_block, text=lambda t: " ".join(visible(str(t)).split()))
    ev, pattern = st.ev, get_pattern(st.spec.pattern)
    torch_dtype = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[st.spec.dtype.value]
    point, tol = st.cand.point, st.spec.tolerances[st.spec.dtype]
    return env.get_template("README.md.j2").render(
        package=package, candidate_id=st.cand.id, run=st.run.name, spec_name=st.spec.name, pattern=st.spec.pattern,
        ok=ev is not None and ev.status is Status.OK, status=manifest["status"], stage=manifest["stage"] or "none",
        reason=(ev.reason or "(no reason stored)") if ev else "it was never evaluated",
        spec_description=st.spec.description or "(the spec has no description)",
        pattern_description=pattern.description, pattern_notes=pattern.notes,
        inputs=sig.inputs, outputs=sig.outputs, weights=sig.weights, dtype=st.spec.dtype.value,
        torch_dtype=torch_dtype, reference_note=reference_note, point=point.key() if point else "not declared",
        observed_point=ev.observed_point if ev else None, origin=st.cand.origin.label(),
        generation=st.cand.generation, speedup_label=manifest["speedup_label"],
        emulated_worlds=", ".join(map(str, ev.checked_worlds(Tier.EMULATED))) if ev else "",
        verified_worlds=", ".join(map(str, ev.checked_worlds(Tier.VERIFIED))) if ev else "",
        timings=_timings(ev), hardware=st.spec.hardware, eval_flags=list(ev.flags) if ev else [],
        arch=manifest["arch"], backend_note=BACKEND_NOTES.get(point.backend.value, "") if point else "",
        atol=tol.atol, rtol=tol.rtol, headers=headers,
        cuco_version=manifest["cuco_version"], date=manifest["date"], **_example(sig, st.spec))

