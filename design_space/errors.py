"""The one error tree of cuco.

It lives in ``design_space`` because every package may import ``design_space`` and nothing
else of ours (the star rule); ``cuco.errors`` is its public face and re-exports it.
Every error carries a ``fix``: the sentence that tells the user what to do.
"""

from __future__ import annotations


class CucoError(Exception):
    """Base of every error cuco raises on purpose. ``str()`` is one line: problem + fix."""

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem} -- fix: {fix}" if fix else problem)


class SpecError(CucoError):
    """A kernel spec is missing, malformed or inconsistent."""


class DesignPointError(CucoError):
    """A design point breaks one or more validity rules; ``violations`` names them."""

    def __init__(self, problem: str, fix: str = "", violations: tuple[str, ...] = ()) -> None:
        self.violations = violations
        super().__init__(problem, fix)


class ToolchainError(CucoError):
    """A compiler, header set or runtime library that a stage needs is missing."""


class ConfigError(CucoError):
    """An option or configuration value is invalid."""


class StoreError(CucoError):
    """The candidates database cannot be opened or does not match the run."""


class InfrastructureError(CucoError):
    """The machine failed us (sandbox, process spawn, disk), not the candidate."""


class ProposerError(CucoError):
    """A proposer is unknown or misconfigured."""


class LLMError(ProposerError):
    """An LLM call failed for good (retries spent, bad key, unreachable server). The run goes on
    with the other proposers; only a misconfiguration at start-up stops it."""


class PromptTooLong(LLMError):
    """A prompt does not fit the model's context window with room for a useful reply.
    ``fits_chars``: how many prompt characters would fit (None: unknown). The caller may shrink its
    prompt to that and ask once more."""

    def __init__(self, problem: str, fix: str = "", fits_chars: "int | None" = None) -> None:
        self.fits_chars = fits_chars
        super().__init__(problem, fix)


class BudgetExhausted(CucoError):
    """The run's LLM budget (dollars) is spent: no new LLM proposals; the run stops cleanly and
    resumes with a larger budget."""
