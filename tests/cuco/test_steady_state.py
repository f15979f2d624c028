"""`--ahead N`: generations are proposed N early, from the history complete by then, so the next
generation is already queued while the last candidates of one still run; and because the history a
proposal reads is fixed, the same seed still gives the same candidates."""

import sqlite3

import pytest

import cuco

EXAMPLE = "examples/allgather_gemm"


def _run(tmp_path, name, ahead, shared_cache):
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    summary = cuco.evolve(str(root / EXAMPLE), run_dir=tmp_path / name, generations=3, population=3, seed=7,
                          workers=2, ahead=ahead, progress=False, cache_dir=shared_cache)
    con = sqlite3.connect(tmp_path / name / "cuco.db")
    hashes = [r[0] for r in con.execute("select content_hash from candidates order by seq")]
    proposed = dict(con.execute("select generation, min(created_at) from candidates group by generation"))
    done = dict(con.execute("select c.generation, max(e.created_at) from evaluations e join candidates c "
                            "on c.id = e.candidate_id group by c.generation"))
    con.close()
    return summary, hashes, proposed, done


def test_proposing_a_generation_ahead_keeps_slots_busy_and_stays_reproducible(tmp_path, shared_cache):
    _, _, barrier_proposed, barrier_done = _run(tmp_path, "barriers", 0, shared_cache)
    assert barrier_proposed[1] > barrier_done[0]
    first, hashes, proposed, done = _run(tmp_path, "a", 1, shared_cache)
    assert first.status_counts["ok"] == 9 and len(hashes) == 9
    # generation 1 was queued before generation 0's last evaluation landed (with barriers, after)
    assert proposed[1] < done[0]
    again, hashes_again, _, _ = _run(tmp_path, "b", 1, shared_cache)
    assert hashes_again == hashes


def test_a_negative_ahead_is_refused(tmp_path):
    from design_space import ConfigError
    with pytest.raises(ConfigError, match="--ahead"):
        cuco.evolve(EXAMPLE, run_dir=tmp_path / "x", ahead=-1, progress=False)
