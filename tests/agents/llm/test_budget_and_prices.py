"""The run's dollar budget and the price table (defaults, prefix match, override file)."""

import json
import threading

import pytest

from agents.llm import Budget, Price, create_llm, default_prices, load_prices
from design_space.errors import BudgetExhausted, ConfigError
from tests.agents.llm.helpers import FAST, always, ask, fake_env


def test_the_budget_stops_the_second_call_and_records_nothing_for_it(serve, calls):
    server = serve(always("x" * 4000))  # 1000 output tokens
    budget = Budget(limit_usd=0.001)
    client = create_llm("openai:gpt-4o", recorder=calls.append, budget=budget, environ=fake_env(server), **FAST)

    client.complete(ask())
    assert budget.spent_usd == pytest.approx(calls[0].cost_usd) and budget.exhausted
    with pytest.raises(BudgetExhausted) as raised:
        client.complete(ask())

    assert raised.value.problem.startswith("LLM budget of $0.00 spent")
    assert raised.value.fix == "run again with a larger --llm-budget to resume"
    assert len(calls) == 1 and len(server.requests) == 1


def test_a_budget_is_shared_safely_by_threads():
    budget = Budget(limit_usd=None)
    threads = [threading.Thread(target=lambda: [budget.charge(0.001) for _ in range(1000)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.spent_usd == pytest.approx(8.0) and budget.remaining_usd is None
    budget.check()  # no limit: never exhausted


def test_a_resumed_budget_starts_from_what_was_spent():
    with pytest.raises(BudgetExhausted):
        Budget(limit_usd=1.0, spent_usd=1.0).check()
    assert Budget(limit_usd=2.0, spent_usd=0.5).remaining_usd == pytest.approx(1.5)


def test_a_price_override_file_changes_the_cost(serve, calls, tmp_path):
    server = serve(always("y" * 400))  # 100 output tokens
    prices_file = tmp_path / "prices.json"
    prices_file.write_text(json.dumps({"gpt-4o": {"input": 0, "output": 1000.0}, "my-model": [1, 2]}))
    env = fake_env(server, CUCO_LLM_PRICES=str(prices_file))

    by_env = create_llm("openai:gpt-4o", recorder=calls.append, environ=env, **FAST)
    by_arg = create_llm("openai:gpt-4o", recorder=calls.append, environ=fake_env(server),
                        prices=load_prices(prices_file), **FAST)
    default = create_llm("openai:gpt-4o", recorder=calls.append, environ=fake_env(server), **FAST)
    for client in (by_env, by_arg, default):
        client.complete(ask())

    assert calls[0].cost_usd == pytest.approx(100 * 1000.0 / 1e6) == calls[1].cost_usd
    assert calls[2].cost_usd == pytest.approx((calls[2].tokens_in * 2.5 + 100 * 10.0) / 1e6)
    assert load_prices(prices_file).price("my-model") == Price(1.0, 2.0)


def test_dated_snapshots_take_their_familys_price():
    table = default_prices()
    assert table.price("gpt-4o-mini-2024-07-18") == table.price("gpt-4o-mini") != table.price("gpt-4o")
    assert table.price("claude-opus-4-5-20251101") == Price(5.0, 25.0)
    assert table.price("claude-opus-4-1") == Price(15.0, 75.0)
    assert table.price("llama3") is None and table.cost("llama3", 10**6, 10**6) == 0


@pytest.mark.parametrize("content", ['{"gpt-4o": {"input": "cheap"}}', "[1, 2]", "{not json", '{"m": [-1, 2]}'])
def test_an_unreadable_prices_file_says_how_to_write_it(tmp_path, content):
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as raised:
        load_prices(path)
    assert "USD per million tokens" in raised.value.fix


def test_a_missing_prices_file_named_by_the_environment_is_an_error(tmp_path):
    with pytest.raises(ConfigError) as raised:
        load_prices(environ={"CUCO_LLM_PRICES": str(tmp_path / "nope.json")})
    assert "CUCO_LLM_PRICES" in raised.value.fix
