"""The leaderboard's query string, checked: filters, sort, order and page, or a ConfigError that
says which value is wrong and what it may be (the page answers 400 with it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from candidates_db.leaderboard_query import FILTERS, SORTS
from design_space.errors import ConfigError

PER_PAGE = 50
MAX_PER_PAGE = 500
TIMINGS = ("measured", "simulated")
# What a first click on a column sorts by: the best, the newest, or in reading order.
DEFAULT_ORDER = {"speedup": "desc", "sol": "desc", "created": "desc", "generation": "asc", "island": "asc",
                 "status": "asc"}


@dataclass(frozen=True)
class BoardQuery:
    filters: dict[str, Any] = field(default_factory=dict)  # only the filters given, by name
    sort: str = "speedup"
    order: str = "desc"
    page: int = 1
    per_page: int = PER_PAGE

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    def params(self, **changes: Any) -> dict[str, Any]:
        """The query string of this query with ``changes`` (a key set to None is dropped); defaults
        are left out so links stay short."""
        values: dict[str, Any] = dict(self.filters)
        values |= {"sort": self.sort, "order": self.order, "page": self.page, "per_page": self.per_page}
        values |= changes
        defaults = {"sort": "speedup", "order": DEFAULT_ORDER[values["sort"]], "page": 1, "per_page": PER_PAGE}
        return {k: v for k, v in values.items() if v is not None and v != "" and defaults.get(k) != v}

    def sort_params(self, key: str) -> dict[str, Any]:
        """Where a click on column ``key`` goes: the other order if it is the sorted column."""
        if key == self.sort:
            order = "asc" if self.order == "desc" else "desc"
        else:
            order = DEFAULT_ORDER[key]
        return self.params(sort=key, order=order, page=None)

    def as_dict(self) -> dict[str, Any]:
        return {"filters": dict(self.filters), "sort": self.sort, "order": self.order, "page": self.page,
                "per_page": self.per_page}


def _int(name: str, raw: str, low: int, high: Optional[int] = None) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low or (high is not None and value > high):
        span = f"{low}..{high}" if high is not None else f"{low} or more"
        raise ConfigError(f"{name}={raw!r} is not a whole number in {span}", f"give {name} as a number in {span}")
    return value


def board_query(args: Mapping[str, str]) -> BoardQuery:
    """Parse ``args`` (the request's query parameters); empty values mean "no filter"."""
    filters: dict[str, Any] = {}
    for name in FILTERS:
        raw = (args.get(name) or "").strip()
        if not raw:
            continue
        if name in ("island", "generation"):
            filters[name] = _int(name, raw, 0)
        elif name == "timing" and raw not in TIMINGS:
            raise ConfigError(f"timing={raw!r} is not a timing source", f"use one of {', '.join(TIMINGS)}")
        else:
            filters[name] = raw
    sort = args.get("sort") or "speedup"
    if sort not in SORTS:
        raise ConfigError(f"sort={sort!r} is not a leaderboard column", f"sort by one of {', '.join(SORTS)}")
    order = args.get("order") or DEFAULT_ORDER[sort]
    if order not in ("asc", "desc"):
        raise ConfigError(f"order={order!r} is not a sort order", "use asc or desc")
    page = _int("page", args.get("page") or "1", 1)
    per_page = _int("per_page", args.get("per_page") or str(PER_PAGE), 1, MAX_PER_PAGE)
    return BoardQuery(filters=filters, sort=sort, order=order, page=page, per_page=per_page)
