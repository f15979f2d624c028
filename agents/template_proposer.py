"""The template proposer: the offline default. It searches the declared design space with no
LLM at all — seeded stratified sampling, then evolution of design points (tournament parent
selection, one-dimension mutation, uniform crossover), rendering each point through the
pattern's templates. Optionally it screens many offspring with the analytic model (a cheap
surrogate) and proposes the most promising, keeping a share of unscreened exploration."""

from __future__ import annotations

import random
from typing import Optional

from design_space.candidate import Candidate, Origin, OriginKind
from design_space.dimensions import Issuer, Placement, SyncScope
from design_space.errors import DesignPointError
from design_space.evaluation import Evaluation
from design_space.model import estimate
from design_space.point import DIMENSIONS, DesignPoint
from design_space.rules import violations
from design_space.space import dimension_values, neighbours, valid_points
from agents.proposer import ProposalRequest, register_proposer


def conservative_point(points: list[DesignPoint]) -> Optional[DesignPoint]:
    """Sequential, global barrier, CTA issuer, coarse chunks: the safest generation-0 design."""
    def score(p: DesignPoint) -> tuple:
        return (p.placement is not Placement.SEQUENTIAL, p.sync_scope is not SyncScope.GLOBAL_BARRIER,
                p.issuer is not Issuer.CTA, -p.chunk_bytes, -p.comm_ctas)
    return min(points, key=score) if points else None


class TemplateProposer:
    name = "template"

    def __init__(self, tournament: int = 3, crossover_rate: float = 0.3, screen: int = 8,
                 explore_share: float = 0.25) -> None:
        self.tournament = tournament
        self.crossover_rate = crossover_rate
        self.screen = screen  # offspring drafted per proposal and ranked by the model (1 = no screening)
        self.explore_share = explore_share

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        rng = random.Random(request.seed * 7919 + request.generation)
        space = valid_points(request.pattern, request.hardware, request.spec.restrictions)
        if not space:
            return []
        seen = set(request.known_hashes)
        parents = self._ranked_parents(request)
        out: list[Candidate] = []
        if request.generation == 0 or not parents:
            drafts = self._initial(space, rng, request.count * 3)
        else:
            drafts = self._offspring(request, parents, rng)
        for point, parent_ids, patch in drafts:
            cand = self._render(request, point, parent_ids, patch)
            if cand.content_hash in seen:
                continue
            seen.add(cand.content_hash)
            out.append(cand)
            if len(out) == request.count:
                break
        if len(out) < request.count:  # the neighbourhood is exhausted: fill with fresh samples
            for point in rng.sample(space, len(space)):
                cand = self._render(request, point, (), "sample")
                if cand.content_hash not in seen:
                    seen.add(cand.content_hash)
                    out.append(cand)
                    if len(out) == request.count:
                        break
        return out

    def _initial(self, space: list[DesignPoint], rng: random.Random, n: int) -> list[tuple]:
        """The conservative point first, then samples stratified over placements."""
        by_placement: dict[Placement, list[DesignPoint]] = {}
        for p in space:
            by_placement.setdefault(p.placement, []).append(p)
        strata = [rng.sample(v, len(v)) for _, v in sorted(by_placement.items(), key=lambda kv: kv[0].value)]
        picks = [conservative_point(space)]
        while len(picks) < n and any(strata):
            for s in strata:
                if s:
                    picks.append(s.pop())
        return [(p, (), "sample") for p in picks if p is not None]

    def _ranked_parents(self, request: ProposalRequest) -> list[tuple[Candidate, Evaluation]]:
        ok = [(c, e) for c, e in request.history if e is not None and e.fitness is not None and c.point is not None]
        return sorted(ok, key=lambda ce: ce[1].fitness or 0.0, reverse=True)

    def _select(self, parents: list, rng: random.Random) -> tuple[Candidate, Evaluation]:
        contenders = [parents[rng.randrange(len(parents))] for _ in range(min(self.tournament, len(parents)))]
        return max(contenders, key=lambda ce: ce[1].fitness or 0.0)

    def _offspring(self, request: ProposalRequest, parents: list, rng: random.Random) -> list[tuple]:
        values = dimension_values(request.pattern, request.spec.restrictions)
        drafts = []
        for _ in range(request.count * max(1, self.screen)):
            a, _ = self._select(parents, rng)
            if len(parents) > 1 and rng.random() < self.crossover_rate:
                b, _ = self._select(parents, rng)
                child = self._crossover(a.point, b.point, rng)
                if child is not None:
                    drafts.append((child, (a.id, b.id), "crossover"))
                    continue
            moves = neighbours(a.point, values)
            if moves:
                dim, child = moves[rng.randrange(len(moves))]
                drafts.append((child, (a.id,), f"mutate:{dim}"))
        drafts = [d for d in drafts if self._valid(request, d[0])]
        return self._screened(request, drafts, rng)

    def _crossover(self, a: DesignPoint, b: DesignPoint, rng: random.Random) -> Optional[DesignPoint]:
        mix = {d: getattr(a if rng.random() < 0.5 else b, d) for d in DIMENSIONS}
        try:
            return DesignPoint(**mix)
        except DesignPointError:
            return None

    def _valid(self, request: ProposalRequest, p: DesignPoint) -> bool:
        return not violations(p, request.hardware)

    def _screened(self, request: ProposalRequest, drafts: list[tuple], rng: random.Random) -> list[tuple]:
        """Rank drafts by simulated time on the headline shape; keep some unranked for exploration."""
        if self.screen <= 1 or not drafts:
            return drafts
        spec, world = request.spec, request.spec.target_world
        cost = request.pattern.cost(spec.headline.dims, world, spec.dtype)

        def sim(p: DesignPoint) -> float:
            return estimate(cost, p, world, request.hardware, spec.dtype.value).simulated
        explore = max(1, int(request.count * self.explore_share))
        ranked = sorted(drafts, key=lambda d: sim(d[0]))
        head = ranked[: request.count - explore]
        rest = ranked[request.count - explore:]
        return head + rng.sample(rest, len(rest))

    def _render(self, request: ProposalRequest, point: DesignPoint, parent_ids: tuple, patch: str) -> Candidate:
        return Candidate(parent_ids=tuple(parent_ids), generation=request.generation,
                         origin=Origin(kind=OriginKind.TEMPLATE, patch_type=patch),
                         source=request.pattern.render(point), point=point)


register_proposer("template", TemplateProposer)
