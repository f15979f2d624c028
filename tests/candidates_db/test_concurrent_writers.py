"""Several processes writing one database at once (workers on several machines share one
PostgreSQL; local workers one SQLite file) lose nothing: every candidate and evaluation lands,
and the run's insertion order (``seq``) stays unique."""

from __future__ import annotations

import multiprocessing as mp

from sqlalchemy import create_engine, text

from candidates_db import Store
from tests.candidates_db.test_store import make_candidate, make_evaluation, make_run

WRITERS, EACH = 4, 25


def _write(url: str, writer: int) -> None:
    with Store.open(url) as s:
        for i in range(EACH):
            c = make_candidate(f"w{writer}c{i:08d}", source=f"// writer {writer} candidate {i}")
            if i % 5 == 0:  # some writers store proposals in batches
                assert s.add_candidates("r1", [c]) == [True]
            else:
                assert s.add_candidate("r1", c)
            s.add_evaluation(make_evaluation(c.id, speedup=1.0 + i / 100))


def test_four_writers_at_once_lose_nothing(db_url):
    with Store.open(db_url) as s:
        s.create_run(make_run())
    ctx = mp.get_context("spawn")  # a fresh interpreter per writer, as on separate machines
    procs = [ctx.Process(target=_write, args=(db_url, w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    with Store.open(db_url) as s:
        cands = s.candidates("r1")
        assert len(cands) == WRITERS * EACH
        assert len(s.evaluation_counts("r1")) == WRITERS * EACH
    engine = create_engine(db_url if "://" in db_url else f"sqlite:///{db_url}")
    with engine.connect() as conn:
        seqs = conn.execute(text("SELECT seq FROM candidates")).scalars().all()
    engine.dispose()
    assert sorted(seqs) == list(range(1, WRITERS * EACH + 1))
