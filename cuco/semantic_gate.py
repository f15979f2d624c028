"""The check ``cuco evolve`` makes before its first candidate: the spec's reference computes what
its family computes (cuco/semantic_check.py, on the reference's own inputs, then at the emulator's
shapes and draws around them: cuco/workload_sizes.py), so no candidate is spent on a semantic
mismatch. A spec whose reference is the family's canonical one needs no check;
any other is checked once per content (the verdict is kept under the cache, keyed by the spec and
its reference files; ``cuco init`` records its own, made by the same runs, so an evolve right after
it does not repeat them)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from cuco import workload_sizes
from cuco.semantic_check import EXAMPLES, check_workload
from design_space.errors import SpecError
from design_space.spec import KernelSpec


def reference_file(spec: KernelSpec, which: str = "reference") -> Optional[Path]:
    module = getattr(spec, which).partition(":")[0]
    for folder in spec.search_path:
        path = Path(folder) / f"{module.replace('.', '/')}.py"
        if path.is_file():
            return path.resolve()
    return None


def _key(spec: KernelSpec, files: list[Path]) -> str:
    h = hashlib.sha256(spec.model_dump_json().encode())
    for f in files:
        h.update(f.read_bytes())
    for f in sorted(Path(files[0]).parent.glob("*.py")):  # helpers beside the reference are part of it
        h.update(f.read_bytes())
    return h.hexdigest()[:24]


def _memo(spec: KernelSpec, cache_dir: Path) -> Optional[tuple[Path, Path, Path]]:
    """Where the verdict on ``spec``'s reference is kept, with its reference and input-builder files
    (None: a spec that needs no check)."""
    ref = reference_file(spec)
    canonical = EXAMPLES / spec.pattern / "reference.py"
    if ref is None or not canonical.is_file() or ref == canonical.resolve():
        # the family's own reference; a plugin pattern's (its spec's reference defines it); or one
        # cuco cannot locate (the reference run will say so)
        return None
    builder = reference_file(spec, "inputs") or ref
    return Path(cache_dir) / "semantics" / f"{_key(spec, [ref, builder])}.json", ref, builder


def remember_match(spec: KernelSpec, cache_dir: Path) -> None:
    """Record that ``spec``'s reference computes its family, as ``cuco init`` found by the same runs
    the gate makes (the semantic check, then the emulator's shapes at every emulation world size),
    so the first ``cuco evolve`` does not repeat them; any edit to the files changes the key."""
    found = _memo(spec, cache_dir)
    if found is not None:
        found[0].parent.mkdir(parents=True, exist_ok=True)
        found[0].write_text(json.dumps({"match": True, "why": "", "by": "cuco init"}))


def require_semantics(spec: KernelSpec, cache_dir: Path) -> None:
    """Raise SpecError naming the mismatch when the spec's reference does not compute its family."""
    located = _memo(spec, cache_dir)
    if located is None:
        return
    memo, ref, builder = located
    if memo.is_file():
        found = json.loads(memo.read_text())
    else:
        if builder != ref:  # the probe reads one file: name the builder through the reference's module
            return
        verdict = check_workload(ref, reference=spec.reference.partition(":")[2],
                                 inputs=spec.inputs.partition(":")[2], families=[spec.pattern],
                                 native_dims=dict(spec.emulation_shapes[0].dims))
        found = {"match": verdict.match is not None, "why": "" if verdict.match else verdict.diagnosis()}
        if verdict.match:  # and at the shapes the emulator draws, not only the first one
            problems = workload_sizes.size_problems(spec)
            if problems:
                found = {"match": False, "why": workload_sizes.refusal(spec.pattern, problems),
                         "fix": workload_sizes.SIZES_FIX}
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(json.dumps(found))
    if not found["match"]:
        raise SpecError(f"spec {spec.name}: {found['why']}", found.get("fix") or (
            "fix the reference (cuco ran it and the family's canonical reference on the same inputs before spending "
            "any candidate), or use the family the reference does compute"))
