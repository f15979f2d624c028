"""What the CPU tier cannot settle, on the GPU tier: work hidden from the timer on an unjoined stream,
stale outputs, a skipped peer, and behaviour keyed to values only a GPU shows (its SM count, its name),
through virtual-rank verification. GPU-only: skipped (not passed) without a CUDA GPU."""

import pytest

from design_space.evaluation import Status
from evaluator.gpu import verify
from tests.evaluator.adversarial import hostile_kernels as K

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("kernel, expected, reason", [
    (lambda: K.unjoined_stream(linger_ms=200), Status.REJECTED, "side stream"),
    (K.stale_output, Status.WRONG_RESULT, ""),
    (K.skipped_peer, Status.WRONG_RESULT, ""),
    (K.works_only_with_the_emulators_sm_count, Status.WRONG_RESULT, ""),
    (K.works_only_on_the_emulators_device, Status.WRONG_RESULT, ""),
], ids=["unjoined_stream", "stale_output", "skipped_peer", "emulator_sm_count", "emulator_device"])
def test_the_gpu_tier_refuses_what_the_cpu_tier_cannot_see(adv_evaluator, tmp_path, shared_cache, kernel, expected,
                                                          reason):
    out = verify(kernel(), adv_evaluator.spec, adv_evaluator.pattern, mode="virtual", backend="symm", world=2,
                 trials=2, work_dir=tmp_path, cache_dir=shared_cache / "gpu", timeout_s=300)
    assert out.status is expected, out.reason + "\n" + out.log[-2000:]
    assert reason in out.reason
