"""The check ``cuco evolve`` makes before its first candidate: the spec's reference computes what
its family computes (cuco/semantic_check.py, on the reference's own inputs, then at the emulator's
shapes and draws around them: cuco/workload_sizes.py), so no candidate is spent on a semantic
mismatch. A spec whose reference is the family's canonical one needs no check;
any other is checked once per content (the verdict is kept under the cache, keyed by the spec and
its reference files)."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
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


def _size_problems(spec: KernelSpec) -> list[str]:
    cache = Path(tempfile.mkdtemp(prefix="cuco-sizes-"))
    try:
        return workload_sizes.size_problems(spec, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def require_semantics(spec: KernelSpec, cache_dir: Path) -> None:
    """Raise SpecError naming the mismatch when the spec's reference does not compute its family."""
    ref = reference_file(spec)
    canonical = EXAMPLES / spec.pattern / "reference.py"
    if ref is None or not canonical.is_file() or ref == canonical.resolve():
        # the family's own reference; a plugin pattern's (its spec's reference defines it); or one
        # cuco cannot locate (the reference run will say so)
        return
    inputs = reference_file(spec, "inputs") or ref
    key = _key(spec, [ref, inputs])
    memo = Path(cache_dir) / "semantics" / f"{key}.json"
    if memo.is_file():
        found = json.loads(memo.read_text())
    else:
        if inputs != ref:  # the probe reads one file: name the builder through the reference's module
            return
        verdict = check_workload(ref, reference=spec.reference.partition(":")[2],
                                 inputs=spec.inputs.partition(":")[2], families=[spec.pattern],
                                 native_dims=dict(spec.emulation_shapes[0].dims))
        found = {"match": verdict.match is not None, "why": "" if verdict.match else verdict.diagnosis()}
        if verdict.match:  # and at the shapes the emulator draws, not only the first one
            problems = _size_problems(spec)
            if problems:
                found = {"match": False, "why": workload_sizes.refusal(spec.pattern, problems),
                         "fix": workload_sizes.SIZES_FIX}
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(json.dumps(found))
    if not found["match"]:
        raise SpecError(f"spec {spec.name}: {found['why']}", found.get("fix") or (
            "fix the reference (cuco ran it and the family's canonical reference on the same inputs before spending "
            "any candidate), or use the family the reference does compute"))
