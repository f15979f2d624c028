"""How cuco prints: one console for a terminal or a pipe, and the house style of its tables.

Every table fits ``WIDTH`` columns by default, decided by what the table holds, not by the
terminal: ids and the figures (status, SOL, speedup) sit in columns that never shrink, and only
wide secondary text (design points, origins, reasons) folds. On a terminal narrower than
``WIDTH`` the console is as wide as the terminal (never under ``NARROWEST``, where those fixed
columns still fit), so tables fold their text columns rather than the terminal wrapping rows.
``--wide`` lifts the limit: each thing is printed at its natural width, with every column.

A pipe or a file gets plain text at ``WIDTH`` columns: no escape sequences and ASCII boxes.
rich's own switches still apply: ``FORCE_COLOR`` or ``TTY_COMPATIBLE=1`` make it a terminal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

WIDTH = 100
NARROWEST = 80
_UNLIMITED = 100_000  # --wide: the console never limits; each print takes its natural width


class CucoConsole(Console):
    """A rich console that knows whether it is plain (a pipe) and whether it is wide (``--wide``)."""

    def __init__(self, *, plain: bool, wide: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plain, self.wide = plain, wide

    @property
    def encoding(self) -> str:
        # rich draws boxes, rules and bars in ASCII for a console that cannot encode more
        return "ascii" if self.plain else super().encoding

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.wide or "width" in kwargs:
            return super().print(*objects, **kwargs)
        for obj in objects:  # at its natural width: a panel does not stretch to the unlimited console
            natural = Measurement.get(self, self.options, obj).maximum
            super().print(obj, width=max(1, natural), **kwargs)


def make_console(wide: bool = False, file=None) -> CucoConsole:
    """The console of one command: a terminal's width within [NARROWEST, WIDTH], WIDTH for a pipe,
    no limit with ``wide``."""
    probe = Console(file=file)
    plain = not probe.is_terminal
    if wide:
        width = _UNLIMITED
    elif plain:
        width = WIDTH
    else:
        width = max(NARROWEST, min(probe.width, WIDTH))
    return CucoConsole(plain=plain, wide=wide, file=file, width=width, force_terminal=not plain,
                       no_color=True if plain else None)


def is_wide(console) -> bool:
    """Whether ``console`` asked for every column (a plain rich console did not)."""
    return bool(getattr(console, "wide", False))


class _HouseBox(box.Box):
    """Columns apart by spaces under one header rule: ``─`` on a terminal, ``-`` in plain text
    (rich would swap any other box for its full ASCII grid there)."""

    def substitute(self, options, safe: bool = True) -> box.Box:
        return _PLAIN_HEAD if options.ascii_only else self


_RULE_ONLY = "    \n    \n {0}{0} \n    \n    \n    \n    \n    \n"
HOUSE = _HouseBox(_RULE_ONLY.format("─"))
_PLAIN_HEAD = box.Box(_RULE_ONLY.format("-"), ascii=True)


def table(title: Any = None, caption: Any = None, **kwargs: Any) -> Table:
    """A table in the house style: a header rule, columns two spaces apart, no side borders,
    title and caption on the left."""
    style = dict(box=HOUSE, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), title_justify="left",
                 caption_justify="left")
    return Table(title=title, caption=caption, **(style | kwargs))


def add_id_column(t: Table, header: str, ids: Iterable[Any]) -> None:
    """A column of candidate ids as wide as the longest one: it never shrinks or folds, so every id
    can be copied whole into ``cuco show``."""
    width = max([cell_len(header), *(cell_len(_plain(i)) for i in ids)])
    t.add_column(header, width=width, min_width=width, no_wrap=True, overflow="ignore")


def _plain(x: Any) -> str:
    return getattr(x, "plain", None) or str(x)


# Column kinds: figures and short words never wrap; text folds (rich shrinks only these).
FIGURE = {"justify": "right", "no_wrap": True}
WORD = {"no_wrap": True}
TEXT = {"overflow": "fold"}
