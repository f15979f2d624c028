"""The sweep ledger keeps finished verdicts across runs, never keeps timeouts, and survives a line
cut short by a kill."""

from cuco.sweep_ledger import Ledger, Verdict, verdict_key


def test_verdicts_survive_a_restart(tmp_path):
    path = tmp_path / "ledger.jsonl"
    first = Ledger(path)
    first.put("a", Verdict("build:sm_90", "ok", "", 0.3))
    first.put("b", Verdict("emulate", "wrong_result", "rank 1 has 4 mismatching elements", 0.5))
    again = Ledger(path)
    assert len(again) == 2
    assert again.get("a").ok and again.get("a").seconds == 0.3
    assert not again.get("b").ok and "mismatching" in again.get("b").reason


def test_a_timeout_is_kept_in_memory_but_not_written(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    ledger.put("slow", Verdict("emulate", "timeout", "did not finish within 60 s", 60.0))
    assert ledger.get("slow").status == "timeout"
    assert Ledger(path).get("slow") is None  # the next sweep tries it again


def test_a_line_cut_short_is_skipped(tmp_path):
    path = tmp_path / "ledger.jsonl"
    Ledger(path).put("a", Verdict("guard", "ok", "", 0.01))
    with path.open("a") as f:
        f.write('{"check": "b", "kind": "emu')
    ledger = Ledger(path)
    assert len(ledger) == 1 and ledger.get("b") is None


def test_keys_change_with_any_part():
    assert verdict_key("build", "src", "sm_90") != verdict_key("build", "src", "sm_80")
    assert verdict_key("ab", "c") != verdict_key("a", "bc")
    assert verdict_key("x") == verdict_key("x")
