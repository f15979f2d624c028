"""``cuco init``: scaffold a spec folder (spec.py, reference.py, README.md) from a torch
reference or from a host-driven ``.cu``, then load the written spec to prove it is valid."""

from __future__ import annotations

import ast
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cuco import init_workload
from cuco.cache_dir import default_cache_dir
from cuco.native_family import native_family
from cuco.init_templates import EXAMPLES, TODO_REFERENCE, TODO_SHAPES, readme_text, skeleton_reference, spec_text
from kernels.seed_analysis import analyse_seed, choose_pattern, function_arity
from cuco.semantic_gate import remember_match
from cuco.spec_loader import load_spec
from design_space import ConfigError, CucoError, KernelSpec, SpecError, get_pattern

# The contract of examples/allgather_gemm/reference.py: positional arguments of each function.
_SIGNATURES = {"inputs": (5, "make_inputs(dims, rank, world, dtype, gen) -> dict"),
               "reference": (3, "reference(inputs, dims, group) -> dict")}


@dataclass(frozen=True)
class InitResult:
    out: Path
    spec: KernelSpec
    pattern: str
    why: str
    files: tuple[str, ...]
    todo: tuple[str, ...]
    analysis: tuple[str, ...] = ()


def run_init(*, out: Path, from_reference: Optional[Path], from_seed: Optional[Path], reference: str, inputs: str,
             pattern: Optional[str], name: Optional[str], force: bool, console, traced: bool = False) -> InitResult:
    if (from_reference is None) == (from_seed is None):
        raise ConfigError("cuco init needs exactly one source",
                          "pass --from-reference my_ref.py or --from-seed host_program.cu")
    if traced and (from_reference is None or pattern is not None):
        raise ConfigError("--traced generates a pattern from a reference's trace",
                          "pass it with --from-reference FILE, without --pattern")
    if from_reference is not None:
        result = init_from_reference(from_reference, out, reference=reference, inputs=inputs, pattern=pattern,
                                     name=name, force=force, traced=traced)
    else:
        result = init_from_seed(from_seed, out, pattern=pattern, name=name, force=force)  # type: ignore[arg-type]
    _print(result, console)
    return result


def init_from_reference(path: Path, out: Path, *, reference: str = "reference", inputs: str = "make_inputs",
                        pattern: Optional[str] = None, name: Optional[str] = None, force: bool = False,
                        traced: bool = False) -> InitResult:
    """A spec folder from a torch reference. The family is the one whose canonical reference gives
    the same outputs on the reference's own inputs (cuco/semantic_check.py), never a guess from
    names; when none does, the error says why and nothing is written. ``traced``: no family, a
    baseline generated from the reference's trace (cuco/init_traced.py)."""
    source = _read(path, "--from-reference")
    try:
        arity = function_arity(source)
        form = init_workload.form_of(source, reference, inputs, arity)
    except SyntaxError as e:
        raise SpecError(f"{path} is not valid Python: {e.msg} (line {e.lineno})", "fix the file so it parses") from None
    if traced:
        from cuco.init_traced import init_traced  # noqa: PLC0415

        spec_name = _spec_name(name, path)
        files, why = init_traced(path, out, source=source, arity=arity, reference=reference, inputs=inputs,
                                 name=spec_name, force=force, check_out=_check_out)
        spec = _load(out)
        return InitResult(out, spec, spec.pattern, why, tuple(files), ())
    if form in init_workload.WORKLOAD_FORMS:
        return _init_workload(path, out, form, reference, inputs, pattern, name, force)
    for role, func in (("reference", reference), ("inputs", inputs)):
        _check_function(path, arity, role, func)
    chosen, why = native_family(path, source, reference, inputs, pattern)
    spec_name = _spec_name(name, path)
    _check_out(out, force)
    todo_shapes = _write_spec(out, spec_name, chosen, origin=path.name, reference=f"reference:{reference}",
                              inputs=f"reference:{inputs}", seed_kernel=None)
    _copy(path, out / "reference.py")
    todo = ([TODO_SHAPES] if todo_shapes else []) + [
        f"reference.py imports {m}, which sits beside {path.name}: copy it into {out} too" for m in _local_imports(path)]
    (out / "README.md").write_text(readme_text(name=spec_name, pattern=get_pattern(chosen), origin=path.name,
                                               why=why, out=out, todo=todo, seed_kernel=None, analysis=[]))
    return InitResult(out, _load(out), chosen, why, ("spec.py", "reference.py", "README.md"), tuple(todo))


def _init_workload(path: Path, out: Path, form: str, reference: str, inputs: str, pattern: Optional[str],
                   name: Optional[str], force: bool) -> InitResult:
    named = (reference, inputs) if form == "function" else (None, None)
    verdict = init_workload.verdict_or_error(path, reference=named[0], inputs=named[1], pattern=pattern)
    spec_name = _spec_name(name, path)
    existed = out.exists()
    _check_out(out, force)
    # written and run at other sizes in a staging folder first: a refusal leaves --out as it was
    stage = Path(tempfile.mkdtemp(prefix="cuco-init-"))
    try:
        files = init_workload.write_workload_spec(stage, name=spec_name, path=path, verdict=verdict,
                                                  reference=named[0], inputs=named[1])
        resized = init_workload.fit_workload_sizes(stage, path, verdict, named[0], named[1])
    except CucoError:
        if not existed:
            shutil.rmtree(out, ignore_errors=True)
        raise
    else:
        for f in files:
            shutil.copyfile(stage / f, out / f)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    chosen, why = verdict.match.family, init_workload.how_it_matched(verdict)
    if resized:
        why += f"; at other sizes the Model is built again: {resized}"
    todo = [f"reference.py imports {m}, which sits beside {path.name}: copy it into {out} too"
            for m in _local_imports(path)]
    spec = _load(out)
    if not todo:  # checked as it stands: evolve's gate need not run the same checks again
        remember_match(spec, default_cache_dir())
    (out / "README.md").write_text(readme_text(name=spec_name, pattern=get_pattern(chosen), origin=path.name,
                                               why=why, out=out, todo=todo, seed_kernel=None, analysis=[]))
    return InitResult(out, spec, chosen, why, (*files, "README.md"), tuple(todo))


def init_from_seed(path: Path, out: Path, *, pattern: Optional[str] = None, name: Optional[str] = None,
                   force: bool = False) -> InitResult:
    source = _read(path, "--from-seed")
    analysis = analyse_seed(source, str(path))
    chosen, why = choose_pattern(analysis.comm_calls(), source, path.name, pattern)
    spec_name = _spec_name(name, path)
    _check_out(out, force)
    seed_file = path.name if path.name not in ("spec.py", "reference.py", "README.md") else f"seed_{path.name}"
    todo_shapes = _write_spec(out, spec_name, chosen, origin=path.name, reference="reference:reference",
                              inputs="reference:make_inputs", seed_kernel=seed_file)
    _copy(path, out / seed_file)
    example_ref = EXAMPLES / chosen / "reference.py"
    if example_ref.is_file():
        shutil.copyfile(example_ref, out / "reference.py")
    else:
        (out / "reference.py").write_text(skeleton_reference(get_pattern(chosen)))
    todo = ([TODO_SHAPES] if todo_shapes else []) + ([] if example_ref.is_file() else [TODO_REFERENCE])
    lines = analysis.summary_lines()
    (out / "README.md").write_text(readme_text(name=spec_name, pattern=get_pattern(chosen), origin=path.name,
                                               why=why, out=out, todo=todo, seed_kernel=seed_file,
                                               analysis=lines))
    return InitResult(out, _load(out), chosen, why, ("spec.py", "reference.py", "README.md", seed_file),
                      tuple(todo), tuple(lines))


def _read(path: Path, option: str) -> str:
    if not path.is_file():
        raise ConfigError(f"no file at {path}", f"pass an existing file to {option}")
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a text file", f"pass a source file to {option}") from None


def _check_function(path: Path, arity: dict[str, tuple[int, int]], role: str, func: str) -> None:
    option = "--reference" if role == "reference" else "--inputs"
    wanted, signature = _SIGNATURES[role]
    if func not in arity:
        defined = ", ".join(arity) or "none"
        raise SpecError(f"{path} defines no function {func!r} (functions defined: {defined})",
                        f"name the {role} function with {option} FUNC; it must be {signature}")
    low, high = arity[func]
    if not (low <= wanted and (high == -1 or high >= wanted)):
        raise SpecError(f"{path}:{func} takes {low}..{high if high >= 0 else 'any'} positional arguments, not {wanted}",
                        f"give it the signature {signature} (as in examples/allgather_gemm/reference.py)")


def _local_imports(path: Path) -> list[str]:
    """Top-level modules the reference imports from its own folder (not copied with it)."""
    tops = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    here = path.parent
    return sorted(m for m in tops if (here / f"{m}.py").is_file() or (here / m / "__init__.py").is_file())


def _spec_name(name: Optional[str], path: Path) -> str:
    if name is not None:
        if not re.fullmatch(r"[A-Za-z_][\w-]*", name):
            raise ConfigError(f"invalid spec name {name!r}", "use letters, digits, '_' and '-', starting with a letter")
        return name
    stem = re.sub(r"[^\w-]", "_", path.stem)
    return stem if re.fullmatch(r"[A-Za-z_][\w-]*", stem) else f"spec_{stem}"


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file", "pass a folder path to --out")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConfigError(f"--out {out} is not empty", "choose an empty or new folder, or pass --force to "
                          "overwrite spec.py, reference.py and README.md there")
    out.mkdir(parents=True, exist_ok=True)


def _write_spec(out: Path, name: str, pattern: str, *, origin: str, reference: str, inputs: str,
                seed_kernel: Optional[str]) -> bool:
    """Write spec.py; True when its shapes are TODO placeholders."""
    text, todo = spec_text(name=name, pattern=get_pattern(pattern), origin=origin, reference=reference,
                           inputs=inputs, seed_kernel=seed_kernel)
    ast.parse(text)  # generated code must at least parse; a failure here is our bug
    (out / "spec.py").write_text(text)
    return todo


def _copy(src: Path, dst: Path) -> None:
    if src.resolve() != dst.resolve():
        shutil.copyfile(src, dst)


def _load(out: Path) -> KernelSpec:
    """Prove the written spec is valid by loading it as every command will."""
    try:
        return load_spec(out)
    except SpecError as e:
        raise SpecError(f"the spec written to {out} does not load: {e.problem}",
                        f"edit {out / 'spec.py'} ({e.fix})") from None


def _print(r: InitResult, console) -> None:
    from cuco.shown_text import line, shown  # seed source text (stream names...) is data, never markup

    console.print(line(("cuco init", "bold"), f" {r.spec.name}: pattern ", (r.pattern, "bold"), f" ({r.why})"))
    for text in r.analysis:
        console.print(shown(f"  {text}"))
    console.print(shown(f"wrote {', '.join(str(r.out / f) for f in r.files)}"))
    worlds = ", ".join(map(str, r.spec.world_sizes))
    console.print(shown(f"spec loads: {len(r.spec.shapes)} shape(s) ({', '.join(s.name for s in r.spec.shapes)}), "
                        f"world sizes {worlds}, {r.spec.dtype.value} on {r.spec.hardware}"))
    for t in r.todo:
        console.print(line(("TODO", "yellow"), f" {t}"))
    console.print(shown(f"next: cuco space {r.out}   then   cuco evolve {r.out}"))
