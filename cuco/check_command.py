"""``cuco check SPEC FILE.cu``: one source (a hand-written kernel, an edited render) through the same
evaluator cascade as ``cuco evolve``, with its verdict, build features, per-rank checks and score.
``--run`` stores it in a run of the spec's database, where ``cuco show`` and ``cuco evolve`` see it."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from candidates_db import Store
from design_space import (
    Candidate, ConfigError, DesignPoint, DesignPointError, Evaluation, KernelSpec, Origin, OriginKind, RunInfo,
    RunStatus, Status, StoreError, Tier, get_pattern, get_profile,
)
from design_space.space import why_not_rendered
from cuco.report import build_table, timings_table
from cuco.shown_text import line, shown
from cuco.spec_loader import check_spec, load_spec


def run_check(spec_path: Path, file: Path, *, point: Optional[str], json_out: bool, run: Optional[str],
              db: Optional[str], hardware: Optional[str], console) -> int:
    """Evaluate ``file`` against the spec; 0 when its verdict is ok, 1 when it failed. Usage and
    configuration errors raise ``CucoError`` (the CLI prints one line and exits 2)."""
    from cuco.cache_dir import default_cache_dir
    from cuco.loop import spec_hash
    from evaluator.cascade import Evaluator, EvaluatorConfig

    if run is not None and ("/" in run or "\\" in run):
        raise ConfigError(f"--run takes a run name, not a folder: {run!r}",
                          "pass e.g. --run my_run, and --db RUN_DIR/cuco.db for another database")
    spec = _spec(spec_path, hardware)
    declared = _declared_point(point, spec, spec_path)
    source = _read(file)
    evaluator = Evaluator(spec, EvaluatorConfig(cache_dir=default_cache_dir()))  # checks the toolchain
    db = db or str(Path("runs") / spec.name / "cuco.db")  # where `cuco evolve SPEC` keeps its run
    target = _StoredRun.open(spec, run, db, spec_hash(spec)) if run else None
    try:
        cand = Candidate(generation=target.generation if target else 0, source=source, point=declared,
                         origin=Origin(kind=OriginKind.MANUAL, patch_type="check"))
        ev = evaluator.evaluate(cand)
        earlier = target.keep(cand, ev) if target else None
    finally:
        if target:
            target.store.close()
    if json_out:
        print(ev.model_dump_json(indent=2))
    else:
        for item in check_renderables(file, spec, cand, ev):
            console.print(item)
        if target:
            console.print(shown(stored_line(earlier, cand, target.name, db)))
    return 0 if ev.status is Status.OK else 1


def _spec(spec_path: Path, hardware: Optional[str]) -> KernelSpec:
    spec = load_spec(spec_path)
    if hardware is None:
        return spec
    get_profile(hardware)  # an unknown name: one line naming the grammar
    spec = KernelSpec.model_validate({**spec.model_dump(), "hardware": hardware})
    check_spec(spec)
    return spec


def _declared_point(key: Optional[str], spec: KernelSpec, spec_path: Path) -> Optional[DesignPoint]:
    if key is None:
        return None
    p = DesignPoint.parse_key(key)
    hw = get_profile(spec.hardware)
    p.check_hardware(hw)
    why = why_not_rendered(p, get_pattern(spec.pattern), hw)
    if why:
        raise DesignPointError(f"--point {p.key()} is not a valid point of {spec.pattern} on {hw.name}: {why}",
                               f"pass a valid point (`cuco space {spec_path}` lists them), or leave --point out")
    return p


def _read(file: Path) -> str:
    if not file.is_file():
        raise ConfigError(f"no file at {file}", "pass the path of the CUDA source to check, e.g. my_kernel.cu")
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{file} is not UTF-8 text ({e.reason} at byte {e.start})",
                          "save the source as UTF-8") from None


class _StoredRun:
    """The run ``--run`` names, checked before the evaluation and created (when missing) only after it."""

    def __init__(self, store: Store, name: str, info: Optional[RunInfo], spec: KernelSpec, digest: str) -> None:
        self.store, self.name, self.info, self.spec, self.digest = store, name, info, spec, digest
        self.generation = max(0, store.max_generation(name)) if info else 0

    @classmethod
    def open(cls, spec: KernelSpec, name: str, db: str, digest: str) -> "_StoredRun":
        store = Store.open(db)
        info = store.get_run(name)
        if info is not None and info.spec_hash != digest:
            store.close()
            raise StoreError(f"run {name!r} in {store.url} was started with a different spec (or --hardware)",
                             "pass another --run NAME, or check against the spec the run was started with")
        return cls(store, name, info, spec, digest)

    def keep(self, cand: Candidate, ev: Evaluation) -> Optional[str]:
        """Store the candidate and its evaluation; the id of an earlier copy of the same source instead."""
        if self.store.get_run(self.name) is None:
            now = datetime.now(timezone.utc)
            self.store.create_run(RunInfo(name=self.name, spec_name=self.spec.name, pattern=self.spec.pattern,
                                          spec_hash=self.digest, spec_json=self.spec.model_dump_json(),
                                          config={"created_by": "cuco check"}, status=RunStatus.STOPPED,
                                          note="created by cuco check; `cuco evolve` continues it",
                                          created_at=now, updated_at=now))
        if not self.store.add_candidate(self.name, cand):
            return next(c.id for c in self.store.candidates(self.name) if c.content_hash == cand.content_hash)
        self.store.add_evaluation(ev)
        return None


def stored_line(earlier: Optional[str], cand: Candidate, run: str, where: str) -> str:
    if earlier:
        return (f"not stored: run {run!r} already holds this source as candidate {earlier} "
                f"(`cuco show {earlier} --db {where}`)")
    return f"stored: candidate {cand.id} in run {run!r} of {where} (`cuco show {cand.id} --db {where}`)"


# --- what the terminal shows ------------------------------------------------------------------

def check_renderables(file: Path, spec: KernelSpec, cand: Candidate, ev: Evaluation) -> list:
    from rich.panel import Panel

    ok = ev.status is Status.OK
    point = cand.point.key() if cand.point else "no declared point"
    out: list = [line(("cuco check", "bold"), f" {file} against {spec.name} ({spec.pattern}) on {spec.hardware}, "
                      f"{point}"),
                 line(("verdict: ", "bold"), (ev.status.value, "bold green" if ok else "bold red"),
                      f" (reached stage {ev.stage.value})")]
    if ev.reason:
        out.append(line(("reason: ", "bold"), ev.reason))
    if ev.flags:
        out.append(line(("flags: ", "bold"), "; ".join(ev.flags)))
    data = ev.model_dump(mode="json")
    tables = (build_table(data), checks_table(data["checks"]) if ev.checks else None, timings_table(data))
    out += [t for t in tables if t is not None]
    out.append(score_line(ev, cand))
    if not ok and ev.logs:
        out.append(Panel(shown(ev.logs), title="log (trimmed)"))
    return out


def checks_table(checks: list[dict[str, Any]]):
    """One row per (tier, world): ranks that matched the reference, worst error, first failure."""
    from cuco.terminal import FIGURE, TEXT, WORD, table

    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for c in checks:
        groups.setdefault((c["tier"], c["world"]), []).append(c)
    t = table(title="checks against the reference")
    for col, kw in (("tier", WORD), ("world", FIGURE), ("shapes", TEXT), ("rank\nchecks ok", FIGURE),
                    ("max |err|", FIGURE), ("mis-\nmatches", FIGURE), ("un-\nwritten", FIGURE),
                    ("first failure", TEXT)):
        t.add_column(col, **kw)
    for (tier, world), rows in groups.items():
        passed = sum(r["ok"] for r in rows)
        bad = next((r for r in rows if not r["ok"]), None)
        failure = f"{bad['shape']} rank {bad['rank']}: {bad['note'] or 'wrong values'}" if bad else "-"
        t.add_row(shown(tier), str(world), shown(", ".join(dict.fromkeys(r["shape"] for r in rows))),
                  shown(f"{passed}/{len(rows)}", "green" if passed == len(rows) else "red"),
                  f"{max(r['max_abs_err'] for r in rows):.3g}", str(sum(r["mismatches"] for r in rows)),
                  str(sum(r["unwritten"] for r in rows)), shown(failure))
    return t


def score_line(ev: Evaluation, cand: Candidate):
    if ev.status is not Status.OK:
        return shown("score: none (only a correct candidate is scored)")
    if not ev.timings:
        why = "no design point could be read off the code's emulation" if ev.observed_point is None \
            else "nothing was timed"
        return shown(f"score: none ({why})")
    label = ev.timing_source.value if ev.timing_source else "untimed"
    worlds = ",".join(map(str, ev.checked_worlds(Tier.EMULATED))) or "-"
    return line(("score: ", "bold"), (f"{ev.speedup or 0:.3f}x", "bold"),
                f" geomean speedup over the host-driven baseline, SOL {ev.sol_fraction or 0:.3f} ({label}; "
                f"emulated worlds {worlds})")
