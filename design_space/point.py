"""``DesignPoint``: one coordinate of the design space, validated on construction."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from design_space.dimensions import CHUNK_BYTES, COMM_CTAS, Backend, Issuer, Placement, SyncScope
from design_space.errors import DesignPointError
from design_space.hardware import HardwareProfile
from design_space.rules import violations

DIMENSIONS: tuple[str, ...] = ("backend", "placement", "sync_scope", "issuer", "chunk_bytes", "comm_ctas")


class DesignPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Backend
    placement: Placement
    sync_scope: SyncScope
    issuer: Issuer
    chunk_bytes: int
    comm_ctas: int

    @field_validator("chunk_bytes")
    @classmethod
    def _chunk_in_range(cls, v: int) -> int:
        if v not in CHUNK_BYTES:
            raise ValueError(f"chunk_bytes must be one of {list(CHUNK_BYTES)} (powers of two), got {v}")
        return v

    @field_validator("comm_ctas")
    @classmethod
    def _ctas_in_range(cls, v: int) -> int:
        if v not in COMM_CTAS:
            raise ValueError(f"comm_ctas must be one of {list(COMM_CTAS)}, got {v}")
        return v

    @model_validator(mode="after")
    def _rules(self) -> "DesignPoint":
        broken = violations(self)
        if broken:
            raise DesignPointError(
                f"invalid design point {self.key()}: "
                + "; ".join(f"[{r.name}] {r.reason}" for r in broken),
                "change the named dimensions so the rule holds (see `cuco space`)",
                tuple(r.name for r in broken),
            )
        return self

    def key(self) -> str:
        """Short, stable, human-readable identity, e.g. ``lsa/fused_persistent/per_tile_signal/warp/64K/8``."""
        return (
            f"{self.backend.value}/{self.placement.value}/{self.sync_scope.value}/"
            f"{self.issuer.value}/{self.chunk_bytes // 1024}K/{self.comm_ctas}"
        )

    def check_hardware(self, hardware: HardwareProfile) -> None:
        """Raise ``DesignPointError`` naming each hardware rule this point breaks."""
        broken = [r for r in violations(self, hardware) if r.needs_hardware]
        if broken:
            raise DesignPointError(
                f"design point {self.key()} is invalid on {hardware.name}: "
                + "; ".join(f"[{r.name}] {r.reason}" for r in broken),
                "pick another point or hardware profile (see `cuco space`)",
                tuple(r.name for r in broken),
            )

    @classmethod
    def parse_key(cls, key: str) -> "DesignPoint":
        """Inverse of ``key()``; raises ``DesignPointError`` with the reason on bad input."""
        parts = key.strip().split("/")
        if len(parts) != 6 or not parts[4].upper().endswith("K"):
            raise DesignPointError(
                f"cannot parse design point {key!r}",
                "write backend/placement/sync_scope/issuer/<KiB>K/comm_ctas, "
                "e.g. lsa/fused_persistent/per_tile_signal/warp/64K/8",
            )
        try:
            return cls(
                backend=parts[0], placement=parts[1], sync_scope=parts[2], issuer=parts[3],
                chunk_bytes=int(parts[4][:-1]) * 1024, comm_ctas=int(parts[5]),
            )
        except ValueError as e:  # pydantic ValidationError is a ValueError
            raise DesignPointError(f"invalid design point {key!r}: {_first_line(e)}",
                                   "see `cuco space` for the values each dimension takes") from None


def _first_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return " ".join(lines[1:3]) if len(lines) > 1 else (lines[0] if lines else repr(e))
