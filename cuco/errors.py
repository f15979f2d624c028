"""The public face of cuco's one error tree (defined in ``design_space.errors`` so every package
can raise it without breaking the star dependency rule), plus how the CLI prints it."""

from __future__ import annotations

from design_space.errors import (
    BudgetExhausted, ConfigError, CucoError, DesignPointError, InfrastructureError, LLMError, PromptTooLong, ProposerError,
    SpecError,
    StoreError, ToolchainError,
)

__all__ = ["BudgetExhausted", "ConfigError", "CucoError", "DesignPointError", "InfrastructureError", "LLMError",
           "PromptTooLong",
           "ProposerError", "SpecError", "StoreError", "ToolchainError", "one_line"]


def one_line(err: CucoError) -> str:
    """``error: <problem> -- fix: <fix>`` on a single line (never a traceback); messages may quote
    stored or user text, so control characters are shown as escapes."""
    from cuco.shown_text import visible

    text = " ".join(visible(str(err)).split())
    return f"error: {text}"
