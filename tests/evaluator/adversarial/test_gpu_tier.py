"""The adversarial kernels the CPU tier cannot settle, on the GPU tier: work hidden from the timer
on an unjoined stream, and stale outputs, through virtual-rank verification. GPU-only: skipped
(not passed) without a CUDA GPU."""

import pytest

from design_space.evaluation import Status
from evaluator.gpu import verify
from tests.evaluator.adversarial import kernels as K

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("kernel, expected, reason", [
    (lambda: K.unjoined_stream(linger_ms=200), Status.REJECTED, "side stream"),
    (K.stale_output, Status.WRONG_RESULT, ""),
    (K.skipped_peer, Status.WRONG_RESULT, ""),
])
def test_the_gpu_tier_refuses_what_the_cpu_tier_refuses(adv_evaluator, tmp_path, shared_cache, kernel, expected,
                                                        reason):
    out = verify(kernel(), adv_evaluator.spec, adv_evaluator.pattern, mode="virtual", backend="symm", world=2,
                 trials=2, work_dir=tmp_path, cache_dir=shared_cache / "gpu", timeout_s=300)
    assert out.status is expected, out.reason + "\n" + out.log[-2000:]
    assert reason in out.reason
