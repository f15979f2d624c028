"""Schema migrations with Alembic: a version-2 database (before the ``sol`` column and Alembic)
upgrades in place with its SOL figures filled in and says so; a fresh one starts at Alembic's
head; a revision this cuco does not know is refused, read-only opens included."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect, text

from candidates_db import SCHEMA_VERSION, Store
from candidates_db.migrations import head_revision
from design_space.errors import StoreError
from design_space.evaluation import Timing, TimingSource
from tests.candidates_db.test_store import make_candidate, make_evaluation, make_run


def _engine(db_url: str):
    return create_engine(db_url if "://" in db_url else f"sqlite:///{db_url}")


def _as_version_2(db_url: str) -> None:
    """Turn a current database back into what cuco wrote at schema version 2."""
    engine = _engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_evaluations_latest"))
        conn.execute(text("ALTER TABLE evaluations DROP COLUMN sol"))
        conn.execute(text("CREATE INDEX ix_evaluations_latest ON evaluations "
                          "(candidate_id, id, status, stage, fitness, timing_source)"))
        conn.execute(text("DROP TABLE alembic_version"))
        conn.execute(text("UPDATE schema_version SET version = 2"))
    engine.dispose()


def _filled(db_url: str, n: int = 3) -> list:
    with Store.open(db_url) as s:
        s.create_run(make_run())
        evaluations = []
        for i in range(n):
            c = make_candidate(f"c{i:011d}", source=f"// {i}")
            s.add_candidate("r1", c)
            sol_timing = Timing(shape="decode", world=4, source=TimingSource.SIMULATED, seconds=1e-3,
                                bound_seconds=1e-4 * (1 + (i * 7) % n), baseline_seconds=2e-3)
            e = make_evaluation(c.id, timings=(sol_timing,))
            s.add_evaluation(e)
            evaluations.append(e)
    return evaluations


def test_a_fresh_database_starts_at_alembics_head(db_url):
    Store.open(db_url).close()
    engine = _engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
        assert conn.execute(text("SELECT version FROM schema_version")).scalar() == SCHEMA_VERSION
        assert "sol" in {c["name"] for c in inspect(conn).get_columns("evaluations")}
    engine.dispose()


def test_a_version_2_database_upgrades_in_place_with_its_sol_filled_in(db_url, capsys):
    evaluations = _filled(db_url)
    _as_version_2(db_url)
    with Store.open(db_url) as s:
        page = s.leaderboard_page("r1", sort="sol", order="desc")
    assert "upgrading the candidates database" in capsys.readouterr().err
    engine = _engine(db_url)
    with engine.connect() as conn:
        sols = dict(conn.execute(text("SELECT candidate_id, sol FROM evaluations")).all())
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
        assert conn.execute(text("SELECT version FROM schema_version")).scalar() == SCHEMA_VERSION
    engine.dispose()
    assert sols == pytest.approx({e.candidate_id: e.sol_fraction for e in evaluations})
    order = sorted(evaluations, key=lambda e: e.sol_fraction, reverse=True)
    assert [row["id"] for row in page["entries"]] == [e.candidate_id for e in order]
    Store.open(db_url).close()  # and opens again without another upgrade
    assert "upgrading" not in capsys.readouterr().err


def test_a_version_2_database_is_not_opened_read_only_before_its_upgrade(db_url):
    _filled(db_url, n=1)
    _as_version_2(db_url)
    with pytest.raises(StoreError, match="schema version 2") as err:
        Store.open(db_url, read_only=True)
    assert "writable cuco command" in err.value.fix


@pytest.mark.parametrize("read_only", [False, True])
def test_a_revision_this_cuco_does_not_know_is_refused(db_url, read_only):
    Store.open(db_url).close()
    engine = _engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    engine.dispose()
    with pytest.raises(StoreError, match="9999_from_the_future") as err:
        Store.open(db_url, read_only=read_only)
    assert "upgrade cuco" in err.value.fix
