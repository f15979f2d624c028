"""Ways to read a user's tensors as a family's inputs, for the semantic probe.

Users hold weights as their framework does, not as the family does:
- ``nn.Linear`` keeps a weight as [out, in] (``F.linear`` computes ``x @ w.t()``), and a stack of
  per-expert ones as [E, out, in]: such a tensor is the family's with its last two axes swapped
  (*flipped*);
- Mixtral-style experts keep the gate and up projections apart (w1, w3) where the family stacks
  them side by side (w13 = [w1 | w3] along the last axis): two tensors of one shape are one of the
  family's, concatenated (*merged*).

A reading is only a way to fit shapes; the probe keeps one only when the family's reference on the
tensors so read gives the user's outputs. Readings come plainest first: as given, then flipped
(fewest first), then merged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional, Sequence

from cuco import family_signatures as fs

MAX_FLIPPED = 4  # an MoE layer in nn.Linear layout flips its router and three expert weights


@dataclass(frozen=True)
class Reading:
    fit: fs.Fit
    batch: Optional[str]  # the family's optional batch axis the user's tensors lack (read as 1)
    flipped: tuple[int, ...] = ()  # user inputs whose last two axes are swapped
    merged: tuple[int, ...] = ()  # (i, j): user inputs i and j concatenated on the last axis, as i

    def said(self) -> str:
        parts = []
        if self.flipped:
            parts.append(f"input(s) {', '.join(map(str, self.flipped))} read transposed")
        if self.merged:
            parts.append(f"inputs {self.merged[0]} and {self.merged[1]} read as one, side by side")
        return " and ".join(parts)


def _flip(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2])


def _merges(seen: list) -> list[tuple[int, ...]]:
    multi = [i for i, s in enumerate(seen) if s is not None and len(s) >= 2]
    return [(i, j) for i, j in itertools.permutations(multi, 2) if seen[i] == seen[j]]


def readings(sig: fs.Signature, shapes: Sequence[Optional[tuple[int, ...]]], kinds: Sequence[str],
             batch_dim: Optional[str] = None) -> list[Reading]:
    """Every reading of ``shapes`` that fits ``sig`` (see the module doc), plainest first."""
    multi = [i for i, s in enumerate(shapes) if s is not None and len(s) >= 2]
    flips = [c for k in range(0, min(len(multi), MAX_FLIPPED) + 1) for c in itertools.combinations(multi, k)]
    out: list[Reading] = []
    for with_merge in (False, True):
        for flipped in flips:
            seen = [_flip(s) if i in flipped else s for i, s in enumerate(shapes)]
            for merged in (_merges(seen) if with_merge else [()]):
                shown = list(seen)
                if merged:
                    i, j = merged
                    shown[i], shown[j] = (*seen[i][:-1], 2 * seen[i][-1]), None
                found = _fit(sig, shown, kinds, batch_dim)
                if found is not None:
                    out.append(Reading(found[0], found[1], tuple(flipped), tuple(merged)))
    return out


def _fit(sig, shapes: list, kinds: Sequence[str], batch_dim: Optional[str]):
    fitted = fs.fit(sig, shapes, kinds)
    if fitted is not None:
        return fitted, None
    if batch_dim:  # the family lets a user leave its leading batch axis out: read the tensors as batch 1
        fitted = fs.fit(sig, [(1, *s) if s is not None else None for s in shapes], kinds, fixed={batch_dim: 1})
        if fitted is not None:
            return fitted, batch_dim
    return None


def as_read(user_in: list, reading: Reading) -> list:
    """The user's tensors as ``reading`` reads them (a merged pair's second slot left None)."""
    xs = [x.transpose(-2, -1).contiguous() if i in reading.flipped else x for i, x in enumerate(user_in)]
    if reading.merged:
        import torch  # noqa: PLC0415  (the probe's ranks have it; this module's importers need not)

        i, j = reading.merged
        xs[i], xs[j] = torch.cat([xs[i], xs[j]], dim=-1), None
    if reading.batch is not None:
        xs = [x.unsqueeze(0) if hasattr(x, "shape") else x for x in xs]
    return xs


def user_tensors(family_tensor, index: int, *, flipped: Sequence[int], merged: Sequence[int]) -> dict:
    """The inverse, for the spec's adapter: user argument index -> tensor, from the family's tensor
    read at user index ``index`` (its merged partner's half too)."""
    out = {index: family_tensor}
    if merged and merged[0] == index:
        half = family_tensor.shape[-1] // 2
        out = {index: family_tensor[..., :half], merged[1]: family_tensor[..., half:]}
    return {u: (x.transpose(-2, -1).contiguous() if u in flipped else x.contiguous()) for u, x in out.items()}
