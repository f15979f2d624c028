"""Sizing a slow-path prompt to the model's context window (agents/llm/context_window.py).

With the window known (given, discovered from a local server, or learned from a refusal), a
prompt gets the characters the window leaves after the reply's reserve: a diff's few
SEARCH/REPLACE blocks (a sixth of the window, 2048 tokens at most), or for a full rewrite or a
crossover the parent's own length plus a margin. A full rewrite that would take more than
``FULL_SHARE`` of the window is asked as a diff instead (a small local model cannot echo a
whole kernel back). Without a window the configured character budget stands.
"""

from __future__ import annotations

from typing import Optional

from agents.llm.context_window import MIN_REPLY_TOKENS

DIFF_REPLY_TOKENS = 2048
FULL_REPLY_MARGIN_TOKENS = 512
FULL_SHARE = 0.45
MIN_PROMPT_CHARS = 2_000  # below this no mutation prompt is worth sending


def _context(client) -> Optional[object]:
    ctx = getattr(client, "context", None)
    return ctx if ctx is not None and ctx.current() is not None else None


def reply_reserve(client, form: str, parent_chars: int) -> Optional[int]:
    """Tokens to keep for the reply of ``form`` (None: the window is unknown)."""
    ctx = _context(client)
    if ctx is None:
        return None
    window = ctx.current().tokens
    if form == "diff":
        return max(MIN_REPLY_TOKENS, min(DIFF_REPLY_TOKENS, window // 6))
    return int(parent_chars / ctx.chars_per_token) + FULL_REPLY_MARGIN_TOKENS


def fitted_form(client, form: str, parent_chars: int) -> str:
    """``form``, or "diff" when a whole kernel in the reply would crowd the window."""
    ctx = _context(client)
    if ctx is None or form == "diff":
        return form
    return "diff" if reply_reserve(client, form, parent_chars) > FULL_SHARE * ctx.current().tokens else form


def prompt_budget(client, form: str, parent_chars: int, default: int) -> int:
    """The prompt's character budget for this client and form."""
    reserve = reply_reserve(client, form, parent_chars)
    if reserve is None:
        return default
    return max(MIN_PROMPT_CHARS, min(default, _context(client).prompt_chars(reserve)))
