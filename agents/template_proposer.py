"""The template proposer: the offline default. It searches the declared design space with no
LLM at all and renders each point through the pattern's templates.

Strategy (the analytic model is a prior, the measurements correct it):

1. Rank the whole valid space by the model (``point_search.Prior``: the evaluator's simulated
   fitness of every point; thousands of points cost milliseconds, cached per space).
2. Generation 0 (or no measurement yet): the conservative point first (sequential, global
   barrier, CTA issuer, coarse chunks: the design most likely to be correct), then the model's
   best point, then the model's best point of every other placement and backend, so the first
   generation measures each family at its best and the correction has something to learn from;
   the rest by model rank.
3. Later generations score each untried point as prior + ``Correction`` (per-dimension-value
   effects fitted to ``log measured - log predicted``, and a penalty for values that keep
   failing), then fill the generation with
   - exploitation: the best-scoring untried points, at most ``max_per_family`` from one
     (backend, placement, sync_scope, issuer) family, so one wrong family cannot eat a whole
     generation;
   - local moves (``local_share``): the best-scoring untried neighbour of one of the fittest
     measured points (one-dimension mutation), or the best of several uniform crossovers of two
     of them (``crossover_rate``), which catches interactions the additive correction misses;
   - exploration (``explore_share``): the untried point with the best optimistic score (corrected
     prior + ``optimism`` x the residual spread, larger for values measured little; no bonus while
     the model has been exact), and every ``coverage_every`` generations instead the best untried
     point holding the least-measured dimension value, so no value stays unmeasured only because
     the model dislikes it.
4. Never the same content twice: drafts whose rendering hashes to a known hash are skipped, and
   the generation is topped up from the ranking (then from points tried in another rendering).

When the model is exact the correction is zero and the ranking is the model's own, so the
model's optimum is the second proposal; when it is wrong the measured residuals move the ranking
(benchmarks/search_efficiency.py measures both, and a noisy and a biased model).
Proposals are seeded by (seed, generation): ties and exploration draws repeat on resume.
"""

from __future__ import annotations

import random
from typing import Iterable, Iterator, Optional

from design_space.candidate import Candidate, Origin, OriginKind
from design_space.dimensions import Backend, Issuer, Placement, SyncScope
from design_space.errors import DesignPointError
from design_space.point import DIMENSIONS, DesignPoint
from design_space.space import dimension_values, neighbours
from agents.point_search import Correction, Observations, Prior, features, observe, prior_for
from agents.proposer import ProposalRequest, register_proposer

Draft = tuple[int, tuple[str, ...], str]  # point index in the Prior, parent ids, patch type
FAMILY_DIMS = ("backend", "placement", "sync_scope", "issuer")


def conservative_point(points: list[DesignPoint]) -> Optional[DesignPoint]:
    """Sequential, global barrier, CTA issuer, coarse chunks: the safest generation-0 design.
    Among backends, the simplest device-initiated one first (lsa, then declaration order)."""
    backends = list(Backend)

    def score(p: DesignPoint) -> tuple:
        return (p.placement is not Placement.SEQUENTIAL, p.sync_scope is not SyncScope.GLOBAL_BARRIER,
                p.issuer is not Issuer.CTA, backends.index(p.backend), -p.chunk_bytes, -p.comm_ctas)
    return min(points, key=score) if points else None


class TemplateProposer:
    name = "template"

    def __init__(self, explore_share: float = 0.125, local_share: float = 0.25, crossover_rate: float = 0.3,
                 parents: int = 3, max_per_family: int = 3, optimism: float = 2.0, coverage_every: int = 2) -> None:
        self.explore_share = explore_share
        self.local_share = local_share
        self.crossover_rate = crossover_rate
        self.parents = parents  # local moves start from the fittest this many measured points
        self.max_per_family = max_per_family
        self.optimism = optimism  # exploration bonus, in residual standard deviations
        self.coverage_every = coverage_every  # every this many generations one slot measures a rare value

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        if request.count <= 0:
            return []
        prior = prior_for(request.spec, request.pattern, request.hardware)
        if not prior.points:
            return []
        obs = observe(request.history, prior)
        search = _Search(request, prior, obs, Correction(obs))
        if not obs.measured:
            drafts: Iterable[Draft] = self._initial(search)
        else:
            drafts = self._offspring(search, random.Random(request.seed * 7919 + request.generation))
        # top-ups: the ranking, then points tried in another form (e.g. an LLM's) whose template
        # rendering is still new
        fill = ((i, (), "surrogate") for i in [*search.ranked, *search.tried_ranked])
        return self._render_new(request, prior, [drafts, fill])

    def _render_new(self, request: ProposalRequest, prior: Prior, sources: list[Iterable[Draft]]) -> list[Candidate]:
        seen, used, out = set(request.known_hashes), set(), []
        for source in sources:
            for i, parent_ids, patch in source:
                if i in used:
                    continue
                used.add(i)
                point = prior.points[i]
                cand = Candidate(parent_ids=tuple(parent_ids), generation=request.generation,
                                 origin=Origin(kind=OriginKind.TEMPLATE, patch_type=patch),
                                 source=request.pattern.render(point), point=point)
                if cand.content_hash in seen:
                    continue
                seen.add(cand.content_hash)
                out.append(cand)
                if len(out) == request.count:
                    return out
        return out

    def _initial(self, search: "_Search") -> Iterator[Draft]:
        """Conservative first, the model's best second, then the best of each other placement
        and backend."""
        first = conservative_point(list(search.prior.points))
        if first is not None:
            yield search.prior.index[first], (), "conservative"
        if search.ranked:
            yield search.ranked[0], (), "surrogate"
        for dim in ("placement", "backend"):
            covered: set = set()
            for i in search.ranked:
                value = getattr(search.prior.points[i], dim)
                if value not in covered:
                    covered.add(value)
                    yield i, (), f"best_{dim}"

    def _offspring(self, search: "_Search", rng: random.Random) -> list[Draft]:
        n = search.request.count
        n_explore = int(n * self.explore_share + 0.5) if n > 2 else 0
        n_local = int(n * self.local_share + 0.5) if n > 1 else 0
        drafts = search.exploit(max(1, n - n_explore - n_local), self.max_per_family)
        parents = search.obs.best(self.parents)
        for k in range(n_local):
            draft = None
            if len(parents) > 1 and rng.random() < self.crossover_rate:
                draft = search.crossover(rng.sample(parents, 2), rng)
            drafts.append(draft or search.mutate(parents[k % len(parents)]))
        for k in range(n_explore):
            if k == 0 and self.coverage_every and search.request.generation % self.coverage_every == 1:
                drafts.append(search.cover(rng))
            else:
                drafts.append(search.optimist(self.optimism))
        return [d for d in drafts if d is not None]


class _Search:
    """One proposal's view of the space: corrected scores, the untried points best first, and
    the pickers. Every picker marks what it picks as taken, so picks never repeat."""

    def __init__(self, request: ProposalRequest, prior: Prior, obs: Observations, correction: Correction) -> None:
        self.request, self.prior, self.obs, self.correction = request, prior, obs, correction
        self.score = [lf + correction.value(ft) for lf, ft in zip(prior.log_fitness, prior.feats)]
        order = sorted(range(len(prior.points)), key=lambda i: (-self.score[i], prior.keys[i]))
        tried = {prior.index[p] for p in obs.tried if p in prior.index}
        self.ranked = [i for i in order if i not in tried]
        self.tried_ranked = [i for i in order if i in tried]
        self.taken: set[int] = set()
        self.values = dimension_values(request.pattern, request.spec.restrictions)

    def _open(self, point: DesignPoint) -> Optional[int]:
        i = self.prior.index.get(point)
        return i if i is not None and i not in self.taken and point not in self.obs.tried else None

    def _take(self, i: int, parent_ids: tuple[str, ...], patch: str) -> Draft:
        self.taken.add(i)
        return i, parent_ids, patch

    def exploit(self, n: int, max_per_family: int) -> list[Draft]:
        """The best-scoring untried points, at most ``max_per_family`` of one family."""
        per_family: dict[tuple, int] = {}
        out = []
        for i in self.ranked:
            if len(out) == n:
                break
            family = tuple(f for f in self.prior.feats[i] if f[0] in FAMILY_DIMS)
            if i in self.taken or per_family.get(family, 0) >= max_per_family:
                continue
            per_family[family] = per_family.get(family, 0) + 1
            out.append(self._take(i, (), "surrogate"))
        return out

    def mutate(self, parent: tuple) -> Optional[Draft]:
        """The best-scoring untried neighbour of a measured point (one dimension changed)."""
        point, _, cand = parent
        moves = [(dim, i) for dim, p in neighbours(point, self.values) if (i := self._open(p)) is not None]
        if not moves:
            return None
        dim, best = max(moves, key=lambda m: (self.score[m[1]], self.prior.keys[m[1]]))
        return self._take(best, (cand.id,), f"mutate:{dim}")

    def crossover(self, pair: list, rng: random.Random, tries: int = 8) -> Optional[Draft]:
        """The best-scoring of a few uniform crossovers of two measured points."""
        (a, _, ca), (b, _, cb) = pair
        children = set()
        for _ in range(tries):
            try:
                child = DesignPoint(**{d: getattr(a if rng.random() < 0.5 else b, d) for d in DIMENSIONS})
            except DesignPointError:
                continue
            i = self._open(child)
            if i is not None:
                children.add(i)
        if not children:
            return None
        best = max(children, key=lambda i: (self.score[i], self.prior.keys[i]))
        return self._take(best, (ca.id, cb.id), "crossover")

    def optimist(self, optimism: float) -> Optional[Draft]:
        """The untried point with the best optimistic score: corrected prior plus a bonus for
        values measured little, scaled by how wrong the model has been (none while exact)."""
        pool = [i for i in self.ranked if i not in self.taken]
        if not pool:
            return None
        unc = self.correction.uncertainty
        best = max(pool, key=lambda i: (self.score[i] + optimism * unc(self.prior.feats[i]), self.prior.keys[i]))
        return self._take(best, (), "explore:optimistic")

    def cover(self, rng: random.Random) -> Optional[Draft]:
        """The best untried point holding the least-measured dimension value: a value the model
        dislikes is still measured now and then, in case the model is wrong about it."""
        counts: dict = {}
        for p in self.obs.tried:
            for f in features(p):
                counts[f] = counts.get(f, 0) + 1
        for i in self.taken:
            for f in self.prior.feats[i]:
                counts[f] = counts.get(f, 0) + 1
        pool = [i for i in self.ranked if i not in self.taken]
        available = {f for i in pool for f in self.prior.feats[i]}
        if not available:
            return None
        fewest = min(counts.get(f, 0) for f in available)
        target = rng.choice(sorted((f for f in available if counts.get(f, 0) == fewest), key=str))
        best = next(i for i in pool if target in self.prior.feats[i])
        return self._take(best, (), f"explore:{target[0]}")


register_proposer("template", TemplateProposer)
