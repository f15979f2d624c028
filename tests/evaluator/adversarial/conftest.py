"""One Evaluator (and its cache) for the whole adversarial suite, one with a short emulation
timeout for the hangs, and what isolation this machine's sandbox gives."""

import shutil

import pytest

from evaluator.emulate import EmulationSettings

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")


def _evaluator(spec, cache, settings):
    from evaluator.cascade import Evaluator, EvaluatorConfig
    ev = Evaluator(spec, EvaluatorConfig(cache_dir=cache, emulation=settings))
    ev.prepare()
    return ev


@pytest.fixture(scope="session")
def adv_evaluator(example_spec, shared_cache):
    return _evaluator(example_spec, shared_cache, EmulationSettings(timeout_s=20))


@pytest.fixture(scope="session")
def hang_evaluator(example_spec, shared_cache):
    # hangs end at the sandbox's wall clock: keep it short
    return _evaluator(example_spec, shared_cache, EmulationSettings(timeout_s=3, stall_seconds=2))


@pytest.fixture(scope="session")
def isolation(tmp_path_factory):
    """The sandbox's isolation record for a trivial run (None if the sandbox keeps none)."""
    from evaluator import sandbox
    res = sandbox.run(["true"], workdir=tmp_path_factory.mktemp("probe"))
    return getattr(res, "isolation", None)
