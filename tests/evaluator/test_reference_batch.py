"""Reference data for several specs and world sizes made in one worker launch
(``reference.prepare_many``): each spec's data is its own, what completed stays cached when a later
run fails, and the failure names the spec and world size that failed."""

import textwrap

import numpy as np
import pytest

import design_space as ds
from evaluator import emulate, reference

BUILDER = textwrap.dedent('''
    import torch
    import torch.distributed as dist

    def make_inputs(dims, rank, world, dtype, gen):
        a = torch.randn(dims["m"] // world, dims["k"], generator=gen)
        b = torch.randn(dims["k"], dims["n"] // world, generator=gen)
        return {"a": a.to(dtype), "b": b.to(dtype)}

    def _gathered(a, group):
        shards = [torch.empty_like(a) for _ in range(dist.get_world_size(group))]
        dist.all_gather(shards, a.contiguous(), group=group)
        return torch.cat(shards)
''')
RIGHT = BUILDER + "\ndef reference(inputs, dims, group):\n    return {'c': _gathered(inputs['a'], group) @ inputs['b']}\n"
SCALED = BUILDER + "\ndef reference(inputs, dims, group):\n    return {'c': 3 * (_gathered(inputs['a'], group) @ inputs['b'])}\n"
BROKEN = BUILDER + ("\ndef reference(inputs, dims, group):\n"
                    "    if dist.get_world_size(group) == 4:\n        raise ValueError('only two ranks here')\n"
                    "    return {'c': _gathered(inputs['a'], group) @ inputs['b']}\n")
SHAPE = ds.ShapeCase(name="emu", dims={"m": 8, "n": 8, "k": 16})
PATTERN = ds.get_pattern("allgather_gemm")


def _spec(folder, name, text):
    folder.mkdir()
    (folder / f"{name}.py").write_text(text)
    return ds.KernelSpec(name=name, pattern="allgather_gemm", shapes=(SHAPE,), emulation_shapes=(SHAPE,),
                         dtypes=(ds.DType.FP32,), reference=f"{name}:reference", inputs=f"{name}:make_inputs",
                         search_path=(str(folder),), emulation_world_sizes=(2, 4))


def _c(case, rank):
    tf = case.ranks[rank].outputs[0]
    return emulate.as_float32(tf.path, tf.dtype, tf.shape)


def test_each_spec_of_a_batch_gets_its_own_data_at_every_world_size(tmp_path):
    right, scaled = _spec(tmp_path / "r", "right_ref", RIGHT), _spec(tmp_path / "s", "scaled_ref", SCALED)
    mine, theirs = reference.prepare_many([(right, tmp_path / "c1"), (scaled, tmp_path / "c2")], PATTERN,
                                          worlds=(2, 4), cases=(SHAPE,))
    assert [c.world for c in mine] == [c.world for c in theirs] == [2, 4]
    for a, b in zip(mine, theirs):
        for rank in range(a.world):
            assert np.allclose(3 * _c(a, rank), _c(b, rank), rtol=1e-5, atol=1e-5)
    # the same data as one spec prepared alone (read back from its cache)
    alone = reference.prepare(right, PATTERN, tmp_path / "c1", worlds=(2, 4), cases=(SHAPE,))
    assert [c.ranks[0].outputs[0].path for c in alone] == [c.ranks[0].outputs[0].path for c in mine]


def test_a_failing_run_names_its_spec_and_world_and_what_completed_stays_cached(tmp_path):
    right, broken = _spec(tmp_path / "r", "right_ref", RIGHT), _spec(tmp_path / "b", "broken_ref", BROKEN)
    with pytest.raises(ds.SpecError, match=r"broken_ref failed at world size 4.*only two ranks here"):
        reference.prepare_many([(right, tmp_path / "c1"), (broken, tmp_path / "c2")], PATTERN, worlds=(2, 4),
                               cases=(SHAPE,))
    done = sorted(p.name.split("-")[0] for p in (tmp_path / "c1").iterdir())
    assert done == ["w2", "w4"]
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "c2").iterdir()) == ["w2"]  # no half-written folder


def test_the_same_spec_in_another_checkout_names_its_data_alike_and_other_code_does_not(tmp_path):
    here, there = _spec(tmp_path / "main", "ref", RIGHT), _spec(tmp_path / "clone", "ref", RIGHT)
    changed = _spec(tmp_path / "edited", "ref", SCALED)
    runs = reference.prepare_many([(here, tmp_path / "c1"), (there, tmp_path / "c2"), (changed, tmp_path / "c3")],
                                  PATTERN, worlds=(2,), cases=(SHAPE,))
    names = [{p.name for p in (tmp_path / c).iterdir()} for c in ("c1", "c2", "c3")]
    assert names[0] == names[1] and names[0].isdisjoint(names[2])  # where it lies is not part of its identity
    assert np.allclose(_c(runs[0][0], 1), _c(runs[1][0], 1))
