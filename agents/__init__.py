"""Proposers of candidates. This is cuco's own ``agents`` package, not the unrelated SDK that
shares the import name: cuco never depends on that SDK."""

import kernels as _kernels  # noqa: F401  (registers the built-in renderers the template proposer uses)
from agents import template_proposer as _template  # noqa: F401  (registers the built-in)
from agents.proposer import (
    ProposalRequest, Proposer, ProposerTools, create_proposer, proposer_names, register_proposer,
)
from agents.template_proposer import TemplateProposer, conservative_point

__all__ = ["ProposalRequest", "Proposer", "ProposerTools", "TemplateProposer", "conservative_point", "create_proposer",
           "proposer_names", "register_proposer"]
