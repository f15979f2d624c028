"""One Evaluator per attacked workload for the whole suite (and its cache), short-timeout ones for
the hangs, and what isolation this machine's sandbox gives."""

import shutil

import pytest

from evaluator.emulate import EmulationSettings
from tests.evaluator.adversarial import honest_kernels as H

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")


class Evaluators:
    """Evaluators built on first use, one per (workload, settings): each prepares its reference."""

    def __init__(self, cache):
        self.cache, self._made = cache, {}

    def __call__(self, workload: str, *, hang: bool = False):
        key = (workload, hang)
        if key not in self._made:
            from evaluator.cascade import Evaluator, EvaluatorConfig
            # hangs end at the sandbox's wall clock: keep it short
            settings = EmulationSettings(timeout_s=3, stall_seconds=2) if hang else EmulationSettings(timeout_s=20)
            # allgather_gemm draws as the product does (the rest of the suite shares its reference);
            # the others one shape per spec shape, still never the spec's own, at half the reference runs
            variants = 3 if workload == "allgather_gemm" else 1
            ev = Evaluator(H.WORKLOADS[workload].spec(), EvaluatorConfig(cache_dir=self.cache, emulation=settings,
                                                                         shape_variants=variants))
            ev.prepare()
            self._made[key] = ev
        return self._made[key]


@pytest.fixture(scope="session")
def evaluators(shared_cache):
    return Evaluators(shared_cache)


@pytest.fixture(scope="session")
def adv_evaluator(evaluators):
    return evaluators("allgather_gemm")


@pytest.fixture(scope="session")
def hang_evaluator(evaluators):
    return evaluators("allgather_gemm", hang=True)


@pytest.fixture(scope="session")
def isolation(tmp_path_factory):
    """The sandbox's isolation record for a trivial run (None if the sandbox keeps none)."""
    from evaluator import sandbox
    res = sandbox.run(["true"], workdir=tmp_path_factory.mktemp("probe"))
    return getattr(res, "isolation", None)
