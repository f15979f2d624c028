"""Prompt templates: versioned files, a renderer that fails loudly, and a bounded size."""

import pytest

from agents.slow_path import prompts
from agents.slow_path.budget import TRIM_ORDER, Section, fit, prompt_size_stats, trim_items, trim_middle, trim_tail
from agents.slow_path.templates import PROMPTS_DIR, load_template, render
from design_space.errors import ConfigError

from .conftest import H100, KEYS_FAR, PATTERN, candidate, evaluation, member

SLOW = ("system", "slow_mutate", "slow_crossover", "slow_repair", "slow_meta", "comm_api", "reply_diff", "reply_full")


@pytest.mark.parametrize("name", SLOW)
def test_every_template_file_carries_a_version_header(name):
    tpl = load_template(name)
    assert tpl.version >= 1 and tpl.text.startswith(f"<!-- cuco-prompt {name} v{tpl.version} -->\n")
    assert (PROMPTS_DIR / f"{name}.md").is_file()


def test_render_fills_placeholders_once_and_leaves_code_braces_alone():
    text = "a {x} b {{literal}} c { return y; } d {x}"
    assert render(text, {"x": "{y}"}) == "a {y} b {literal} c { return y; } d {y}"


def test_render_fails_loudly_on_a_missing_or_an_unknown_placeholder():
    with pytest.raises(ConfigError, match=r"needs a value for \{b\}"):
        render("{a} {b}", {"a": "1"})
    with pytest.raises(ConfigError, match="has no placeholder for c"):
        render("{a}", {"a": "1", "c": "2"})


def test_the_mutation_prompt_holds_every_part(spec):
    parent = member(fitness=1.2)
    built = prompts.mutate_prompt(spec=spec, pattern=PATTERN, hardware=H100, parent=parent,
                                  inspirations=[member(KEYS_FAR, 1.4)], meta="- prefer per_tile_signal", form="diff")
    user = built.user
    for needle in (spec.name, "allgather_gemm", "bf16", "placement:", "fused_persistent_needs_fine_signals",
                   "cuco_put_warp", "132 SMs", parent[0].source.splitlines()[5], "Fitness (geomean speedup): 1.2000",
                   "SOL 50%", "prefer per_tile_signal", "<<<<<<< SEARCH", "DESIGN-POINT:", KEYS_FAR,
                   "cuco-prompt slow_mutate v1"):
        assert needle in user, needle
    assert "cuco-prompt system v1" in built.system
    assert built.size.chars == len(built.system) + len(built.user) <= built.size.budget
    assert user.index("## backend: lsa") < user.index("## backend: gin")  # the parent's backend first


def test_a_huge_failure_log_and_many_inspirations_stay_within_the_budget(spec):
    parent_cand = candidate()
    failed = evaluation(parent_cand, None, status="wrong_result", reason="rank 1 mismatched",
                        logs="HEAD-OF-LOG\n" + "noise line\n" * 30000 + "TAIL-OF-LOG")
    many = [member(KEYS_FAR if i % 2 else "lsa/stream_overlap/per_peer_signal/warp/16K/8", 1.0 + i / 10)
            for i in range(12)]
    built = prompts.mutate_prompt(spec=spec, pattern=PATTERN, hardware=H100, parent=(parent_cand, failed),
                                  inspirations=many, meta="m", form="full", budget=24_000)
    size = built.size
    assert size.untrimmed_chars > 60_000 and size.chars <= 24_000 and not size.over_budget
    assert parent_cand.source.rstrip() in built.user  # the parent's code is never cut
    assert "rank 1 mismatched" in built.user  # nor its evaluation summary
    before, after = size.sections["parent_logs"]
    assert after < before and "HEAD-OF-LOG" in built.user and "TAIL-OF-LOG" in built.user  # its floor stays
    assert size.sections["inspirations"][1] < size.sections["inspirations"][0]


def test_trimming_follows_the_documented_order():
    sections = [Section("d", "d" * 1000, group="design_space"), Section("l", "l" * 1000, group="logs"),
                Section("i", "", group="inspirations", items=["i" * 400, "j" * 400]), Section("m", "m" * 500)]
    assert fit(sections, 100, 2500)  # 3402 chars: 902 over
    by = {s.name: len(s.text) for s in sections}
    assert by["d"] == 1000 and by["m"] == 500 and by["l"] < 100 and by["i"] == 802  # only the log was cut
    assert fit(sections, 100, 1300)
    by = {s.name: len(s.text) for s in sections}
    assert by["l"] == 0 and by["i"] == 0 and 0 < by["d"] <= 700 and by["m"] == 500  # then inspirations, then docs
    assert not fit([Section("code", "c" * 5000)], 0, 1000)
    floored = [Section("l", "l" * 3000, group="logs", floor=1000), Section("i", "i" * 3000, group="inspirations")]
    assert fit(floored, 0, 3500)
    assert [len(s.text) for s in floored] == [1000, 2500]  # the log keeps its floor while inspirations can give
    assert fit(floored, 0, 800) and len(floored[1].text) == 0 and len(floored[0].text) <= 800
    assert TRIM_ORDER[:3] == ("logs", "inspirations", "comm_api")


def test_trim_helpers_never_exceed_their_limit():
    text = "\n".join(f"line {i}" for i in range(2000))
    for limit in (0, 10, 30, 100, 1000, 5000):
        assert len(trim_middle(text, limit)) <= limit
        assert len(trim_tail(text, limit)) <= limit
        assert len(trim_items([text, text], limit)) <= limit


def test_the_crossover_and_repair_prompts_render_within_budget(spec):
    a, b = member(fitness=1.1), member(KEYS_FAR, 1.3)
    cross = prompts.crossover_prompt(spec=spec, pattern=PATTERN, hardware=H100, parents=(a, b), meta="")
    assert "Parent B (design point " + KEYS_FAR in cross.user and cross.size.chars <= cross.size.budget
    assert "EVOLVE-BLOCK-START" not in cross.user.split("# Parent B")[1]  # B: its blocks only
    repair = prompts.repair_prompt(kind="compile", error="error: x undefined\n" * 5000, code=a[0].source,
                                   point=a[0].point.key(), previous_reply="```cuda\n...\n```")
    assert "The code does not compile" in repair.user and repair.size.chars <= repair.size.budget


def test_prompt_size_stats_summarise_sent_and_untrimmed_sizes(spec):
    sizes = [prompts.mutate_prompt(spec=spec, pattern=PATTERN, hardware=H100, parent=member(fitness=1.0),
                                   inspirations=[], meta="", form=form, budget=budget).size
             for form, budget in (("diff", 24_000), ("full", 16_000))]
    stats = prompt_size_stats(sizes)
    assert stats["prompts"] == 2 and stats["chars_max"] <= 24_000 and stats["budget"] == 24_000
    assert stats["by_purpose"] == {"slow_path.mutate": 2}
    assert prompt_size_stats([]) == {"prompts": 0}
