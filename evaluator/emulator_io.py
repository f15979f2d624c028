"""What the emulator gets and gives back, in memory the evaluator owns.

The evaluator (never the candidate) creates two anonymous files (memfd) per emulator run and
passes them as descriptors:

- the **manifest**, sealed read-only before the run (world, shapes, buffer sizes and offsets);
- the **I/O file**: for every rank and every call (iteration) one region per input and output
  slot, each a page-aligned red zone of canary bytes followed by the buffer, which ends 16-byte
  aligned at the region's end. Inputs hold that call's fresh values, outputs arrive poisoned
  (0xFF bytes: NaN in fp32/fp16/bf16). The file's size is sealed.

Each rank's process maps only its own regions (evaluator/shim/manifest.cpp). After the emulator
has exited, the evaluator reads the outputs and checks their red zones through its own
descriptor: nothing the candidate writes to disk, prints or returns can redirect or forge them.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from design_space.errors import InfrastructureError

PAGE = os.sysconf("SC_PAGESIZE")
TRACE_BYTES = 4 * PAGE  # per rank: the emulator's summary of what the code did (key value lines)
CANARY = 0xCA  # neither 0 nor the 0xFF poison, so a stray zero or NaN store shows
POISON = 0xFF


def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


@dataclass(frozen=True)
class IoSlot:
    rank: int
    call: int  # 1-based
    output: bool
    slot: int
    nbytes: int
    offset: int  # region start in the I/O file (page-aligned)
    region: int  # red zone + buffer, a multiple of the page size

    @property
    def buffer_offset(self) -> int:
        return self.offset + self.region - _round_up(self.nbytes, 16)

    @property
    def name(self) -> str:
        return f"rank {self.rank}'s {'output' if self.output else 'input'} {self.slot} of call {self.call}"


def layout(sizes: Sequence[tuple[int, int, bool, int, int]]) -> tuple[tuple[IoSlot, ...], int]:
    """Slots for (rank, call, output, slot, nbytes) entries, and the file size they need. The
    ranks' trace regions follow them (``trace_offset``)."""
    slots, offset = [], 0
    for rank, call, output, slot, nbytes in sizes:
        region = PAGE + _round_up(max(1, nbytes), PAGE)
        slots.append(IoSlot(rank, call, output, slot, nbytes, offset, region))
        offset += region
    return tuple(slots), offset


def trace_offset(size: int, rank: int) -> int:
    """Where rank ``rank``'s trace region starts in an I/O file whose slots take ``size`` bytes."""
    return size + rank * TRACE_BYTES


def _memfd(name: str, size: int) -> int:
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, size)
    except OSError as e:
        raise InfrastructureError(f"cannot create the emulator's in-memory files: {e}",
                                  "run on Linux with memfd support and enough memory") from e
    return fd


def _seal(fd: int, seals: int) -> None:
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except OSError as e:
        raise InfrastructureError(f"cannot seal the emulator's in-memory files: {e}",
                                  "run on Linux >= 3.17 (memfd sealing)") from e


class IoFiles:
    """The manifest and I/O file of one emulator run; ``close()`` releases both."""

    def __init__(self, manifest_text: str, slots: Sequence[IoSlot], size: int,
                 inputs: dict[tuple[int, int, int], bytes], world: int = 0) -> None:
        self.slots = tuple(slots)
        self.size, self.world = size, world
        self.io_fd = _memfd("cuco-emu-io", max(trace_offset(size, world), PAGE))
        self.manifest_fd = -1
        try:
            for s in self.slots:
                body = inputs[(s.rank, s.call, s.slot)] if not s.output else bytes([POISON]) * s.nbytes
                if len(body) != s.nbytes:
                    raise InfrastructureError(f"{s.name}: {len(body)} bytes of data for a {s.nbytes}-byte buffer",
                                              "report this as a cuco bug")
                lead = s.buffer_offset - s.offset
                tail = s.region - lead - s.nbytes
                os.pwrite(self.io_fd, bytes([CANARY]) * lead + body + bytes([CANARY]) * tail, s.offset)
            _seal(self.io_fd, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            data = manifest_text.encode()
            self.manifest_fd = _memfd("cuco-emu-manifest", len(data))
            os.pwrite(self.manifest_fd, data, 0)
            _seal(self.manifest_fd, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        except BaseException:
            self.close()
            raise

    @property
    def fds(self) -> tuple[int, int]:
        return self.manifest_fd, self.io_fd

    def output(self, rank: int, call: int, slot: int) -> bytes:
        s = self._find(rank, call, slot)
        return os.pread(self.io_fd, s.nbytes, s.buffer_offset)

    def trace(self, rank: int) -> dict[str, int]:
        """Rank ``rank``'s trace summary ({} when it wrote none); malformed lines are skipped."""
        raw = os.pread(self.io_fd, TRACE_BYTES, trace_offset(self.size, rank)).split(b"\0", 1)[0]
        out: dict[str, int] = {}
        for line in raw.decode("ascii", errors="replace").splitlines():
            key, _, value = line.partition(" ")
            if key and key not in out and value.isdigit() and len(out) < 256:  # the first line of a key counts
                out[key] = int(value)
        return out

    def red_zone_breach(self) -> str:
        """The first output red-zone byte that changed, as a reason ('' when all are intact)."""
        for s in self.slots:
            if not s.output:
                continue
            region = np.frombuffer(os.pread(self.io_fd, s.region, s.offset), dtype=np.uint8)
            lead = s.buffer_offset - s.offset
            before = np.flatnonzero(region[:lead] != CANARY)
            if before.size:
                return f"out-of-bounds write {lead - int(before[0])} bytes before the start of {s.name}"
            after = np.flatnonzero(region[lead + s.nbytes:] != CANARY)
            if after.size:
                return f"out-of-bounds write {int(after[0])} bytes past the end of {s.name}"
        return ""

    def _find(self, rank: int, call: int, slot: int) -> IoSlot:
        for s in self.slots:
            if s.output and (s.rank, s.call, s.slot) == (rank, call, slot):
                return s
        raise KeyError((rank, call, slot))

    def close(self) -> None:
        for fd in (self.manifest_fd, self.io_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.manifest_fd = self.io_fd = -1

    def __enter__(self) -> "IoFiles":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def manifest_text(*, world: int, num_sms: int, calls: int, stall_seconds: float, dims: Sequence[int],
                  dtype_code: int, symm_bytes: int, workspace_bytes: int, slots: Sequence[IoSlot],
                  stack_kib: int | None = None, runaway_seconds: int | None = None,
                  device_memory_bytes: int | None = None, traces_after: int | None = None,
                  perturb_tile: int = 0) -> str:
    """The emulator's manifest; ``traces_after``: the slots' size, when every rank gets a trace region;
    ``perturb_tile``: the dependence probe (1, 2: every GEMM tile's result gets noise, evaluator/shim/trace.cpp)."""
    if not 1 <= world <= 32:
        raise ValueError(f"world must be 1..32, got {world}")
    if len(dims) > 8:
        raise ValueError(f"at most 8 dims, got {len(dims)}")
    lines = [f"world {world}", f"num_sms {num_sms}", f"iterations {calls}", f"stall_seconds {stall_seconds}",
             "dims " + " ".join(str(int(d)) for d in (list(dims) or [0])), f"dtype {dtype_code}",
             f"symm_bytes {symm_bytes}", f"workspace_bytes {workspace_bytes}"]
    for key, value in (("stack_kib", stack_kib), ("runaway_seconds", runaway_seconds),
                       ("device_memory_bytes", device_memory_bytes), ("perturb_tile", perturb_tile)):
        if value:
            lines.append(f"{key} {int(value)}")
    for s in slots:
        lines.append(f"io {s.rank} {s.call} {'out' if s.output else 'in'} {s.slot} {s.offset} {s.nbytes} {s.region}")
    if traces_after is not None:
        lines += [f"trace {r} {trace_offset(traces_after, r)} {TRACE_BYTES}" for r in range(world)]
    return "\n".join(lines) + "\n"
