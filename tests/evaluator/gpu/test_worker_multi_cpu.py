"""The multi-GPU tier's float64 reference run, on the CPU: the same function the NCCL ranks call,
here on a one-rank gloo group. Its outputs are the reference's float64 run on the very inputs the
candidate gets; a reference that cannot run in float64, on any rank, gives none on every rank."""

import importlib.util

import pytest
import torch
import torch.distributed as dist

from evaluator.gpu import worker
from evaluator.gpu.worker_multi import exact_outputs
from tests.conftest import EXAMPLE

DIMS = {"m": 32, "n": 48, "k": 64, "bias": 1}


def _example():
    """The example's reference module, loaded by path under its own name (every example has a
    reference.py)."""
    found = importlib.util.spec_from_file_location("_multi_cpu_reference", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


REF = _example()


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path_factory.mktemp('pg') / 'init'}", rank=0,
                            world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()


def _job():
    return {"input_names": ["a", "b", "bias"], "output_names": ["c"]}


def _inputs():
    made = REF.make_inputs(DIMS, 0, 1, torch.bfloat16, torch.Generator().manual_seed(7))
    return [made[n] for n in _job()["input_names"]]


def _hooks(reference, group):
    return (None, reference, torch.bfloat16, group)


def test_the_float64_run_is_the_reference_on_the_same_inputs_and_accepts_what_the_rounding_misses(group):
    reference = REF.reference
    inputs = _inputs()
    before = [t.clone() for t in inputs]
    refs = [reference(dict(zip(_job()["input_names"], inputs)), DIMS, group)["c"]]
    kept = exact_outputs(_job(), {"dims": DIMS}, inputs, refs, _hooks(reference, group), agree=lambda ok: ok)
    assert all(torch.equal(a, b) for a, b in zip(inputs, before))  # the candidate's inputs are untouched
    a, b, bias = (t.double() for t in inputs)
    assert len(kept) == 1 and kept[0].dtype == torch.float32 and kept[0].shape == refs[0].shape
    assert torch.allclose(kept[0].double(), a @ b + bias, atol=1e-5)
    # an output exact to float32 but off the bf16 reference by more than a tight tolerance: right
    # against the float64 run, wrong against the reference alone
    tol = {"atol": 1e-4, "rtol": 1e-4}
    alone = worker.check_outputs([kept[0]], refs, tol, 1, "s", 0, 0, 0)
    with_exact = worker.check_outputs([kept[0]], refs, tol, 1, "s", 0, 0, 0, exacts=kept)
    assert not alone["ok"] and with_exact["ok"]


def test_a_reference_that_cannot_run_in_float64_keeps_the_reference_alone(group):
    def bf16_only(inputs, dims, grp):
        if inputs["a"].dtype == torch.float64:
            raise RuntimeError("no float64 kernel")
        return {"c": inputs["a"]}

    inputs = _inputs()
    assert exact_outputs(_job(), {"dims": DIMS}, inputs, [inputs[0]], _hooks(bf16_only, group), lambda ok: ok) == ()


def test_every_rank_drops_the_float64_run_when_one_rank_could_not_make_it(group):
    reference = REF.reference
    inputs = _inputs()
    refs = [reference(dict(zip(_job()["input_names"], inputs)), DIMS, group)["c"]]
    seen = []

    def another_rank_failed(ok):
        seen.append(ok)
        return False

    assert exact_outputs(_job(), {"dims": DIMS}, inputs, refs, _hooks(reference, group), another_rank_failed) == ()
    assert seen == [True]  # this rank made it, and said so before dropping it
