"""Shared material: parents rendered from the real allgather_gemm templates (they carry evolve
blocks), and evaluations built the way the evaluator builds them."""

import pytest

import design_space as ds

PATTERN = ds.get_pattern("allgather_gemm")
H100 = ds.get_profile("H100")
BASE_KEY = "lsa/sequential/global_barrier/cta/64K/4"


def render(key: str = BASE_KEY) -> str:
    return PATTERN.render(ds.DesignPoint.parse_key(key))


def candidate(key: str = BASE_KEY, *, source=None, generation=0, island=0, kind="template", model=None,
              patch_type=None, parents=(), cid=None):
    extra = {"id": cid} if cid else {}
    return ds.Candidate(origin=ds.Origin(kind=kind, model=model, patch_type=patch_type), source=source or render(key),
                        point=ds.DesignPoint.parse_key(key), generation=generation, island=island,
                        parent_ids=tuple(parents), **extra)


def evaluation(cand, fitness=None, status="ok", reason="", logs=""):
    """An ok evaluation whose fitness (geomean speedup) is ``fitness``, or a failure."""
    if fitness is None:
        return ds.Evaluation(candidate_id=cand.id, status=status if status != "ok" else "build_failed",
                             stage="build", reason=reason or "nvcc failed", logs=logs)
    timing = ds.Timing(shape="s", world=8, source="simulated", seconds=1e-3, bound_seconds=0.5e-3,
                       baseline_seconds=fitness * 1e-3)
    return ds.Evaluation(candidate_id=cand.id, status="ok", stage="simulate", timings=(timing,), reason=reason)


def member(key=BASE_KEY, fitness=1.0, **kw):
    cand = candidate(key, **kw)
    return cand, evaluation(cand, fitness)


@pytest.fixture(scope="module")
def spec(example_spec):
    return example_spec


KEYS_FAR = "gin/split_put_wait/per_tile_signal/cta/64K/4"
