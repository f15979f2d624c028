"""A KernelBench-style Model that holds its weights as parameters (as Megatron's and vLLM's layers
do) has them lifted into inputs after forward()'s, with fresh values the same on every rank, and is
called through torch.func.functional_call, so the tensors handed in are the ones it computes with."""

from pathlib import Path

import pytest
import torch

from cuco import workload_forms

MODULE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, n)
        nn.init.zeros_(self.proj.bias)  # a constructor's zeros must not hide what forward() does with it
        self.scale = nn.Parameter(torch.empty(n))

    def forward(self, x):
        return self.proj(x) * self.scale


def get_inputs():
    return [torch.ones(2, 4)]


def get_init_inputs():
    return [4]
'''


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "layer.py"
    path.write_text(MODULE)
    return workload_forms.load(Path(path))


def test_parameters_become_named_inputs_after_forwards(workload):
    assert workload.form == "kernelbench"
    # named_parameters order: the module's own, then its children's
    assert workload.input_names == ("x", "scale", "proj.weight", "proj.bias")
    inputs = workload.build(0, 1, None)
    assert [tuple(t.shape) for t in inputs] == [(2, 4), (4,), (4, 4), (4,)]


def test_lifted_values_are_drawn_afresh_and_the_same_on_every_build(workload):
    first, again = workload.build(0, 2, None), workload.build(1, 2, None)
    assert all(torch.equal(a, b) for a, b in zip(first[1:], again[1:]))
    assert all(bool(torch.isfinite(t).all()) and bool(t.abs().sum() > 0) for t in first[1:])


def test_the_call_computes_with_the_tensors_handed_in(workload, one_rank):
    x, s, w, b = workload.build(0, 1, None)
    (out,) = workload.call([x, s, w, b], one_rank)
    torch.testing.assert_close(out, (x @ w.t() + b) * s)
    (doubled,) = workload.call([x, 2 * s, w, b], one_rank)
    torch.testing.assert_close(doubled, 2 * out)
