"""The public face of cuco's one error tree (defined in ``design_space.errors`` so every package
can raise it without breaking the star dependency rule), plus how the CLI prints it."""

from __future__ import annotations

from design_space.errors import (
    BudgetExhausted, ConfigError, CucoError, DesignPointError, InfrastructureError, LLMError, ProposerError, SpecError,
    StoreError, ToolchainError,
)

__all__ = ["BudgetExhausted", "ConfigError", "CucoError", "DesignPointError", "InfrastructureError", "LLMError",
           "ProposerError", "SpecError", "StoreError", "ToolchainError", "one_line"]


def one_line(err: CucoError) -> str:
    """``error: <problem> -- fix: <fix>`` on a single line (never a traceback)."""
    text = " ".join(str(err).split())
    return f"error: {text}"
