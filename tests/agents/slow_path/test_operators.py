"""The pure evolutionary operators, with numbers: selection, islands, archive, schedule, bandit."""

import random
from collections import Counter

import pytest

from agents.slow_path.archive import Archive, cell_of, inspirations
from agents.slow_path.bandit import UCB1, improvement
from agents.slow_path.islands import Islands, home_island
from agents.slow_path.schedule import Schedule
from agents.slow_path.selection import (
    Beam, make_selector, power_law_weights, ranked, select_power_law, select_weighted, sigmoid_weights,
)
from design_space.errors import ConfigError

from .conftest import member

KEYS = ["lsa/sequential/global_barrier/cta/64K/4", "lsa/stream_overlap/per_peer_signal/warp/16K/8",
        "gin/split_put_wait/per_tile_signal/cta/64K/4", "lsa/fused_persistent/per_tile_signal/warp/64K/8"]


def _pool(fitnesses):
    return [member(KEYS[i % len(KEYS)], f, cid=f"c{i}") for i, f in enumerate(fitnesses)]


def _draws(pick, members, n=4000, seed=1):
    rng = random.Random(seed)
    return Counter(pick(members, rng)[0].id for _ in range(n))


def test_power_law_weights_follow_rank():
    assert power_law_weights(4, 0.0) == [1.0, 1.0, 1.0, 1.0]
    assert power_law_weights(3, 1.0) == [1.0, 0.5, pytest.approx(1 / 3)]


def test_power_law_selection_prefers_the_best_ranked_in_proportion():
    members = _pool([1.0, 3.0, 2.0, None])  # ranks: c1, c2, c0, c3 (failed last)
    counts = _draws(lambda m, r: select_power_law(m, r, alpha=1.0), members)
    share = {k: v / 4000 for k, v in counts.items()}
    total = 1 + 1 / 2 + 1 / 3 + 1 / 4
    for cid, rank in (("c1", 1), ("c2", 2), ("c0", 3), ("c3", 4)):
        assert share[cid] == pytest.approx((1 / rank) / total, abs=0.03)


def test_power_law_alpha_zero_is_uniform_and_draws_repeat_with_the_seed():
    members = _pool([1.0, 3.0, 2.0, 0.5])
    counts = _draws(lambda m, r: select_power_law(m, r, alpha=0.0), members)
    assert all(abs(v / 4000 - 0.25) < 0.03 for v in counts.values())
    assert _draws(select_power_law, members, 50, seed=7) == _draws(select_power_law, members, 50, seed=7)


def test_weighted_selection_is_sigmoid_scaled_and_penalises_many_children():
    w = sigmoid_weights([1.0, 2.0, 3.0])
    assert w[0] < 0.01 and w[1] == pytest.approx(0.5) and w[2] > 0.99
    members = _pool([1.0, 2.0, 3.0])
    counts = _draws(select_weighted, members)
    assert counts["c2"] > 0.6 * 4000 and counts["c0"] < 0.05 * 4000
    tired = _draws(lambda m, r: select_weighted(m, r, children={"c2": 9}), members)
    assert tired["c2"] < counts["c2"] / 3


def test_beam_cycles_through_the_top_k():
    members = _pool([1.0, 3.0, 2.0, 0.5])
    beam = Beam(k=2)
    picks = [beam(members, random.Random(0))[0].id for _ in range(5)]
    assert picks == ["c1", "c2", "c1", "c2", "c1"]


def test_an_unknown_selection_is_a_config_error():
    with pytest.raises(ConfigError):
        make_selector("tournament")


def test_ranked_breaks_ties_by_id():
    members = _pool([2.0, 2.0, None])
    assert [c.id for c, _ in ranked(members)] == ["c0", "c1", "c2"]


def test_llm_children_keep_their_island_and_others_are_dealt_stably():
    child = member(KEYS[0], 1.0, kind="llm", model="openai:m", island=1, cid="kid")[0]
    assert home_island(child, 2) == 1
    seed = member(KEYS[0], 1.0, cid="seed0")[0]
    assert home_island(seed, 3) == home_island(seed, 3) in (0, 1, 2)
    dealt = Counter(home_island(member(KEYS[0], 1.0, cid=f"t{i}")[0], 2) for i in range(200))
    assert 70 < dealt[0] < 130


def test_migration_moves_each_islands_best_around_the_ring_every_m_generations():
    history = [member(KEYS[i % 4], f, kind="llm", model="m", island=isl, generation=g, cid=f"i{isl}g{g}")
               for i, (isl, g, f) in enumerate([(0, 0, 1.0), (0, 1, 2.0), (1, 0, 1.5), (1, 1, 1.2), (2, 0, 0.9)])]
    islands = Islands(3, migrate_every=2)
    assert islands.migrants(history, 1) == {0: [], 1: [], 2: []}  # no migration before generation 2
    moved = islands.migrants(history, 2)
    assert moved == {0: ["i2g0"], 1: ["i0g1"], 2: ["i1g0"]}
    assert [c.id for c, _ in islands.members(history, 2)[1]] == ["i1g0", "i1g1", "i0g1"]


def test_the_archive_keeps_the_best_per_design_family():
    a = member(KEYS[0], 1.0, cid="a")
    b = member("lsa/sequential/global_barrier/warp/16K/8", 1.4, cid="b")  # same cell as a
    c = member(KEYS[2], 1.2, cid="c")
    failed = member(KEYS[3], None, cid="f")
    archive = Archive.from_history([a, b, c, failed])
    assert set(archive.cells) == {cell_of(a[0].point), cell_of(c[0].point)}
    assert archive.cells[("lsa", "sequential", "global_barrier")][0].id == "b"
    assert [m[0].id for m in archive.elites()] == ["b", "c"]
    assert not archive.add(member(KEYS[0], 1.3, cid="z"))


def test_inspirations_are_the_islands_best_plus_other_families():
    island = [member(KEYS[0], f, cid=f"s{i}") for i, f in enumerate([1.0, 1.5, 1.2, 1.1])]
    far = member(KEYS[2], 1.05, cid="far")
    archive = Archive.from_history(island + [far])
    got = inspirations(island, archive, ["s1"], random.Random(0), top_k=2, diverse_k=1)
    assert [c.id for c, _ in got] == ["s2", "s3", "far"]


def test_the_schedule_explores_first_and_exploits_later():
    s = Schedule(horizon=10)
    early, late = s.phase(1), s.phase(12)
    assert early.progress == 0.0 and late.progress == 1.0
    assert early.temperature > late.temperature
    assert early.forms["full"] > late.forms["full"] and early.forms["diff"] < late.forms["diff"]
    assert early.alpha < late.alpha
    assert sum(s.phase(5).forms.values()) == pytest.approx(1.0)
    rng = random.Random(3)
    forms = Counter(early.pick_form(rng) for _ in range(2000))
    assert forms["full"] > forms["diff"] > forms["crossover"] > 0
    assert "crossover" not in {late.pick_form(rng, crossover_possible=False) for _ in range(200)}


def test_ucb_tries_every_arm_then_prefers_the_better_one():
    bandit = UCB1(["a", "b"])
    rng = random.Random(0)
    means = {"a": 0.2, "b": 0.6}
    for _ in range(300):
        arm = bandit.select()
        bandit.pull(arm)
        bandit.reward(arm, 1.0 if rng.random() < means[arm] else 0.0)
    counts = bandit.counts()
    assert counts["b"]["pulls"] > 2 * counts["a"]["pulls"] > 0
    assert bandit.select(allowed=["a"]) == "a" and bandit.select(allowed=[]) is None


def test_pending_pulls_spread_calls_before_rewards_arrive():
    bandit = UCB1(["a", "b"])
    picks = []
    for _ in range(4):
        arm = bandit.select()
        bandit.pull(arm)
        picks.append(arm)
    assert Counter(picks) == {"a": 2, "b": 2}


def test_reward_is_the_improvement_over_the_parent():
    assert improvement(None, 1.0) == 0.0
    assert improvement(1.2, 1.0) == pytest.approx(0.2)
    assert improvement(0.9, 1.0) == 0.0
    assert improvement(1.1, None) == 1.0 and improvement(5.0, 1.0) == 1.0
