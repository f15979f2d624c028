"""What an LLM call costs: a price table in USD per million input and output tokens.

The defaults cover common OpenAI and Anthropic models (list prices, standard tier, no caching or
batch discounts). A JSON file overrides or extends them: pass its path to ``load_prices`` or set
``CUCO_LLM_PRICES``. The file maps a model name to ``{"input": usd, "output": usd}`` or to
``[input, output]``, per million tokens.

A model is priced by exact name, else by the longest table name it starts with, so dated
snapshots (``gpt-4o-2024-08-06``, ``claude-sonnet-4-5-20250929``) take their family's price.
A model the table does not know costs 0: the call is recorded with ``cost_usd=0``, the client
logs one warning per model and exposes ``price_known=False``, and the budget cannot stop it —
add the model to a prices file to make the budget bite. (Local ``openai-compatible`` servers are
meant to cost 0, so no warning is logged for them.)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Union

from design_space.errors import ConfigError

PRICES_ENV = "CUCO_LLM_PRICES"


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input_per_mtok + tokens_out * self.output_per_mtok) / 1_000_000


# USD per million tokens (input, output), list prices.
DEFAULT_PRICES: dict[str, Price] = {name: Price(i, o) for name, (i, o) in {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-5": (5.00, 25.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
}.items()}


class PriceTable:
    """Model name -> Price, with prefix fallback. Immutable once built."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        self._prices = dict(prices)
        self._by_length = sorted(self._prices, key=len, reverse=True)

    def price(self, model: str) -> Optional[Price]:
        """The model's price, or None when the table does not know it."""
        if model in self._prices:
            return self._prices[model]
        for name in self._by_length:
            if model.startswith(name):
                return self._prices[name]
        return None

    def cost(self, model: str, tokens_in: int, tokens_out: int) -> float:
        """USD for one call; 0 for a model the table does not know (see the module doc)."""
        price = self.price(model)
        return price.cost(tokens_in, tokens_out) if price else 0.0

    def with_overrides(self, prices: Mapping[str, Price]) -> "PriceTable":
        return PriceTable({**self._prices, **prices})

    def models(self) -> tuple[str, ...]:
        return tuple(sorted(self._prices))


def default_prices() -> PriceTable:
    return PriceTable(DEFAULT_PRICES)


def load_prices(path: Union[str, Path, None] = None, *, environ: Optional[Mapping[str, str]] = None) -> PriceTable:
    """The default table, overridden by the JSON file at ``path`` (else at $CUCO_LLM_PRICES, if set)."""
    env = os.environ if environ is None else environ
    chosen = path if path is not None else env.get(PRICES_ENV) or None
    table = default_prices()
    if chosen is None:
        return table
    return table.with_overrides(_read_price_file(Path(chosen)))


_FORMAT_FIX = ('write a JSON object mapping each model to {"input": usd, "output": usd} '
               'or [input, output], in USD per million tokens')


def _read_price_file(path: Path) -> dict[str, Price]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"the LLM prices file {path} does not exist",
                          f"create it or unset {PRICES_ENV}; {_FORMAT_FIX}") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the LLM prices file {path}: {exc}", _FORMAT_FIX) from None
    if not isinstance(data, dict):
        raise ConfigError(f"the LLM prices file {path} is not a JSON object", _FORMAT_FIX)
    return {str(model): _parse_price(path, model, entry) for model, entry in data.items()}


def _parse_price(path: Path, model: str, entry: object) -> Price:
    if isinstance(entry, dict) and set(entry) >= {"input", "output"}:
        values = (entry["input"], entry["output"])
    elif isinstance(entry, (list, tuple)) and len(entry) == 2:
        values = tuple(entry)
    else:
        raise ConfigError(f"the LLM prices file {path} has an unreadable price for {model!r}: {entry!r}", _FORMAT_FIX)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values):
        raise ConfigError(f"the LLM prices file {path} gives {model!r} a price that is not a number >= 0: {entry!r}",
                          _FORMAT_FIX)
    return Price(float(values[0]), float(values[1]))
