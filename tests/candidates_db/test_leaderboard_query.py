"""The web leaderboard's queries (``Store.leaderboard_page`` and friends) and the read-only open;
every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from candidates_db import Store
from candidates_db.leaderboard_query import SORTS
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.errors import ConfigError, StoreError
from design_space.evaluation import Evaluation, Stage, Status, Timing, TimingSource
from design_space.llm import LLMCall
from design_space.point import DesignPoint
from design_space.run import RunInfo, RunStatus

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
RUN = "board"
FUSED = "lsa/fused_persistent/per_tile_signal/warp/64K/8"
SEQUENTIAL = "lsa/sequential/global_barrier/cta/1024K/8"
MULTIMEM = "multimem/stream_overlap/per_peer_signal/cta/256K/4"
# name: (generation, island, origin kind, point, outcome: (speedup, sol, source) | Status | None, parents)
CANDIDATES = {
    "a": (0, 0, "template", SEQUENTIAL, (1.2, 0.30, "simulated"), ()),
    "b": (0, 1, "template", MULTIMEM, Status.BUILD_FAILED, ()),
    "c": (1, 0, "llm", FUSED, (2.5, 0.20, "simulated"), ("a",)),
    "d": (1, 1, "llm", MULTIMEM, (1.8, 0.60, "measured"), ("a",)),
    "e": (2, 0, "template", FUSED, Status.WRONG_RESULT, ("c",)),
    "f": (2, 1, "manual", SEQUENTIAL, None, ("c", "d")),
    "g": (2, 0, "template", FUSED, (1.8, 0.45, "simulated"), ("c",)),  # ties with d on speedup
    "h": (3, 1, "template", SEQUENTIAL, Status.REJECTED, ("g",)),
}


def _timings(speedup: float, sol: float, source: str) -> tuple[Timing, ...]:
    # two shapes with SOL fractions whose geometric mean is ``sol``
    return tuple(Timing(shape=shape, world=8, source=TimingSource(source), seconds=1e-3,
                        bound_seconds=1e-3 * sol * k, baseline_seconds=1e-3 * speedup)
                 for shape, k in (("decode", 2.0), ("prefill", 0.5)))


def _evaluation(cid: str, outcome) -> Evaluation:
    if isinstance(outcome, Status):
        stage = {Status.BUILD_FAILED: Stage.BUILD, Status.REJECTED: Stage.GUARD}.get(outcome, Stage.EMULATE)
        return Evaluation(candidate_id=cid, status=outcome, stage=stage, reason=f"{outcome.value} here")
    return Evaluation(candidate_id=cid, status=Status.OK, stage=Stage.SCORE, reason="ok", timings=_timings(*outcome))


def build(db: str, *, run: str = RUN, status: RunStatus = RunStatus.COMPLETE) -> dict[str, str]:
    """The run of ``CANDIDATES`` (plus one re-evaluation and two LLM calls); name -> candidate id."""
    ids: dict[str, str] = {}
    with Store.open(db) as s:
        s.create_run(RunInfo(name=run, spec_name="ag", pattern="allgather_gemm", spec_hash="h", status=status,
                             spec_json=json.dumps({"name": "ag", "hardware": "H200"}), config={"shape_seed": 12345},
                             created_at=T0, updated_at=T0 + timedelta(minutes=90)))
        for name, (gen, island, kind, point, outcome, parents) in CANDIDATES.items():
            cid = hashlib.sha1(f"{run}/{name}".encode()).hexdigest()[:12]
            s.add_candidate(run, Candidate(id=cid, generation=gen, island=island, origin=Origin(kind=OriginKind(kind)),
                                           parent_ids=tuple(ids[p] for p in parents), source=f"// {name}",
                                           point=DesignPoint.parse_key(point)))
            ids[name] = cid
            if name == "e":  # first ok and fast, then found wrong: the latest evaluation counts
                s.add_evaluation(_evaluation(cid, (9.0, 0.9, "simulated")))
            if outcome is not None:
                s.add_evaluation(_evaluation(cid, outcome))
        for i, cost in enumerate((0.25, 0.5)):
            s.add_llm_call(run, LLMCall(purpose="slow_path.mutate", candidate_id=ids["c"], provider="openai", model="m",
                                        prompt="p", response="r", cost_usd=cost, tokens_in=100, tokens_out=10,
                                        created_at=T0 + timedelta(minutes=i)))
    return ids


@pytest.fixture
def board(db_url: str):
    ids = build(db_url)
    with Store.open(db_url, read_only=True) as store:
        yield store, ids


def names(page: dict, ids: dict[str, str]) -> list[str]:
    by_id = {v: k for k, v in ids.items()}
    return [by_id[e["id"]] for e in page["entries"]]


# --- the page ---------------------------------------------------------------------------------

def test_default_page_orders_like_the_cli_leaderboard(board):
    store, ids = board
    page = store.leaderboard_page(RUN)
    assert page["total"] == len(CANDIDATES)
    assert [e["id"] for e in page["entries"]] == [c.id for c, _ in store.leaderboard(RUN)]
    assert names(page, ids)[:4] == ["c", "d", "g", "a"]  # d and g tie at 1.8: the earlier generation first
    first = page["entries"][0]
    assert first["evaluation"].status is Status.OK and first["point_key"] == FUSED
    assert first["origin"].kind is OriginKind.LLM and first["parent_ids"] == (ids["a"],)


def test_status_filter_reads_the_latest_evaluation(board):
    store, ids = board
    assert sorted(names(store.leaderboard_page(RUN, filters={"status": "ok"}), ids)) == ["a", "c", "d", "g"]
    assert names(store.leaderboard_page(RUN, filters={"status": "wrong_result"}), ids) == ["e"]
    assert names(store.leaderboard_page(RUN, filters={"status": "unevaluated"}), ids) == ["f"]
    assert store.leaderboard_page(RUN, filters={"status": "timeout"}) == {"total": 0, "entries": []}


def test_point_filters_read_the_backend_and_placement_fields(board):
    store, ids = board
    assert sorted(names(store.leaderboard_page(RUN, filters={"backend": "multimem"}), ids)) == ["b", "d"]
    assert sorted(names(store.leaderboard_page(RUN, filters={"placement": "fused_persistent"}), ids)) == ["c", "e", "g"]
    both = store.leaderboard_page(RUN, filters={"backend": "lsa", "placement": "sequential"})
    assert sorted(names(both, ids)) == ["a", "f", "h"]
    # "lsa" is a backend, never a placement: fields are matched whole, not as substrings
    assert store.leaderboard_page(RUN, filters={"placement": "lsa"})["total"] == 0


def test_island_generation_origin_and_timing_filters_combine(board):
    store, ids = board
    assert sorted(names(store.leaderboard_page(RUN, filters={"generation": 2}), ids)) == ["e", "f", "g"]
    assert sorted(names(store.leaderboard_page(RUN, filters={"generation": 2, "island": 0}), ids)) == ["e", "g"]
    assert sorted(names(store.leaderboard_page(RUN, filters={"origin": "llm"}), ids)) == ["c", "d"]
    assert names(store.leaderboard_page(RUN, filters={"timing": "measured"}), ids) == ["d"]
    simulated = store.leaderboard_page(RUN, filters={"timing": "simulated", "origin": "template"})
    assert sorted(names(simulated, ids)) == ["a", "g"]
    assert simulated["total"] == 2
    # None and "" mean "no filter", as an empty select in the form sends
    assert store.leaderboard_page(RUN, filters={"status": "", "island": None})["total"] == len(CANDIDATES)


def _key(sort: str, name: str):
    gen, island, _, _, outcome, _ = CANDIDATES[name]
    scored = isinstance(outcome, tuple)
    return {"generation": gen, "island": island, "speedup": outcome[0] if scored else None,
            "sol": outcome[1] if scored else None}.get(sort)


@pytest.mark.parametrize("sort", ["speedup", "sol", "generation", "island"])
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_sorts_order_the_column_with_missing_values_last(board, sort, order):
    store, ids = board
    got = names(store.leaderboard_page(RUN, sort=sort, order=order), ids)
    values = [_key(sort, n) for n in got]
    present = [v for v in values if v is not None]
    assert values[: len(present)] == present  # rows without the value come last
    assert present == sorted(present, reverse=order == "desc")
    assert len(got) == len(CANDIDATES)


def test_status_and_created_sorts(board):
    store, ids = board
    by_status = names(store.leaderboard_page(RUN, sort="status", order="asc"), ids)
    assert by_status == ["b", "c", "d", "g", "a", "h", "f", "e"]  # alphabetical; best first within ok
    assert names(store.leaderboard_page(RUN, sort="created", order="desc"), ids) == list(reversed(CANDIDATES))
    assert names(store.leaderboard_page(RUN, sort="created", order="asc"), ids) == list(CANDIDATES)


@pytest.mark.parametrize("sort", SORTS)
def test_paging_through_a_sort_gives_the_whole_sort_once(board, sort):
    store, _ = board
    whole = [e["id"] for e in store.leaderboard_page(RUN, sort=sort, order="asc", limit=100)["entries"]]
    pages = [store.leaderboard_page(RUN, sort=sort, order="asc", offset=o, limit=3) for o in range(0, 9, 3)]
    assert [e["id"] for p in pages for e in p["entries"]] == whole
    assert [len(p["entries"]) for p in pages] == [3, 3, 2] and {p["total"] for p in pages} == {len(CANDIDATES)}
    assert store.leaderboard_page(RUN, sort=sort, offset=50)["entries"] == []


def test_unknown_filter_sort_or_run_is_refused(board):
    store, _ = board
    with pytest.raises(ConfigError, match="unknown leaderboard filter"):
        store.leaderboard_page(RUN, filters={"colour": "red"})
    with pytest.raises(ConfigError, match="sort by one of"):
        store.leaderboard_page(RUN, sort="name")
    with pytest.raises(ConfigError, match="asc or desc"):
        store.leaderboard_page(RUN, order="up")
    with pytest.raises(StoreError, match="no run named 'ghost'"):
        store.leaderboard_page("ghost")


def test_facets_list_the_values_present_in_the_run(board):
    store, _ = board
    assert store.leaderboard_facets(RUN) == {
        "status": ["build_failed", "ok", "rejected", "unevaluated", "wrong_result"],
        "backend": ["lsa", "multimem"], "placement": ["fused_persistent", "sequential", "stream_overlap"],
        "island": [0, 1], "generation": [0, 1, 2, 3], "origin": ["llm", "manual", "template"],
        "timing": ["measured", "simulated"],
    }


def test_run_summary_has_best_counts_spend_wall_time_and_hardware(board):
    store, ids = board
    summary = store.run_summary(RUN)
    assert summary["best"]["id"] == ids["c"]
    assert summary["best"]["speedup"] == pytest.approx(2.5) and summary["best"]["sol"] == pytest.approx(0.2)
    assert summary["best"]["timing_source"] == "simulated"
    assert summary["candidates"] == 8
    assert {k: v for k, v in summary["status_counts"].items() if v} == {
        "ok": 4, "build_failed": 1, "wrong_result": 1, "rejected": 1, "unevaluated": 1}
    assert summary["status_counts"] == store.status_counts(RUN)
    assert summary["llm"]["calls"] == 2 and summary["llm"]["cost_usd"] == pytest.approx(0.75)
    assert summary["wall_s"] == 5400 and summary["hardware"] == "H200" and summary["status"] == "complete"
    assert "config" not in summary  # it holds the secret shape seed


def test_a_run_without_an_ok_candidate_has_no_best(db_url):
    with Store.open(db_url) as s:
        s.create_run(RunInfo(name="empty", spec_name="x", pattern="p", spec_hash="h", spec_json="not json",
                             created_at=T0, updated_at=T0))
        summary = s.run_summary("empty")
    assert summary["best"] is None and summary["candidates"] == 0 and summary["hardware"] is None


def test_family_finds_ancestors_nearest_first_and_children(board):
    store, ids = board
    family = store.family(RUN, ids["g"])
    assert [n["id"] for n in family["ancestors"]] == [ids["c"], ids["a"]]
    assert [n["id"] for n in family["children"]] == [ids["h"]]
    f = store.family(RUN, ids["f"])
    assert [n["id"] for n in f["ancestors"]] == [ids["c"], ids["d"], ids["a"]]  # a once, though two paths lead to it
    assert {n["id"] for n in store.family(RUN, ids["a"])["children"]} == {ids["c"], ids["d"]}


def test_lineage_has_every_candidate_with_its_latest_status(board):
    store, ids = board
    nodes = {n["id"]: n for n in store.lineage(RUN)}
    assert set(nodes) == set(ids.values())
    assert nodes[ids["e"]]["status"] == "wrong_result" and nodes[ids["e"]]["fitness"] is None
    assert nodes[ids["f"]]["status"] == "unevaluated" and nodes[ids["f"]]["parent_ids"] == [ids["c"], ids["d"]]
    assert nodes[ids["c"]]["fitness"] == pytest.approx(2.5)


def test_content_version_moves_when_rows_are_added(db_url):
    ids = build(db_url)
    with Store.open(db_url) as s:
        before = s.content_version()
        s.add_evaluation(_evaluation(ids["f"], (1.1, 0.5, "simulated")))
        after = s.content_version()
    assert after[1] > before[1] and after[0] == before[0]


# --- read-only open -------------------------------------------------------------------------------

def _count(store: Store) -> int:
    return store.leaderboard_page(RUN)["total"]


def test_read_only_store_refuses_every_write(db_url):
    ids = build(db_url)
    with Store.open(db_url, read_only=True) as ro:
        assert ro.read_only and _count(ro) == 8
        writes = [lambda: ro.add_candidate(RUN, Candidate(origin=Origin(kind=OriginKind.MANUAL), source="// new")),
                  lambda: ro.add_evaluation(_evaluation(ids["f"], Status.TIMEOUT)),
                  lambda: ro.update_run(RUN, status=RunStatus.RUNNING),
                  lambda: ro.create_run(RunInfo(name="other", spec_name="x", pattern="p", spec_hash="h",
                                                spec_json="{}", created_at=T0, updated_at=T0))]
        for write in writes:
            with pytest.raises(StoreError, match="read-only"):
                write()
        assert _count(ro) == 8 and ro.get_run(RUN).status is RunStatus.COMPLETE
        assert ro.evaluation(ids["f"]) is None


def test_read_only_sqlite_open_leaves_the_file_unchanged(tmp_path: Path):
    db = tmp_path / "cuco.db"
    build(str(db))
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    with Store.open(db, read_only=True) as ro:
        ro.leaderboard_page(RUN)
        ro.run_summary(RUN)
        with pytest.raises(StoreError):
            ro.update_run(RUN, note="changed")
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


def test_read_only_open_creates_no_file_or_folder(tmp_path: Path):
    missing = tmp_path / "nowhere" / "cuco.db"
    with pytest.raises(StoreError, match="no candidates database at") as err:
        Store.open(missing, read_only=True)
    assert "cuco evolve" in err.value.fix
    assert not missing.parent.exists()


def test_read_only_open_sees_rows_written_after_it_opened(db_url):
    build(db_url)
    with Store.open(db_url, read_only=True) as ro, Store.open(db_url) as rw:
        assert _count(ro) == 8
        rw.add_candidate(RUN, Candidate(origin=Origin(kind=OriginKind.MANUAL), source="// late"))
        assert _count(ro) == 9


def test_read_only_open_refuses_other_schema_versions(db_url):
    build(db_url)
    url = db_url if "://" in db_url else f"sqlite:///{db_url}"
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:
        conn.execute(text("UPDATE schema_version SET version = 99"))
    engine.dispose()
    with pytest.raises(StoreError, match="schema version 99") as err:
        Store.open(db_url, read_only=True)
    assert "upgrade cuco" in err.value.fix


def test_leaderboard_indexes_are_added_to_an_older_database(db_url):
    build(db_url)
    url = db_url if "://" in db_url else f"sqlite:///{db_url}"
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_candidates_board"))
        conn.execute(text("DROP INDEX ix_evaluations_latest"))
    with Store.open(db_url, read_only=True) as ro:  # a reader cannot add them: it still answers
        assert _count(ro) == 8
    with engine.connect() as conn:
        assert "ix_candidates_board" not in {i["name"] for i in inspect(conn).get_indexes("candidates")}
    Store.open(db_url).close()  # the next writable open adds them, without a schema change
    with engine.connect() as conn:
        assert "ix_candidates_board" in {i["name"] for i in inspect(conn).get_indexes("candidates")}
        assert "ix_evaluations_latest" in {i["name"] for i in inspect(conn).get_indexes("evaluations")}
    engine.dispose()


def test_sol_is_the_geometric_mean_of_the_shapes(board):
    store, ids = board
    page = store.leaderboard_page(RUN, filters={"status": "ok"}, sort="sol")
    assert [e["evaluation"].sol_fraction for e in page["entries"]] == pytest.approx([0.6, 0.45, 0.3, 0.2])
    assert not any(math.isnan(e["evaluation"].speedup) for e in page["entries"])
