"""Reading an LLM's reply: the code (SEARCH/REPLACE blocks or one fenced source) and the design
point it declares (``DESIGN-POINT: backend/placement/sync/issuer/chunk/ctas``, a DesignPoint key).

A reply with no code at all (empty, prose only, a fence left open) is a parse failure with the
reason; a reply with code but no valid DESIGN-POINT line keeps its code and says what is wrong
with the point, so the caller can ask for a repair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from design_space.errors import DesignPointError
from design_space.point import DesignPoint

_BLOCK = re.compile(r"^[ \t]*<{5,9} ?SEARCH[ \t]*\n(.*?)\n?^[ \t]*={5,9}[ \t]*\n(.*?)\n?^[ \t]*>{5,9} ?REPLACE[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_LANGS = {"", "cuda", "cu", "cpp", "c++", "c", "cc", "cxx", "h", "hpp"}
# At the start of a line, so the templates' own "// design point: ..." header comment never counts.
_POINT = re.compile(r"^[ \t>*_`]*DESIGN[-_]POINT[*_`]*[ \t]*[:=][*_` \t]*([\w/]+)", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class ParsedReply:
    form: Optional[str]  # "diff" | "full" | None (no code)
    blocks: tuple[tuple[str, str], ...] = ()  # diff: (search, replace) pairs in order
    code: Optional[str] = None  # full: the whole source
    point: Optional[DesignPoint] = None
    point_error: Optional[str] = None  # why no point was read (None when one was)
    error: Optional[str] = None  # why no code was read (None when some was)

    @property
    def ok(self) -> bool:
        return self.form is not None


def parse_reply(text: str) -> ParsedReply:
    point, point_error = parse_point(text or "")
    if not (text or "").strip():
        return ParsedReply(form=None, point=point, point_error=point_error, error="the reply is empty")
    blocks = tuple((s, r) for s, r in _BLOCK.findall(text))
    if blocks:
        return ParsedReply(form="diff", blocks=blocks, point=point, point_error=point_error)
    code = _largest_fence(text)
    if code is not None:
        return ParsedReply(form="full", code=code, point=point, point_error=point_error)
    return ParsedReply(form=None, point=point, point_error=point_error, error=_why_no_code(text))


def _largest_fence(text: str) -> Optional[str]:
    fences = [body for lang, body in _FENCE.findall(text) if lang.lower() in _CODE_LANGS and body.strip()]
    return max(fences, key=len) if fences else None


def _why_no_code(text: str) -> str:
    if "<<<<<<< SEARCH" in text or ">>>>>>> REPLACE" in text:
        return ("the SEARCH/REPLACE blocks are malformed: each needs a '<<<<<<< SEARCH' line, the old lines, "
                "a '=======' line, the new lines and a '>>>>>>> REPLACE' line")
    if "```" in text:
        return "the reply opens a code fence but never closes it (or the fence holds no code)"
    snippet = " ".join(text.split())[:120]
    return f"the reply holds no ```cuda block and no SEARCH/REPLACE block (it begins: {snippet!r})"


def parse_point(text: str) -> tuple[Optional[DesignPoint], Optional[str]]:
    """The declared point (the last DESIGN-POINT line wins) or why there is none."""
    found = _POINT.findall(text)
    if not found:
        return None, "the reply has no 'DESIGN-POINT: backend/placement/sync_scope/issuer/<KiB>K/comm_ctas' line"
    try:
        return DesignPoint.parse_key(found[-1]), None
    except DesignPointError as e:
        return None, f"DESIGN-POINT {found[-1]!r} is not a valid design point: {e.problem}"
