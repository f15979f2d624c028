"""The shared vocabulary of cuco: pure data and validation, no I/O, imports nothing of ours.

Importing this package registers the built-in hardware profiles, rules, patterns and
template families.
"""

from design_space import families as _families  # noqa: F401  (registers the built-in patterns)
from design_space.candidate import Candidate, Origin, OriginKind, content_hash
from design_space.dimensions import CHUNK_BYTES, COMM_CTAS, DIMENSION_DOCS, Backend, Issuer, Placement, SyncScope
from design_space.errors import (
    BudgetExhausted, ConfigError, CucoError, DesignPointError, InfrastructureError, LLMError, ProposerError, SpecError,
    StoreError, ToolchainError,
)
from design_space.evaluation import (
    BuildStats, Evaluation, KernelStats, Provenance, RankCheck, Stage, Status, Tier, Timing, TimingSource, trim_log,
)
from design_space.llm import LLMCall
from design_space.hardware import HardwareProfile, get_profile, profile_names, register_profile
from design_space.model import Estimate, WorkloadCost, estimate
from design_space.patterns import (Pattern, get_pattern, pattern_names, register_pattern, register_renderer,
                                     unregister_pattern)
from design_space.point import DIMENSIONS, DesignPoint
from design_space.rules import RULES, Rule, register_rule, violations
from design_space.run import RunInfo, RunStatus
from design_space.space import dimension_values, is_valid, neighbours, valid_points
from design_space.spec import DType, KernelSpec, ShapeCase, Tolerance

__all__ = [
    "BudgetExhausted", "LLMCall", "LLMError", "Backend", "BuildStats", "CHUNK_BYTES", "COMM_CTAS", "Candidate", "ConfigError", "CucoError", "DIMENSIONS",
    "DIMENSION_DOCS", "DType", "DesignPoint", "DesignPointError", "Estimate", "Evaluation", "HardwareProfile",
    "InfrastructureError", "Issuer", "KernelSpec", "KernelStats", "Origin", "OriginKind", "Pattern", "Placement",
    "Provenance", "ProposerError", "RULES", "RankCheck", "Rule", "RunInfo", "RunStatus", "ShapeCase", "SpecError",
    "Stage", "Status", "StoreError", "SyncScope", "Tier", "Timing", "TimingSource", "ToolchainError", "Tolerance",
    "WorkloadCost", "content_hash", "dimension_values", "estimate", "get_pattern", "get_profile", "is_valid",
    "neighbours", "pattern_names", "profile_names", "register_pattern", "register_profile", "register_renderer",
    "register_rule", "unregister_pattern",
    "trim_log", "valid_points", "violations",
]
