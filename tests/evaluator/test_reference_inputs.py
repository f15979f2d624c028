"""The reference data candidates are judged against: a reference that works in place on its inputs
(``dist.all_reduce(x)`` on an input, ``x.mul_()``) changes neither the inputs saved for candidates
nor those of its own float64 calibration run."""

import textwrap

import numpy as np
import torch

import design_space as ds
from evaluator import emulate, reference

REFERENCE = textwrap.dedent('''
    import torch
    import torch.distributed as dist

    def make_inputs(dims, rank, world, dtype, gen):
        m, n, k = dims["m"], dims["n"], dims["k"]
        a = torch.randn(m // world, k, generator=gen) + 0.25 * rank
        b = torch.randn(k, n // world, generator=gen) / k ** 0.5
        return {"a": a.to(dtype), "b": b.to(dtype)}

    def reference(inputs, dims, group):
        a, b = inputs["a"], inputs["b"]
        shards = [torch.empty_like(a) for _ in range(dist.get_world_size(group))]
        dist.all_gather(shards, a.contiguous(), group=group)
        c = (torch.cat(shards).float() @ b.float()).to(a.dtype)
        a.zero_()  # in place, after use: users' code does this (buffers reused, all_reduce(x))
        b.mul_(3)
        return {"c": c}
''')


def test_a_reference_working_in_place_leaves_the_saved_inputs_as_built(tmp_path):
    (tmp_path / "inplace_ref.py").write_text(REFERENCE)
    shape = ds.ShapeCase(name="emu", dims={"m": 8, "n": 8, "k": 16})
    spec = ds.KernelSpec(name="inplace", pattern="allgather_gemm", shapes=(shape,), emulation_shapes=(shape,),
                         dtypes=(ds.DType.FP32,), reference="inplace_ref:reference", inputs="inplace_ref:make_inputs",
                         search_path=(str(tmp_path),), emulation_world_sizes=(2,))
    (case,) = reference.prepare(spec, ds.get_pattern("allgather_gemm"), tmp_path / "cache", worlds=(2,),
                                cases=(shape,), seeds=(0,))
    module = {}
    exec(REFERENCE, module)  # noqa: S102 -- the test's own builder, to rebuild the inputs as made
    for rank, data in enumerate(case.ranks):
        built = module["make_inputs"](shape.dims, rank, 2, torch.float32, torch.Generator().manual_seed(rank))
        for tf, name in zip(data.inputs, ("a", "b")):
            saved = emulate.as_float32(tf.path, tf.dtype, tf.shape)
            assert np.array_equal(saved, built[name].numpy()), name
        # the float64 run saw the same inputs: the reference's own error is rounding, not a zeroed A
        assert data.errors["c"]["rel"] < 1e-5, data.errors
