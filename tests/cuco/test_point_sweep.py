"""The all-points sweep (cuco/point_sweep.py): verdicts per point and profile from the guard, a
batched nvcc build for the profile's arch and CPU emulation; a source shared by two profiles is
emulated once; a second sweep takes every verdict from the ledger."""

import json

import design_space as ds
from cuco.point_sweep import sweep_workload
from cuco.sweep_ledger import Ledger, Verdict


def test_a_sample_passes_on_both_profiles_and_a_rerun_reuses_every_verdict(example_spec, shared_cache, tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    lines = []
    first = sweep_workload(example_spec, shared_cache, hardware=("H100", "A100"), sample=2, seed=5, workers=2,
                           ledger=Ledger(ledger_path), progress=lines.append)
    pattern = ds.get_pattern(example_spec.pattern)
    for row in first.rows:
        assert row.valid == len(ds.valid_points(pattern, ds.get_profile(row.hardware), example_spec.restrictions))
        assert len(row.verdicts) == 2 and row.failures == [], [(v.point.key(), v.reason) for v in row.failures]
        assert all(v.build_s > 0 and v.emulate_s > 0 for v in row.verdicts)
    rows = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    kinds = [r["kind"] for r in rows]
    distinct = {v.point.key() for row in first.rows for v in row.verdicts}
    assert kinds.count("emulate") == kinds.count("guard") == len(distinct)
    assert kinds.count("build:sm_90") == kinds.count("build:sm_80") == 2
    assert any("build sm_90 x2 ok" in line for line in lines)
    counted = sweep_workload(example_spec, shared_cache, hardware=("H100", "A100"), sample=2, seed=5,
                             ledger=Ledger(ledger_path), run=False)
    assert [(row.checked, row.passed) for row in counted.rows] == [(2, 2), (2, 2)]
    nothing = sweep_workload(example_spec, shared_cache, hardware=("H100",), sample=2, seed=5, run=False)
    assert (nothing.rows[0].checked, nothing.rows[0].failures) == (0, [])  # not run is not failed
    again = sweep_workload(example_spec, shared_cache, hardware=("H100", "A100"), sample=2, seed=5, workers=2,
                           ledger=Ledger(ledger_path))
    assert again.reused == len(rows) and again.wall_s < first.wall_s
    assert [v.status for row in again.rows for v in row.verdicts] == ["ok"] * 4


def test_a_source_both_profiles_share_is_emulated_once_and_built_for_each_arch(example_spec, shared_cache, tmp_path):
    narrow = {"backend": ("lsa",), "placement": ("sequential",), "sync_scope": ("global_barrier",),
              "issuer": ("cta",), "chunk_bytes": ("4096",), "comm_ctas": ("1", "2")}
    spec = example_spec.model_copy(update={"restrictions": narrow})
    lines = []
    result = sweep_workload(spec, shared_cache, hardware=("H100", "A100"), workers=2, ledger=Ledger(None),
                            progress=lines.append)
    assert [(row.hardware, row.valid, row.passed) for row in result.rows] == [("H100", 2, 2), ("A100", 2, 2)]
    assert sum(" emulate " in line for line in lines) == 2  # two distinct sources, not four checks
    assert any("build sm_90 x2" in line for line in lines) and any("build sm_80 x2" in line for line in lines)


def test_a_failed_check_fails_its_point_and_names_the_reason(example_spec, shared_cache, tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    first = sweep_workload(example_spec, shared_cache, hardware=("H100",), sample=1, seed=9, workers=1, ledger=ledger)
    point = first.rows[0].verdicts[0].point
    emulate_keys = [k for k, v in ledger.verdicts().items() if v.kind == "emulate"]
    ledger.put(emulate_keys[0], Verdict("emulate", "wrong_result", "rank 1 has 3 mismatching elements", 0.4))
    again = sweep_workload(example_spec, shared_cache, hardware=("H100",), sample=1, seed=9, workers=1, ledger=ledger)
    bad = again.rows[0].failures
    assert [(v.point, v.status) for v in bad] == [(point, "wrong_result")] and "mismatching" in bad[0].reason


def test_a_ledger_swept_with_a_declared_shape_seed_resumes_in_another_cache(example_spec, shared_cache, tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    first = sweep_workload(example_spec, shared_cache, hardware=("H100",), sample=1, seed=3, workers=1,
                           ledger=Ledger(ledger_path), shape_seed=14)
    assert first.rows[0].passed == 1, first.rows[0].failures
    elsewhere = tmp_path / "fresh-clone-cache"  # another checkout's cache: no shape-seed, no references
    lines = []
    again = sweep_workload(example_spec, elsewhere, hardware=("H100",), sample=1, seed=3, workers=1,
                           ledger=Ledger(ledger_path), shape_seed=14, progress=lines.append)
    assert again.rows[0].passed == 1 and again.reused == 3 and lines == []  # guard, build, emulation reused
    secret = sweep_workload(example_spec, elsewhere, hardware=("H100",), sample=1, seed=3,
                            ledger=Ledger(ledger_path), run=False)
    assert secret.rows[0].checked == 0  # that cache's own secret shapes: its emulations are still to run
