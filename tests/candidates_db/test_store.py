"""Behaviour of ``candidates_db.Store``; every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import math
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from candidates_db import SCHEMA_VERSION, Store, migrate
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.errors import StoreError
from design_space.evaluation import (
    BuildStats, Evaluation, KernelStats, Provenance, RankCheck, Stage, Status, Tier, Timing, TimingSource,
)
from design_space.point import DesignPoint
from design_space.run import RunInfo, RunStatus

T0 = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=timezone.utc)
POINT = DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/warp/64K/8")


def make_run(name: str = "r1", **kw) -> RunInfo:
    fields = dict(name=name, spec_name="ag_gemm", pattern="allgather_gemm", spec_hash="f" * 64,
                  spec_json='{"name": "ag_gemm"}', config={"budget": 20, "islands": [1, 2], "llm": None},
                  status=RunStatus.RUNNING, note="first try", created_at=T0, updated_at=T0)
    return RunInfo(**{**fields, **kw})


def make_candidate(cid: str = "c0ffee000001", source: str = "__global__ void k() { /* 1 */ }", **kw) -> Candidate:
    fields = dict(id=cid, parent_ids=("aaaa00000001", "bbbb00000002"), generation=3, island=2,
                  origin=Origin(kind=OriginKind.LLM, model="claude-x", patch_type="diff"),
                  source=source, point=POINT)
    return Candidate(**{**fields, **kw})


def timings(speedup: float, source: TimingSource = TimingSource.SIMULATED) -> tuple[Timing, ...]:
    return (Timing(shape="decode", world=4, source=source, seconds=1e-3, bound_seconds=5e-4,
                   baseline_seconds=1e-3 * speedup),)


def make_evaluation(cid: str, status: Status = Status.OK, stage: Stage = Stage.SCORE,
                    speedup: float | None = 1.5, **kw) -> Evaluation:
    fields = dict(candidate_id=cid, status=status, stage=stage, reason=f"{status.value} at {stage.value}",
                  timings=timings(speedup) if speedup is not None else ())
    return Evaluation(**{**fields, **kw})


def full_evaluation(cid: str) -> Evaluation:
    """An evaluation with every field set to a non-default value."""
    return Evaluation(
        candidate_id=cid, status=Status.OK, stage=Stage.SCORE, reason="all ranks match",
        build=BuildStats(arch="sm_90a", comm_backend="lsa", cached=True, seconds=2.5, kernels=(
            KernelStats(name="fused", registers=128, smem_bytes=49152, stack_bytes=16, spill_stores=2, spill_loads=3),
            KernelStats(name="comm", registers=40))),
        checks=(RankCheck(tier=Tier.EMULATED, world=2, shape="decode", rank=1, trial=2, ok=False,
                          max_abs_err=0.25, mismatches=7, unwritten=3, note="tail unwritten"),
                RankCheck(tier=Tier.VERIFIED, world=4, shape="prefill", rank=3, ok=True)),
        timings=timings(2.0, TimingSource.MEASURED) + (
            Timing(shape="prefill", world=4, source=TimingSource.MEASURED, seconds=2e-3,
                   bound_seconds=1e-3, baseline_seconds=3e-3),),
        flags=("spills", "low_sol"), stage_seconds={"build": 1.25, "emulate": 0.5}, logs="nvcc: ok\n",
        provenance=Provenance(host="h", platform="linux", python="3.11", torch="2.4", nvcc="12.4",
                              gxx="12", nccl_headers="2.28", gpu="H200", driver="550", cuda="12.4", nccl="2.28"),
    )


@pytest.fixture
def store(db_url: str):
    with Store.open(db_url) as s:
        s.create_run(make_run())
        yield s


# --- runs ---------------------------------------------------------------------------------------

def test_run_round_trip_and_list(db_url):
    with Store.open(db_url) as s:
        info = make_run("alpha")
        assert s.create_run(info) == info
        assert s.get_run("alpha") == info
        s.create_run(make_run("beta", created_at=T0 + timedelta(hours=1)))
        assert [r.name for r in s.list_runs()] == ["alpha", "beta"]
        assert s.get_run("nope") is None


def test_run_datetimes_come_back_utc_aware(db_url):
    plus2 = timezone(timedelta(hours=2))
    with Store.open(db_url) as s:
        got = s.create_run(make_run("z", created_at=T0.astimezone(plus2), updated_at=T0.replace(tzinfo=None)))
    assert got.created_at.tzinfo == timezone.utc and got.created_at == T0
    assert got.updated_at.utcoffset() == timedelta(0) and got.updated_at == T0  # naive is taken as UTC


def test_duplicate_run_refused(store):
    with pytest.raises(StoreError, match="already exists"):
        store.create_run(make_run())


def test_update_run(store):
    before = store.get_run("r1")
    after = store.update_run("r1", status=RunStatus.COMPLETE, note="done", config={"budget": 40})
    assert (after.status, after.note, after.config) == (RunStatus.COMPLETE, "done", {"budget": 40})
    assert after.updated_at > before.updated_at and after.created_at == before.created_at
    assert store.update_run("r1", status="stopped").note == "done"  # untouched fields stay
    assert store.get_run("r1").status is RunStatus.STOPPED
    with pytest.raises(StoreError, match="no run named 'ghost'"):
        store.update_run("ghost", note="x")


# --- candidates ---------------------------------------------------------------------------------

def test_candidate_round_trip_every_field(store):
    c = make_candidate()
    assert store.add_candidate("r1", c) is True
    assert store.get_candidate(c.id) == c
    assert store.candidates("r1") == [c]
    assert store.run_of(c.id) == "r1"
    bare = Candidate(id="bare00000001", origin=Origin(kind=OriginKind.TEMPLATE), source="// t")
    store.add_candidate("r1", bare)
    assert store.get_candidate(bare.id) == bare and bare.point is None


def test_dedup_by_content_hash(store):
    c = make_candidate("first0000001", source="__global__ void k() {\n  x = 1;\n}")
    twin = make_candidate("second000002", source="__global__   void k() { x = 1; }")  # reformatted
    assert store.add_candidate("r1", c)
    assert store.has_content_hash("r1", twin.content_hash)
    assert store.add_candidate("r1", twin) is False
    assert [x.id for x in store.candidates("r1")] == [c.id]
    with pytest.raises(StoreError):
        store.get_candidate(twin.id)
    # Dedup is per run: another run may hold the same source.
    store.create_run(make_run("r2"))
    assert not store.has_content_hash("r2", c.content_hash)
    assert store.add_candidate("r2", twin) is True


def test_add_candidate_needs_run_and_fresh_id(store):
    with pytest.raises(StoreError, match="no run named"):
        store.add_candidate("ghost", make_candidate())
    store.add_candidate("r1", make_candidate("same00000001", source="// a"))
    with pytest.raises(StoreError, match="already stored"):
        store.add_candidate("r1", make_candidate("same00000001", source="// b"))


def test_prefix_lookup(store):
    for cid, src in [("abcd1111", "// 1"), ("abcd2222", "// 2"), ("ffff0000", "// 3"), ("xyz", "// 4")]:
        store.add_candidate("r1", make_candidate(cid, source=src))
    assert store.get_candidate("abcd1").id == "abcd1111"
    assert store.get_candidate("ffff").id == "ffff0000"
    assert store.get_candidate("xyz").id == "xyz"  # a full id may be shorter than a prefix
    with pytest.raises(StoreError, match="ambiguous") as amb:
        store.get_candidate("abcd")
    assert "abcd1111" in str(amb.value) and "abcd2222" in str(amb.value)
    assert "cuco leaderboard" in amb.value.fix
    with pytest.raises(StoreError, match="no candidate id starts with") as missing:
        store.get_candidate("0123")
    assert "cuco leaderboard" in missing.value.fix
    with pytest.raises(StoreError, match="too short"):
        store.get_candidate("abc")
    with pytest.raises(StoreError):
        store.get_candidate("ABCD1")  # ids are case-sensitive on every backend


def test_candidate_order_generation_then_insertion(store):
    # Ids sort opposite to insertion, so id order cannot pass for insertion order.
    for cid, gen in [("zz01", 1), ("yy02", 0), ("xx03", 1), ("ww04", 0)]:
        store.add_candidate("r1", make_candidate(cid, source=f"// {cid}", generation=gen))
    assert [c.id for c in store.candidates("r1")] == ["yy02", "ww04", "zz01", "xx03"]
    assert [c.id for c in store.candidates("r1", generation=1)] == ["zz01", "xx03"]
    assert store.max_generation("r1") == 1
    assert store.max_generation("empty-run") == -1
    store.add_evaluation(make_evaluation("yy02"))
    assert [c.id for c in store.unevaluated("r1")] == ["ww04", "zz01", "xx03"]
    with pytest.raises(StoreError):
        store.run_of("nope")


# --- evaluations --------------------------------------------------------------------------------

def test_evaluation_round_trip_every_field(store):
    store.add_candidate("r1", make_candidate())
    e = full_evaluation(make_candidate().id)
    store.add_evaluation(e)
    assert store.evaluation(e.candidate_id) == e
    assert store.evaluation("c0ffee") is None  # evaluation() takes a full id


def test_non_finite_floats_survive(store):
    store.add_candidate("r1", make_candidate())
    checks = (RankCheck(tier=Tier.EMULATED, world=2, shape="s", rank=0, ok=False, max_abs_err=float("nan")),
              RankCheck(tier=Tier.EMULATED, world=2, shape="s", rank=1, ok=False, max_abs_err=float("inf")))
    store.add_evaluation(make_evaluation(make_candidate().id, Status.WRONG_RESULT, Stage.EMULATE,
                                         speedup=None, checks=checks))
    got = store.evaluation(make_candidate().id).checks
    assert math.isnan(got[0].max_abs_err) and got[1].max_abs_err == float("inf")


def test_latest_evaluation_wins(store):
    store.add_candidate("r1", make_candidate())
    cid = make_candidate().id
    store.add_evaluation(make_evaluation(cid, Status.TIMEOUT, Stage.EMULATE, speedup=None))
    store.add_evaluation(make_evaluation(cid, Status.OK, Stage.SCORE, speedup=2.0))
    assert store.evaluation(cid).status is Status.OK
    assert store.status_counts("r1")["ok"] == 1 and store.status_counts("r1")["timeout"] == 0
    store.add_evaluation(make_evaluation(cid, Status.CRASHED, Stage.BENCH, speedup=None))
    assert store.evaluation(cid).status is Status.CRASHED
    assert store.best("r1") is None


def test_evaluation_needs_candidate_and_one_timing_source(store):
    with pytest.raises(StoreError, match="unknown candidate"):
        store.add_evaluation(make_evaluation("ghost"))
    store.add_candidate("r1", make_candidate())
    mixed = timings(1.0, TimingSource.MEASURED) + timings(1.0, TimingSource.SIMULATED)
    with pytest.raises(StoreError, match="mixes measured and simulated"):
        store.add_evaluation(make_evaluation(make_candidate().id, timings=mixed))
    assert store.evaluation(make_candidate().id) is None


def test_leaderboard_order_counts_and_best(store):
    rows = [  # id, status, stage, speedup; listed in insertion order
        ("unev0001", None, None, None),
        ("build001", Status.BUILD_FAILED, Stage.BUILD, None),
        ("okslow01", Status.OK, Stage.SCORE, 1.5),
        ("wrong001", Status.WRONG_RESULT, Stage.VERIFY, None),
        ("oknotim1", Status.OK, Stage.SCORE, None),  # ok but no timings: no fitness
        ("okfast01", Status.OK, Stage.SCORE, 3.0),
        ("crash001", Status.CRASHED, Stage.BENCH, None),
        ("reject01", Status.REJECTED, Stage.GUARD, None),
    ]
    for i, (cid, status, stage, speedup) in enumerate(rows):
        store.add_candidate("r1", make_candidate(cid, source=f"// {i}"))
        if status is not None:
            store.add_evaluation(make_evaluation(cid, status, stage, speedup))
    board = store.leaderboard("r1")
    assert [c.id for c, _ in board] == ["okfast01", "okslow01", "oknotim1", "crash001", "wrong001",
                                        "build001", "reject01", "unev0001"]
    assert board[0][1].fitness == pytest.approx(3.0) and board[-1][1] is None
    assert [c.id for c, _ in store.leaderboard("r1", limit=2)] == ["okfast01", "okslow01"]
    best = store.best("r1")
    assert best is not None and best[0].id == "okfast01" and best[1].status is Status.OK
    counts = store.status_counts("r1")
    assert counts == {"ok": 3, "build_failed": 1, "wrong_result": 1, "crashed": 1, "rejected": 1,
                      "emulation_failed": 0, "timeout": 0, "unevaluated": 1}
    assert store.leaderboard("other") == [] and store.best("other") is None


# --- files, versions, sharing -------------------------------------------------------------------

def test_reopen_keeps_data(db_url):
    with Store.open(db_url) as s:
        s.create_run(make_run())
        s.add_candidate("r1", make_candidate())
        s.add_evaluation(full_evaluation(make_candidate().id))
    with Store.open(db_url) as s:
        assert s.get_run("r1") == make_run()
        assert s.candidates("r1") == [make_candidate()]
        assert s.evaluation(make_candidate().id) == full_evaluation(make_candidate().id)


def _engine_url(db_url: str) -> str:
    return db_url if "://" in db_url else f"sqlite:///{db_url}"


def test_future_schema_version_refused(db_url):
    Store.open(db_url).close()
    engine = create_engine(_engine_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE schema_version SET version = :v"), {"v": SCHEMA_VERSION + 1})
    engine.dispose()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}") as err:
        Store.open(db_url)
    assert "upgrade cuco" in err.value.fix


def test_migrate_is_idempotent(db_url):
    Store.open(db_url).close()
    engine = create_engine(_engine_url(db_url))
    assert migrate(engine) == SCHEMA_VERSION
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version FROM schema_version")).scalars().all() == [SCHEMA_VERSION]
    engine.dispose()


def test_writer_and_reader_share_one_database(db_url):
    n = 40
    with Store.open(db_url) as writer, Store.open(db_url) as reader:
        writer.create_run(make_run())
        errors: list[BaseException] = []

        def write() -> None:
            try:
                for i in range(n):
                    c = make_candidate(f"w{i:07d}", source=f"// {i}")
                    writer.add_candidate("r1", c)
                    writer.add_evaluation(make_evaluation(c.id, speedup=1.0 + i))
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        t = threading.Thread(target=write)
        t.start()
        seen = 0
        while t.is_alive() or seen < n:
            seen = len(reader.leaderboard("r1"))  # reads while the writer commits
            reader.status_counts("r1")
            if not t.is_alive() and seen < n:
                break
        t.join()
        assert not errors, errors
        assert len(reader.candidates("r1")) == n
        assert reader.best("r1")[0].id == f"w{n - 1:07d}"


def test_sqlite_uses_wal_and_accepts_urls(tmp_path: Path):
    path = tmp_path / "nested" / "dir" / "c.db"
    with Store.open(path) as s:
        s.create_run(make_run())
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    engine.dispose()
    with Store.open(f"sqlite:///{path}") as s:
        assert s.get_run("r1") is not None


def test_fresh_database_opened_concurrently(db_url):
    # Several processes starting on one new database must not race creating the schema.
    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            Store.open(db_url).close()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=open_close) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_open_errors_are_store_errors(tmp_path: Path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, just some bytes " * 100)
    with pytest.raises(StoreError, match="cannot open"):
        Store.open(junk)
    with pytest.raises(StoreError):
        Store.open("postgresql://postgres@127.0.0.1:1/nothing")  # nothing listens on port 1
    with pytest.raises(StoreError, match="unknown database kind"):
        Store.open("nosuchdb://x/y")
    s = Store.open(tmp_path / "ok.db")
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.list_runs()
