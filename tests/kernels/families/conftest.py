"""Fixtures every family's test file shares; each file names its example folder in ``EXAMPLE``."""

import pytest

from cuco.spec_loader import load_spec
from tests.kernels.families.family_helpers import reference_cases


@pytest.fixture(scope="module")
def spec(request):
    return load_spec(request.module.EXAMPLE)


@pytest.fixture(scope="module")
def evaluator(spec, shared_cache):
    from evaluator.cascade import Evaluator, EvaluatorConfig
    from evaluator.emulate import EmulationSettings
    ev = Evaluator(spec, EvaluatorConfig(cache_dir=shared_cache, emulation=EmulationSettings(timeout_s=20)))
    ev.prepare()
    return ev


@pytest.fixture(scope="module")
def cases(spec, shared_cache):
    """Reference data for the spec's own emulation shapes, the evaluator's calls (family_helpers.reference_cases)."""
    return reference_cases(spec, shared_cache)
