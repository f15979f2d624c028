"""``Evaluation``: everything one pass of the cascade learned about a candidate.

A failed candidate is data: every status below is stored the same way as ``ok``.
Timings carry their source (``measured`` on a GPU, ``simulated`` by the analytic model)
and are never mixed within one evaluation.
"""

from __future__ import annotations

from enum import Enum
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from design_space.code_features import CodeFeatures

_FROZEN = ConfigDict(frozen=True, extra="forbid")
LOG_LIMIT = 4000  # characters kept per evaluation log (head and tail)
# The flag of an evaluation the run cut at its --max-wall deadline (not the candidate's doing):
# a resumed run evaluates such a candidate again.
CUT_BY_MAX_WALL = "cut_by_max_wall"


class Status(str, Enum):
    REJECTED = "rejected"
    BUILD_FAILED = "build_failed"
    EMULATION_FAILED = "emulation_failed"
    WRONG_RESULT = "wrong_result"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    OK = "ok"


class Stage(str, Enum):
    GUARD = "guard"
    BUILD = "build"
    EMULATE = "emulate"
    VERIFY = "verify"
    BENCH = "bench"
    SIMULATE = "simulate"
    SCORE = "score"


class TimingSource(str, Enum):
    MEASURED = "measured"
    SIMULATED = "simulated"


class Tier(str, Enum):
    EMULATED = "emulated"  # CPU shim: logic, indexing and signalling; not memory ordering
    VERIFIED = "verified"  # real GPU(s)


class KernelStats(BaseModel):
    model_config = _FROZEN
    name: str
    registers: int = 0
    smem_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    # read off the SASS (evaluator/sass.py) when a disassembler is installed; None: not read
    mma: Optional[int] = None  # tensor-core MMA instructions
    widest_global_bytes: Optional[int] = None  # widest global load/store (16 = 128-bit)


class BuildStats(BaseModel):
    model_config = _FROZEN
    arch: str
    comm_backend: str
    kernels: tuple[KernelStats, ...] = ()
    cached: bool = False
    seconds: float = 0.0

    @property
    def max_registers(self) -> int:
        return max((k.registers for k in self.kernels), default=0)

    @property
    def spills(self) -> int:
        return sum(k.spill_stores + k.spill_loads for k in self.kernels)


class RankCheck(BaseModel):
    """One rank's output in one (world size, shape, trial) compared with the reference."""

    model_config = _FROZEN
    tier: Tier
    world: int
    shape: str
    rank: int
    trial: int = 0
    ok: bool
    max_abs_err: float = 0.0
    mismatches: int = 0
    unwritten: int = 0  # elements still holding the poison pattern (NaN)
    note: str = ""


class Timing(BaseModel):
    model_config = _FROZEN
    shape: str
    world: int
    source: TimingSource
    seconds: float
    bound_seconds: float
    baseline_seconds: float

    @property
    def sol_fraction(self) -> float:
        return self.bound_seconds / self.seconds if self.seconds > 0 else 0.0

    @property
    def speedup(self) -> float:
        return self.baseline_seconds / self.seconds if self.seconds > 0 else 0.0


class Provenance(BaseModel):
    model_config = _FROZEN
    host: str = ""
    platform: str = ""
    python: str = ""
    torch: str = ""
    nvcc: str = ""
    gxx: str = ""
    nccl_headers: str = ""
    gpu: Optional[str] = None
    driver: Optional[str] = None
    cuda: Optional[str] = None
    nccl: Optional[str] = None


def trim_log(text: str, limit: int = LOG_LIMIT) -> str:
    """Keep the head and the tail of a log; the middle is rarely the diagnosis."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters trimmed] ...\n{text[-half:]}"


REASON_CHARS = 500  # a reason is one line of at most this many characters


class Evaluation(BaseModel):
    model_config = _FROZEN

    candidate_id: str
    status: Status
    stage: Stage  # the last stage reached
    reason: str = ""  # one line: why this status
    build: Optional[BuildStats] = Field(default=None, repr=False)
    checks: tuple[RankCheck, ...] = Field(default=(), repr=False)  # every rank, shape and call
    timings: tuple[Timing, ...] = ()
    flags: tuple[str, ...] = ()
    stage_seconds: dict[str, float] = Field(default_factory=dict, repr=False)
    logs: str = Field(default="", repr=False)
    provenance: Provenance = Field(default_factory=Provenance, repr=False)
    # What the code was observed to do (emulator trace + build): the point it implements, the
    # code features the score used, and the evidence (evaluator/observed_point.py).
    observed_point: Optional[str] = None
    observed: tuple[str, ...] = ()
    features: Optional[CodeFeatures] = None

    @field_validator("reason")
    @classmethod
    def _one_line(cls, reason: str) -> str:
        # a reason may quote the candidate (a crash line it printed): it stays one bounded line,
        # because reasons are shown in tables and fed to LLM prompts; the log keeps the rest
        flat = " ".join(reason.split())
        return flat if len(flat) <= REASON_CHARS else flat[:REASON_CHARS - 1] + "…"

    @property
    def timing_source(self) -> Optional[TimingSource]:
        sources = {t.source for t in self.timings}
        if len(sources) > 1:
            raise ValueError("an evaluation mixes measured and simulated timings")
        return next(iter(sources), None)

    def checked_worlds(self, tier: Tier = Tier.EMULATED) -> tuple[int, ...]:
        """World sizes in which every rank of every shape passed on ``tier``."""
        worlds = sorted({c.world for c in self.checks if c.tier is tier})
        return tuple(w for w in worlds if all(c.ok for c in self.checks if c.tier is tier and c.world == w))

    @property
    def speedup(self) -> Optional[float]:
        """The ranking score: design_space.figures' geometric mean over shapes of baseline / time."""
        from design_space.figures import score  # noqa: PLC0415  (figures builds on this module)
        return score(self.timings).speedup if self.timings else None

    @property
    def sol_fraction(self) -> Optional[float]:
        """design_space.figures' geometric mean over shapes of bound / time."""
        from design_space.figures import score  # noqa: PLC0415
        return score(self.timings).sol if self.timings else None

    @property
    def fitness(self) -> Optional[float]:
        """What the search maximises: the speedup of a correct candidate; None otherwise."""
        return self.speedup if self.status is Status.OK else None

    def timing_for(self, shape: str) -> Optional[Timing]:
        return next((t for t in self.timings if t.shape == shape), None)
