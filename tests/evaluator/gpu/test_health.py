"""Without a GPU: gpu_available() is False, the health check says 'no GPU' cleanly and quickly."""

import time

import pytest

from design_space.errors import InfrastructureError
from evaluator.gpu import api, health

pytestmark = pytest.mark.skipif(health._device_nodes(), reason="this machine has a GPU")


def test_gpu_available_is_false_here_and_cheap():
    start = time.monotonic()
    assert api.gpu_available() is False
    assert time.monotonic() - start < 1.0


def test_health_check_reports_no_gpu(tmp_path):
    report = health.check_health(tmp_path)
    assert (report.ok, report.no_gpu) == (False, True)
    assert "no GPU" in report.detail


def test_require_healthy_raises_an_infrastructure_error_naming_the_candidate(tmp_path):
    with pytest.raises(InfrastructureError, match="GPU unhealthy after candidate c42: no GPU") as e:
        health.require_healthy("c42", tmp_path)
    assert "reboot" in str(e.value)


def test_the_probe_itself_says_no_gpu_when_torch_sees_none(tmp_path):
    # the sandboxed probe (what runs on a GPU machine) fails cleanly on a machine without one
    from evaluator import sandbox
    import sys
    res = sandbox.run([sys.executable, "-c", health._PROBE], workdir=tmp_path, limits=health.gpu_limits(120),
                      env=health.gpu_env())
    assert res.returncode == health.NO_GPU_EXIT, res.output
    assert "no GPU" in res.output
