"""Reading a user's weights as a family's: transposed ([out, in], as nn.Linear keeps them, last two
axes for a stack of experts) and two kept apart read as one stacked side by side (w1 | w3); the
plainest reading comes first, and the adapter's inverse gives back the user's own tensors."""

import importlib.util
from pathlib import Path

import torch

from cuco import family_signatures as fs
from cuco import tensor_readings as tr

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _reference(family):
    spec = importlib.util.spec_from_file_location(f"canonical_{family}", EXAMPLES / family / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


moe, agg = _reference("moe_router_swiglu"), _reference("allgather_gemm")

DIMS = {"t": 16, "h": 32, "f": 8, "e": 4, "k": 2}


def _signature(module, family, dims, world=2):
    def build(d):
        return module.make_inputs(dict(d), 0, world, torch.float32, torch.Generator().manual_seed(0))
    return fs.infer_signature(family, build, dims, list(dims), world)


def test_shapes_that_fit_as_given_are_read_as_given_first():
    sig = _signature(agg, "allgather_gemm", {"m": 8, "n": 12, "k": 16})
    found = tr.readings(sig, [(4, 16), (16, 6)], ["float", "float"])
    assert (found[0].flipped, found[0].merged) == ((), ())


def test_an_nn_linear_weight_is_read_with_its_axes_swapped_and_only_so():
    sig = _signature(agg, "allgather_gemm", {"m": 8, "n": 12, "k": 16})
    found = tr.readings(sig, [(4, 16), (6, 16)], ["float", "float"])
    # shapes alone also allow other readings (the probe keeps the one whose outputs agree)
    # the bias input (the family's third) is the canonical builder's: no user tensor reads as it
    assert any(r.flipped == (1,) and r.fit.order == (0, 1, None) for r in found)
    assert all(r.flipped for r in found)  # as given, [6, 16] is no b [K, N/n]


def test_experts_kept_apart_in_linear_layout_read_as_the_familys_stacked_weights():
    sig = _signature(moe, "moe_router_swiglu", DIMS)
    h, f, local = DIMS["h"], DIMS["f"], DIMS["e"] // 2
    shapes = [(16, h), (DIMS["e"], h), (local, f, h), (local, f, h), (local, h, f)]
    found = tr.readings(sig, shapes, ["float"] * 5)
    wanted = [r for r in found if r.flipped == (1, 2, 3, 4) and r.merged == (2, 3)]
    assert wanted and wanted[0].fit.order == (0, 1, 2, 4)
    assert "inputs 2 and 3 read as one" in wanted[0].said()


def test_the_adapters_inverse_gives_back_the_users_tensors():
    w1, w3 = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
    reading = tr.Reading(fs.Fit((0, 1, 2, 4), {}), None, flipped=(2, 3), merged=(2, 3))
    read = tr.as_read([None, None, w1, w3], reading)
    assert read[3] is None and tuple(read[2].shape) == (2, 32, 16)
    back = tr.user_tensors(read[2], 2, flipped=(2, 3), merged=(2, 3))
    assert torch.equal(back[2], w1) and torch.equal(back[3], w3)
    assert tr.user_tensors(read[2], 2, flipped=(), merged=())[2].shape == (2, 32, 16)
