"""A user's workload behind cuco's reference contract, for a spec folder `cuco init` wrote.

The semantic check (cuco/semantic_check.py) found which family the workload computes and which
of its inputs is which of the family's. The spec then builds inputs with the family's canonical
builder at any dims (the spec's sweep and the emulator's tiny shapes, which a fixed-size
``get_inputs()`` could not give) and runs the user's own code as the reference, handing it the
family's tensors in the user's argument order (without the family's batch axis, kept at 1, when
the user's tensors have none: ``unbatched``; a weight the user keeps as ``nn.Linear`` does, [out,
in], gets the family's [in, out] tensor transposed: ``transposed``, user argument indices; gate and
up projections kept apart get the halves of the family's stacked one: ``merged``; a Model whose
forward() reads sizes it was constructed with is built again at each dims, its constructor's
argument i given dim d: ``sized``, (i, d, "global" or "per_rank"), found by cuco/workload_sizes.py).
The written ``cuco_workload.py`` is three lines::

    from cuco.workload_adapter import Adapter
    _A = Adapter(__file__, family="allgather_gemm", order=(0, 1), reference=None, inputs=None)
    make_inputs, reference = _A.make_inputs, _A.reference
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Optional, Sequence

from cuco import workload_forms
from cuco.semantic_check import EXAMPLES
from cuco.tensor_readings import user_tensors
from design_space.errors import SpecError
from design_space.patterns import get_pattern


class Adapter:
    def __init__(self, anchor: str, *, family: str, order: Sequence[Optional[int]], reference: Optional[str] = None,
                 inputs: Optional[str] = None, user_file: str = "reference.py", unbatched: bool = False,
                 transposed: Sequence[int] = (), merged: Sequence[int] = (),
                 sized: Sequence[tuple[int, str, str]] = ()) -> None:
        self.folder = Path(anchor).resolve().parent
        self.family, self.order = family, tuple(order)
        self.unbatched = unbatched  # the user's tensors lack the family's leading batch axis (kept at 1)
        self.transposed = tuple(transposed)  # user inputs held with the family's last two axes swapped
        self.merged = tuple(merged)  # (i, j): user inputs i, j are the halves of one family input
        self.sized = tuple(tuple(x) for x in sized)  # (constructor argument, dim, "global"/"per_rank")
        self.user = self.folder / user_file
        self.reference_name, self.inputs_name = reference, inputs
        self._canon = None
        self._workloads: dict = {}  # constructor arguments -> the workload built with them

    def _canonical(self):
        if self._canon is None:
            path = EXAMPLES / self.family / "reference.py"
            spec = importlib.util.spec_from_file_location(f"cuco_family_{self.family}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self._canon = module
        return self._canon

    def make_inputs(self, dims: dict, rank: int, world: int, dtype, gen) -> dict:
        """The family's inputs (its canonical builder) at any dims."""
        return self._canonical().make_inputs(dims, rank, world, dtype, gen)

    def reference(self, inputs: dict, dims: dict, group) -> dict:
        """The user's workload on the family's tensors, outputs named as the family names them."""
        workload = self._workload_at(dims, group)
        pattern = get_pattern(self.family)
        used = [u for u in (*self.order, *self.merged) if u is not None]
        args: list = [None] * (max(used, default=-1) + 1)
        for name, u in zip(pattern.inputs, self.order):
            if u is not None:
                x = self._unbatch(inputs[name]) if self.unbatched else inputs[name]
                for index, tensor in user_tensors(x, u, flipped=self.transposed, merged=self.merged).items():
                    args[index] = tensor
        outputs = workload.call(args, group)
        dtype = next(iter(inputs.values())).dtype
        return {name: (out.unsqueeze(0) if self.unbatched else out).to(dtype)
                for name, out in zip(pattern.outputs, outputs)}

    def _workload_at(self, dims: dict, group):
        """The user's workload, its Model built with the sizes ``sized`` names taken from ``dims``."""
        base = self._load(None)
        if not self.sized:
            return base
        import torch.distributed as dist  # noqa: PLC0415

        world = dist.get_world_size(group)
        args = list(base.init_args)
        for index, dim, scale in self.sized:
            args[index] = int(dims[dim]) // (world if scale == "per_rank" else 1)
        return self._load(tuple(args))

    def _load(self, init_args):
        if init_args not in self._workloads:
            self._workloads[init_args] = workload_forms.load(self.user, reference=self.reference_name,
                                                             inputs=self.inputs_name, init_args=init_args)
        return self._workloads[init_args]

    def _unbatch(self, tensor):
        if tensor.shape[0] != 1:
            raise SpecError(f"the workload takes no batch axis, but the {self.family} inputs hold a batch of "
                            f"{tensor.shape[0]}", "keep the family's batch dim at 1 in the spec's shapes")
        return tensor.squeeze(0)


def adapter_text(*, family: str, order: Sequence[Optional[int]], reference: Optional[str],
                 inputs: Optional[str], unbatched: bool = False, transposed: Sequence[int] = (),
                 merged: Sequence[int] = (), sized: Sequence[tuple[int, str, str]] = ()) -> str:
    """The ``cuco_workload.py`` of a spec folder."""
    return ('"""cuco\'s reference contract over the workload in reference.py (written by `cuco init`; see\n'
            'cuco/workload_adapter.py)."""\n\nfrom cuco.workload_adapter import Adapter\n\n'
            f"_A = Adapter(__file__, family={family!r}, order={tuple(order)!r}, reference={reference!r}, "
            f"inputs={inputs!r}{', unbatched=True' if unbatched else ''}"
            f"{f', transposed={tuple(transposed)!r}' if transposed else ''}"
            f"{f', merged={tuple(merged)!r}' if merged else ''}"
            f"{f', sized={tuple(sized)!r}' if sized else ''})\n"
            "make_inputs, reference = _A.make_inputs, _A.reference\n")
