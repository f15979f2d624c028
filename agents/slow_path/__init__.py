"""The slow path: LLM evolution of candidates inside their evolve blocks (islands, parent
selection, inspirations and a quality-diversity archive, diff / full / crossover patches with a
bounded repair, a novelty filter, meta-summaries, an explore-then-exploit schedule, and a UCB1
choice among models). Importing it registers the ``llm`` proposer."""

from agents.slow_path.budget import DEFAULT_BUDGET, TRIM_ORDER, PromptSize, prompt_size_stats
from agents.slow_path.llm_proposer import LLMProposer
from agents.slow_path.novelty import is_novel, similarity
from agents.slow_path.patches import PatchResult, apply_crossover, apply_diff, apply_full
from agents.slow_path.reply import ParsedReply, parse_reply

__all__ = ["DEFAULT_BUDGET", "LLMProposer", "ParsedReply", "PatchResult", "PromptSize", "TRIM_ORDER", "apply_crossover",
           "apply_diff", "apply_full", "is_novel", "parse_reply", "prompt_size_stats", "similarity"]
