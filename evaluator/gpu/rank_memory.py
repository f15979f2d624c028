"""What one rank's context points at on a GPU: symmetric buffer, signal pad, peer tables and comm
handles, for the three ways the worker makes them (runs inside the GPU worker; imports torch).

- virtual: N rank instances in one process on one GPU; plain torch.cuda allocations, each
  instance's peer tables hold the other instances' pointers (backend ``symm``).
- symm: one process per GPU; ONE torch SymmetricMemory allocation per rank holding the symmetric
  buffer and, after it, the cuco signal pad (torch's own signal pad is smaller than
  CUCO_SIGNAL_SLOTS and belongs to torch's ops); peer tables from ``buffer_ptrs``; the multicast
  address (``multicast_ptr``) for ctx.multimem when the switch offers one.
- nccl: the candidate's own NCCL communicator and windows through the host helper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from evaluator.gpu.ctx_layout import SIGNAL_PAD_BYTES

ALIGN = 1 << 16  # the signal pad starts on its own 64 KiB boundary inside a symm allocation


def aligned(n: int) -> int:
    return max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)


@dataclass
class RankMemory:
    symm: int
    symm_bytes: int
    signals: int
    peer_symm: list[int]
    peer_signals: list[int]
    zero: Callable[[], None]  # zero this rank's symmetric buffer and signal pad (synchronous)
    comm: int = 0
    multimem: int = 0
    host_comm: int = 0
    keep: list[Any] = field(default_factory=list)  # tensors and handles that must outlive the runs
    close: Callable[[], str] = lambda: ""  # teardown; returns an error text or ''


def virtual_memory(world: int, symm_bytes: int, device) -> list[RankMemory]:
    import torch

    symm = [torch.zeros(aligned(symm_bytes), dtype=torch.uint8, device=device) for _ in range(world)]
    pads = [torch.zeros(SIGNAL_PAD_BYTES, dtype=torch.uint8, device=device) for _ in range(world)]
    peers = [t.data_ptr() for t in symm]
    peer_pads = [t.data_ptr() for t in pads]

    def zero_fn(a, b):
        def zero() -> None:
            a.zero_()
            b.zero_()
            torch.cuda.synchronize(device)
        return zero

    return [RankMemory(symm=peers[r], symm_bytes=symm_bytes, signals=peer_pads[r], peer_symm=list(peers),
                       peer_signals=list(peer_pads), zero=zero_fn(symm[r], pads[r]), keep=[symm[r], pads[r]])
            for r in range(world)]


def symm_memory(rank: int, world: int, symm_bytes: int, device, group) -> RankMemory:
    import torch
    import torch.distributed._symmetric_memory as symm_mem

    base = aligned(symm_bytes)
    buf = symm_mem.empty(base + SIGNAL_PAD_BYTES, dtype=torch.uint8, device=device)
    buf.zero_()
    torch.cuda.synchronize(device)
    name = group.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed by torch < 2.8, harmless later
        try:
            symm_mem.enable_symm_mem_for_group(name)
        except Exception:  # noqa: BLE001  (deprecated no-op in newer releases)
            pass
    hdl = symm_mem.rendezvous(buf, name)
    ptrs = [int(p) for p in hdl.buffer_ptrs]
    multicast = int(getattr(hdl, "multicast_ptr", 0) or 0)

    def zero() -> None:
        buf.zero_()
        torch.cuda.synchronize(device)

    return RankMemory(symm=ptrs[rank], symm_bytes=symm_bytes, signals=ptrs[rank] + base, peer_symm=ptrs,
                      peer_signals=[p + base for p in ptrs], zero=zero, multimem=multicast, keep=[buf, hdl])


def nccl_memory(helper, rank: int, world: int, symm_bytes: int) -> RankMemory:
    """Collective over the default (NCCL) process group: rank 0's unique id goes to every rank."""
    import torch.distributed as dist

    box = [helper.unique_id() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    helper.open(box[0], rank, world, aligned(symm_bytes), SIGNAL_PAD_BYTES)
    p = helper.pointers()
    peers = [helper.peer_pointers(q) for q in range(world)]

    def zero() -> None:
        helper.zero(aligned(symm_bytes), SIGNAL_PAD_BYTES)

    return RankMemory(symm=p["symm"], symm_bytes=symm_bytes, signals=p["signals"], peer_symm=[s for s, _ in peers],
                      peer_signals=[g for _, g in peers], zero=zero, comm=p["comm"], host_comm=p["host_comm"],
                      keep=[helper], close=helper.close)
