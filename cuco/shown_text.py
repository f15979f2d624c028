"""Stored text shown as data: what candidates, LLMs and the database hold, made safe for a terminal.

Sources, reasons, logs, flags, prompts and replies, run names, notes, model names and spec names
are written by untrusted code or models. Printed raw, such text can restyle or break the output
(rich markup like ``[/]`` or ``[link=...]``, emoji codes like ``:warning:``) or drive the terminal
itself (ESC sequences: colours, cursor moves, OSC 8 hyperlinks, window titles; BEL; backspace or a
carriage return that overwrites what was printed; bidi overrides that reorder what is read;
zero-width and other format characters that hide text). So the CLI never passes such text to rich
as markup, and every character of the classes below is shown as a Python-style escape
(``\\x1b``, ``\\r``, ``\\u202e``). Newline and tab are kept. ``--json`` output needs none of this: ``json``
escapes control characters itself, so the stored text comes back exactly.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Union

from rich.text import Text

# Unicode categories never printed as they are: controls (C0, DEL, C1), format characters (bidi
# embeddings, overrides and isolates, zero-width, soft hyphen, BOM, tag characters), lone surrogates
# (they cannot even be encoded), line/paragraph separators and unassigned code points (which a
# newer terminal may treat as any of these).
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Cn"})
_KEPT = frozenset("\n\t")
# Printable ASCII, newline and tab are always safe: only other characters need a look.
_CANDIDATES = re.compile(r"[^\x20-\x7e\n\t]")
ESCAPE_STYLE = "reverse"  # how an escape stands out on a terminal (plain text when piped)


def _hidden(ch: str) -> bool:
    return ch not in _KEPT and unicodedata.category(ch) in _HIDDEN_CATEGORIES


def _escape(ch: str) -> str:
    if ch == "\r":
        return "\\r"
    cp = ord(ch)
    if cp < 0x100:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def visible(text: str) -> str:
    """``text`` with every control or invisible character written as an escape; newline and tab kept."""
    return _CANDIDATES.sub(lambda m: _escape(m.group()) if _hidden(m.group()) else m.group(), str(text))


def source_text(source: str) -> str:
    """A source file's text for stdout: ``visible`` except that a CR directly before LF is kept (it
    cannot overwrite anything), so an honest file, CRLF or not, prints back byte for byte."""
    return "\r\n".join(visible(part) for part in str(source).split("\r\n"))


def shown(text: object, style: str = "") -> Text:
    """A rich ``Text`` of ``text`` (never parsed as markup or emoji codes), escapes highlighted."""
    out = Text(style=style)
    raw, last = str(text), 0
    for m in _CANDIDATES.finditer(raw):
        if _hidden(m.group()):
            out.append(raw[last:m.start()])
            out.append(_escape(m.group()), style=ESCAPE_STYLE)
            last = m.end()
    out.append(raw[last:])
    return out


Part = Union[str, tuple[str, str]]


def line(*parts: Part) -> Text:
    """One ``Text`` from pieces, each plain text or (text, style); every piece goes through ``shown``."""
    out = Text()
    for part in parts:
        text, style = (part, "") if isinstance(part, str) else part
        out.append_text(shown(text, style))
    return out
