"""``cuco.plots``: the plots of a real run stored in a real SQLite candidates database."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone

import pytest
from rich.console import Console

from candidates_db import Store
from cuco.plots import OK_SIMULATED, PLOTS, UNDECLARED, UNEVALUATED, plot_data, render, run_plot
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.errors import ConfigError, CucoError
from design_space.evaluation import Evaluation, Stage, Status, Timing, TimingSource
from design_space.llm import LLMCall
from design_space.point import DesignPoint
from design_space.run import RunInfo

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
RUN = "plot <text>RUN-MARKUP</text> $x^2$ & co"  # markup, mathtext and an entity in one name
SOURCE_MARK = "SOURCE-TEXT-MARK"
LSA_FUSED = "lsa/fused_persistent/per_tile_signal/warp/64K/8"
LSA_SEQ = "lsa/sequential/global_barrier/thread/64K/8"
MULTIMEM = "multimem/split_put_wait/per_tile_signal/warp/64K/8"
# (generation, point key or None, status or None for unevaluated, speedup, timing source)
SIM, MEAS = TimingSource.SIMULATED, TimingSource.MEASURED
CANDIDATES = [
    (0, LSA_FUSED, Status.OK, 1.2, SIM),
    (0, LSA_FUSED, Status.BUILD_FAILED, None, SIM),
    (0, MULTIMEM, Status.OK, 0.9, SIM),
    (1, LSA_SEQ, Status.WRONG_RESULT, None, SIM),
    (1, None, Status.REJECTED, None, SIM),
    (1, LSA_FUSED, Status.OK, 1.8, SIM),
    (2, LSA_SEQ, Status.TIMEOUT, None, SIM),
    (2, MULTIMEM, Status.OK, 1.5, SIM),
    (2, LSA_FUSED, None, None, SIM),
    (4, MULTIMEM, Status.OK, 2.5, SIM),  # generation 3 made nothing
]
CALLS = [(0.010, 100, 20, 30), (0.025, 300, 50, 90), (0.005, 50, 10, 400)]  # (cost, in, out, seconds)


def timing(speedup: float, source: TimingSource) -> tuple[Timing, ...]:
    return (Timing(shape="decode", world=4, source=source, seconds=1e-3, bound_seconds=5e-4,
                   baseline_seconds=1e-3 * speedup),)


def evaluation(cid: str, status: Status, speedup, source) -> Evaluation:
    stage = {Status.OK: Stage.SCORE, Status.BUILD_FAILED: Stage.BUILD, Status.REJECTED: Stage.GUARD}.get(
        status, Stage.EMULATE)
    return Evaluation(candidate_id=cid, status=status, stage=stage, reason=f"<b>{status.value}</b>",
                      timings=timing(speedup, source) if speedup is not None else ())


def fill(store: Store, run: str, candidates=CANDIDATES, calls=CALLS) -> list[str]:
    store.create_run(RunInfo(name=run, spec_name="ag_gemm", pattern="allgather_gemm", spec_hash="f" * 64,
                             spec_json="{}", created_at=T0, updated_at=T0))
    ids = []
    for i, (gen, key, status, speedup, source) in enumerate(candidates):
        point = DesignPoint.parse_key(key) if key else None
        cand = Candidate(generation=gen, origin=Origin(kind=OriginKind.TEMPLATE), point=point,
                         source=f"// {SOURCE_MARK} <text>{i}</text>\n__global__ void k{i}() {{}}")
        assert store.add_candidate(run, cand)
        if status is not None:
            store.add_evaluation(evaluation(cand.id, status, speedup, source))
        ids.append(cand.id)
    for i, (cost, t_in, t_out, seconds) in enumerate(calls):
        store.add_llm_call(run, LLMCall(purpose="slow_path.mutate", candidate_id=ids[i], provider="openai",
                                        model="<m>", prompt=f"{SOURCE_MARK} prompt", response="reply",
                                        tokens_in=t_in, tokens_out=t_out, cost_usd=cost,
                                        created_at=T0 + timedelta(seconds=seconds)))
    return ids


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "runs" / "ag_gemm"
    with Store.open(folder / "cuco.db") as store:
        fill(store, RUN)
        store.create_run(RunInfo(name="empty", spec_name="ag_gemm", pattern="allgather_gemm", spec_hash="f" * 64,
                                 spec_json="{}", created_at=T0 - timedelta(days=1), updated_at=T0 - timedelta(days=1)))
    return folder


@pytest.fixture
def store(run_dir):
    with Store.open(run_dir / "cuco.db") as s:
        yield s


def ok_speedups():
    return [s for _, _, status, s, _ in CANDIDATES if status is Status.OK]


def test_plot_data_is_plain_json_with_every_plot(store):
    data = plot_data(store, RUN)
    assert list(data) == list(PLOTS)
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert all(d["title"] == PLOTS[name] and d["run"] == RUN for name, d in data.items())


def test_best_over_generations_is_monotone_and_ends_at_the_best_speedup(store):
    d = plot_data(store, RUN)["best_over_generations"]
    assert d["generations"] == [0, 1, 2, 3, 4]
    assert d["generation_best"] == pytest.approx([1.2, 1.8, 1.5, None, 2.5])
    assert d["best_so_far"] == pytest.approx([1.2, 1.8, 1.8, 1.8, 2.5])
    assert d["best"] == pytest.approx(max(ok_speedups()))
    assert d["y_label"] == "speedup vs baseline (simulated)" and d["timing_source"] == "simulated"


def test_best_over_evaluations_has_a_dot_per_correct_candidate_in_stored_order(store):
    d = plot_data(store, RUN)["best_over_evaluations"]
    assert d["evaluations"] == len(CANDIDATES) and d["index"] == list(range(1, len(CANDIDATES) + 1))
    assert [p["speedup"] for p in d["points"]] == pytest.approx(ok_speedups())
    best = d["best_so_far"]
    assert all(a <= b for a, b in zip(best, best[1:])) and best[-1] == pytest.approx(max(ok_speedups()))
    assert [p["index"] for p in d["points"]] == [i + 1 for i, c in enumerate(CANDIDATES) if c[2] is Status.OK]


def test_candidates_by_generation_draws_every_candidate_failures_in_the_strip(store):
    d = plot_data(store, RUN)["candidates_by_generation"]
    assert len(d["points"]) + len(d["strip"]) == len(CANDIDATES)
    assert d["strip_counts"] == {UNEVALUATED: 1, "rejected": 1, "build_failed": 1, "timeout": 1, "wrong_result": 1}
    for p in d["points"] + d["strip"]:
        assert abs(p["x"] - p["generation"]) <= 0.3  # jitter stays inside its generation's band
    assert d["points"] == plot_data(store, RUN)["candidates_by_generation"]["points"]  # jitter is fixed


def test_coverage_counts_every_candidate_in_its_backend_placement_cell(store):
    d = plot_data(store, RUN)["coverage"]
    cells = {(c["backend"], c["placement"]): c for c in d["cells"]}
    assert sum(c["count"] for c in d["cells"]) == d["candidates"] == len(CANDIDATES)
    assert cells[("lsa", "fused_persistent")] == {"backend": "lsa", "placement": "fused_persistent", "count": 4,
                                                   "correct": 2, "best": pytest.approx(1.8), "state": "scored"}
    assert cells[("lsa", "sequential")]["state"] == "no_correct" and cells[("lsa", "sequential")]["best"] is None
    assert cells[("multimem", "split_put_wait")]["best"] == pytest.approx(2.5)
    assert cells[(UNDECLARED, UNDECLARED)]["count"] == 1
    assert d["rows"][-1] == UNDECLARED and d["columns"][-1] == UNDECLARED and d["tried"] == 4


def test_llm_spend_sums_the_calls(store):
    d = plot_data(store, RUN)["llm_spend"]
    assert d["calls"] == 3 and not d["empty"]
    assert d["cost_usd"] == pytest.approx(sum(c[0] for c in CALLS))
    assert (d["tokens_in"], d["tokens_out"]) == (450, 80)
    assert [p["cost_usd"] for p in d["points"]] == pytest.approx([0.010, 0.035, 0.040])
    assert d["time_unit"] == "min" and [p["t"] for p in d["points"]] == pytest.approx([0.5, 1.5, 400 / 60])


def test_plots_follow_a_live_run_as_it_gains_candidates(store):
    before = plot_data(store, RUN)
    render(store, RUN, "coverage")  # drawn from what the run held then
    cand = Candidate(generation=5, origin=Origin(kind=OriginKind.TEMPLATE), source="__global__ void late() {}",
                     point=DesignPoint.parse_key(LSA_SEQ))
    store.add_candidate(RUN, cand)
    store.add_evaluation(evaluation(cand.id, Status.OK, 4.0, SIM))
    after = plot_data(store, RUN)
    assert after["coverage"]["candidates"] == before["coverage"]["candidates"] + 1
    assert after["best_over_generations"]["best"] == pytest.approx(4.0)
    assert after["best_over_evaluations"]["points"][-1]["id"] == cand.id  # stored last, drawn last


def test_a_run_with_measured_and_simulated_times_shows_only_measured(tmp_path):
    mixed = [(0, LSA_FUSED, Status.OK, 3.0, SIM), (0, LSA_SEQ, Status.OK, 1.4, MEAS),
             (1, MULTIMEM, Status.OK, 1.1, MEAS)]
    with Store.open(tmp_path / "cuco.db") as store:
        fill(store, "mixed", mixed, calls=[])
        data = plot_data(store, "mixed")
    gens = data["best_over_generations"]
    assert gens["y_label"] == "speedup vs baseline (measured)"
    assert gens["best"] == pytest.approx(1.4)  # the simulated 3.0 is not a measured result
    assert any("measured and simulated are not mixed: measured shown" in n for n in gens["notes"])
    assert data["candidates_by_generation"]["strip_counts"] == {OK_SIMULATED: 1}
    assert {c["placement"]: c["state"] for c in data["coverage"]["cells"]}["fused_persistent"] == "correct_unscored"


def svg_texts(svg: bytes) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(e.itertext()) for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "text"]


@pytest.mark.parametrize("name", list(PLOTS))
def test_svg_is_xml_with_no_stored_text_and_png_is_an_image(store, name):
    svg = render(store, RUN, name, "svg")
    texts = svg_texts(svg)
    assert not any("RUN-MARKUP" in t or SOURCE_MARK in t for t in texts)
    assert b"RUN-MARKUP" not in svg and SOURCE_MARK.encode() not in svg and b"<m>" not in svg
    assert svg.count(b"<path") > 20  # the title and labels are there, drawn as glyph paths
    png = render(store, RUN, name, "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def test_rendering_twice_gives_the_same_svg_bytes(store):
    assert render(store, RUN, "candidates_by_generation") == render(store, RUN, "candidates_by_generation")
    assert render(store, RUN, "coverage") == render(store, RUN, "coverage")


def test_an_empty_run_renders_every_plot_with_a_note(store):
    data = plot_data(store, "empty")
    assert all(d["empty"] for d in data.values())
    assert data["best_over_generations"]["notes"] == ["empty: this run has no candidates yet"]
    assert data["llm_spend"]["notes"] == ["no LLM calls in this run"] and data["llm_spend"]["cost_usd"] == 0
    assert data["coverage"]["cells"] == [] and data["best_over_evaluations"]["best"] is None
    for name in PLOTS:
        ET.fromstring(render(store, "empty", name, "svg"))
        assert render(store, "empty", name, "png").startswith(b"\x89PNG")


def test_an_unknown_plot_name_is_an_error_listing_the_valid_ones(store):
    with pytest.raises(ConfigError) as info:
        render(store, RUN, "<script>best</script>")
    assert isinstance(info.value, CucoError)
    assert all(name in info.value.fix for name in PLOTS)
    with pytest.raises(ConfigError, match="svg, png"):
        render(store, RUN, "coverage", "pdf")


def test_an_unknown_run_is_a_store_error_naming_the_runs(store):
    with pytest.raises(CucoError, match="'empty'"):
        plot_data(store, "no such run")


def test_run_plot_writes_an_svg_and_a_png_per_plot_into_the_run_folder(run_dir):
    buf = io.StringIO()
    paths = run_plot(str(run_dir), db=None, console=Console(file=buf, width=300))
    assert sorted(p.name for p in paths) == sorted(f"{n}.{f}" for n in PLOTS for f in ("svg", "png"))
    assert all(p.parent == run_dir / "plots" and p.stat().st_size > 1000 for p in paths)
    assert buf.getvalue().count("wrote ") == len(paths) == 10
    ET.fromstring((run_dir / "plots" / "coverage.svg").read_bytes())


def test_run_plot_with_a_db_url_plots_the_named_run_into_out(run_dir, tmp_path):
    out = tmp_path / "elsewhere"
    paths = run_plot("empty", db=str(run_dir / "cuco.db"), out=out, console=Console(file=io.StringIO()))
    assert len(paths) == 10 and all(p.parent == out for p in paths)


def test_importing_the_plots_leaves_matplotlib_unloaded():
    code = "import sys, cuco.plots; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
