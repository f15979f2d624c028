"""The GPU worker's inner loop for the rank instances one process holds (all N in virtual mode,
one in multi mode): contexts, the co-residency dry run, poisoned outputs, calls to ``cuco_run``
on each rank's stream, waits with a deadline, comparison and event timing. Imports torch."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from evaluator.gpu.ctx_layout import CucoCtx, make_ctx
from evaluator.gpu.native import CandidateLib
from evaluator.gpu.rank_memory import RankMemory


class Hang(Exception):
    """A run did not finish before its deadline."""


class RunFailed(Exception):
    """cuco_run returned non-zero (the launch error is the candidate's)."""


class Unjoined(Exception):
    """Work was still running on a side stream after cuco_run's own stream finished."""


@dataclass
class Case:
    name: str
    dims: list[int]  # in the pattern's ctx.dims order
    symm_bytes: int
    workspace_bytes: int


class Runner:
    def __init__(self, lib: CandidateLib, ranks: Sequence[int], world: int, memories: Sequence[RankMemory], *,
                 device, num_sms: int, dtype_code: int, run_timeout_s: float,
                 barrier: Optional[Callable[[], None]] = None) -> None:
        import torch

        self.torch = torch
        self.lib, self.ranks, self.world, self.mem = lib, list(ranks), world, list(memories)
        self.device, self.num_sms, self.dtype_code = device, num_sms, dtype_code
        self.run_timeout_s = run_timeout_s
        self.barrier = barrier or (lambda: None)
        self.streams = [torch.cuda.Stream(device=device) for _ in self.ranks]
        self.epoch = 0
        self.side_streams: set[int] = set()  # streams other than the rank's that the last calls launched on
        lib.set_sm_share(num_sms)

    # ------------------------------------------------------------------ contexts

    def contexts(self, case: Case, inputs: Sequence[Sequence], outputs: Sequence[Sequence],
                 workspaces: Sequence) -> list[CucoCtx]:
        ctxs = []
        for i, r in enumerate(self.ranks):
            m = self.mem[i]
            ctxs.append(make_ctx(
                rank=r, world=self.world, num_sms=self.num_sms, dtype_code=self.dtype_code, dims=case.dims,
                inputs=[t.data_ptr() for t in inputs[i]], outputs=[t.data_ptr() for t in outputs[i]],
                symm=m.symm, symm_bytes=case.symm_bytes, peer_symm=m.peer_symm, signals=m.signals,
                peer_signals=m.peer_signals, workspace=workspaces[i].data_ptr(),
                workspace_bytes=case.workspace_bytes, epoch=max(1, self.epoch), comm=m.comm,
                multimem=m.multimem, host_comm=m.host_comm))
        return ctxs

    # ------------------------------------------------------------------ calls

    def _call_all(self, ctxs: Sequence[CucoCtx]) -> list[int]:
        """cuco_run for every local rank; from threads when there are several, so a candidate that
        blocks its host thread (a stream sync inside cuco_run) cannot stall the other instances."""
        codes = [0] * len(ctxs)
        side: list[list[int]] = [[] for _ in ctxs]

        def call(i: int) -> None:
            self.torch.cuda.set_device(self.device)
            codes[i], side[i] = self.lib.run_tracked(ctxs[i], self.streams[i].cuda_stream)

        if len(ctxs) == 1:
            call(0)
            self.side_streams = set(side[0])
            return codes

        threads = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(len(ctxs))]
        for t in threads:
            t.start()
        deadline = time.monotonic() + self.run_timeout_s
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                raise Hang(f"cuco_run did not return within {self.run_timeout_s:.0f} s (host side blocked)")
        own = {s.cuda_stream for s in self.streams}  # another instance's stream is not a side stream
        self.side_streams = {h for hs in side for h in hs if h not in own}
        return codes

    def dry_run(self, ctxs: Sequence[CucoCtx]) -> str:
        """Call cuco_run with every checked launch skipped; '' or the co-residency refusal."""
        self.lib.reset()
        self.lib.set_dry_run(True)
        try:
            self._call_all(ctxs)
            self.wait()
        finally:
            self.lib.set_dry_run(False)
        refusal = self.lib.refusal()
        self.lib.reset()
        for m in self.mem:  # copy-engine transfers are not skipped: start the real runs clean
            m.zero()
        return refusal

    def run(self, ctxs: Sequence[CucoCtx]) -> None:
        """One call on every local rank with the next epoch; waits (with the deadline) until done."""
        self.epoch += 1
        for c in ctxs:
            c.epoch = self.epoch
        self.barrier()
        codes = self._call_all(ctxs)
        bad = [(self.ranks[i], c) for i, c in enumerate(codes) if c != 0]
        if bad:
            raise RunFailed(f"cuco_run returned {bad[0][1]} on rank {bad[0][0]}")
        self.wait()
        refusal = self.lib.refusal()
        if refusal:
            raise RunFailed(refusal)

    def wait(self) -> None:
        """Wait for every local stream, polling so a hang ends in ``Hang`` instead of blocking."""
        events = []
        for s in self.streams:
            e = self.torch.cuda.Event()
            e.record(s)
            events.append(e)
        deadline = time.monotonic() + self.run_timeout_s
        while not all(e.query() for e in events):
            if time.monotonic() > deadline:
                raise Hang(f"the kernels did not finish within {self.run_timeout_s:.0f} s (a hang or a deadlock)")
            time.sleep(0.0005)
        busy = [s for s in self.side_streams if self.lib.stream_busy(s)]
        self.torch.cuda.synchronize(self.device)  # raises on an asynchronous fault (illegal address, ...)
        if busy:
            raise Unjoined(f"work was still running on {len(busy)} side stream(s) after cuco_run's stream finished: "
                           "the harness's timer on that stream would not see it; join every side stream into "
                           "`stream` before returning")

    # ------------------------------------------------------------------ timing

    def timed(self, ctx_sets: Sequence[Sequence[CucoCtx]], warmup: int, iters: int) -> list[list[float]]:
        """Per local rank, per iteration seconds of cuco_run between CUDA events on its stream;
        a barrier before each iteration; input sets rotate."""
        torch = self.torch
        times: list[list[float]] = [[] for _ in self.ranks]
        for it in range(warmup + iters):
            ctxs = ctx_sets[it % len(ctx_sets)]
            self.epoch += 1
            for c in ctxs:
                c.epoch = self.epoch
            self.barrier()
            starts = [torch.cuda.Event(enable_timing=True) for _ in self.ranks]
            ends = [torch.cuda.Event(enable_timing=True) for _ in self.ranks]
            for i, s in enumerate(self.streams):
                starts[i].record(s)
            codes = self._call_all(ctxs)
            for i, s in enumerate(self.streams):
                ends[i].record(s)
            if any(codes):
                raise RunFailed(f"cuco_run returned {next(c for c in codes if c)} during the bench")
            self.wait()
            if it >= warmup:
                for i in range(len(self.ranks)):
                    times[i].append(starts[i].elapsed_time(ends[i]) / 1e3)
        return times


def timed_callable(fn: Callable[[int], None], stream, sets: int, warmup: int, iters: int,
                   barrier: Callable[[], None]) -> list[float]:
    """Seconds per iteration of ``fn(set_index)`` on ``stream`` (the host-driven baseline)."""
    import torch

    out = []
    with torch.cuda.stream(stream):
        for it in range(warmup + iters):
            barrier()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(stream)
            fn(it % sets)
            b.record(stream)
            b.synchronize()
            if it >= warmup:
                out.append(a.elapsed_time(b) / 1e3)
    return out
