"""Meta-summaries: the deterministic facts and the fallback when no LLM answers."""

from agents.slow_path.meta import SUMMARY_CHARS, facts, fallback_summary, meta_summary

from .conftest import KEYS_FAR, candidate, evaluation, member


def _history():
    base = member(fitness=1.0, cid="p")
    better = member(KEYS_FAR, 1.3, kind="llm", model="openai:a", patch_type="full", parents=("p",), cid="k1")
    also = member("gin/split_put_wait/per_tile_signal/warp/64K/4", 1.25, kind="llm", model="openai:a",
                  patch_type="diff", parents=("p",), cid="k2")
    fails = []
    for i in range(3):
        c = candidate("lsa/fused_persistent/per_tile_signal/warp/64K/8", kind="llm", model="openai:b",
                      patch_type="diff", parents=("p",), cid=f"f{i}")
        fails.append((c, evaluation(c, None, status="emulation_failed", reason=f"deadlock in cuco_wait slot {i}")))
    return [base, better, also, *fails]


def test_facts_count_statuses_reasons_best_points_and_what_improved():
    text = facts(_history())
    assert "6 candidates evaluated: 3 ok, 3 emulation_failed" in text
    assert "deadlock in cuco_wait slot N (x3)" in text  # numbers folded so equal causes count together
    assert text.index(KEYS_FAR) < text.index("lsa/sequential/global_barrier/cta/64K/4")  # best first
    assert "backend=gin in 2 of the best 3" in text
    assert "Never correct so far: " in text and "placement=fused_persistent" in text
    assert "full by openai:a 1/1" in text and "diff by openai:b 0/3" in text


def test_the_fallback_summary_is_short_and_deterministic():
    a, b = fallback_summary(_history()), fallback_summary(_history())
    assert a == b and a.startswith("Observed so far (automatic summary):") and len(a) <= SUMMARY_CHARS
    assert facts([]) == "No candidate evaluated yet."


def test_without_clients_the_meta_summary_falls_back():
    text, model = meta_summary([], _history(), workload="ag", generation=3)
    assert model is None and text == fallback_summary(_history())
