"""``DesignPoint``: one coordinate of the design space, validated on construction."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from design_space.dimensions import CHUNK_BYTES, COMM_CTAS, Backend, Issuer, Placement, SyncScope
from design_space.errors import DesignPointError
from design_space.hardware import HardwareProfile
from design_space.rules import violations

DIMENSIONS: tuple[str, ...] = ("backend", "placement", "sync_scope", "issuer", "chunk_bytes", "comm_ctas")
_VALUES = (f"backend {'|'.join(b.value for b in Backend)}, placement {'|'.join(p.value for p in Placement)}, "
           f"sync_scope {'|'.join(s.value for s in SyncScope)}, issuer {'|'.join(i.value for i in Issuer)}, "
           f"chunk {'|'.join(f'{c // 1024}K' for c in CHUNK_BYTES)}, comm_ctas {'|'.join(map(str, COMM_CTAS))}")


class DesignPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Backend
    placement: Placement
    sync_scope: SyncScope
    issuer: Issuer
    chunk_bytes: int
    comm_ctas: int

    @field_validator("chunk_bytes", "comm_ctas")
    @classmethod
    def _in_range(cls, v: int, info) -> int:
        allowed = CHUNK_BYTES if info.field_name == "chunk_bytes" else COMM_CTAS
        if v not in allowed:
            raise ValueError(f"must be one of {list(allowed)}, got {v}")
        return v

    @model_validator(mode="after")
    def _rules(self) -> "DesignPoint":
        broken = violations(self)
        if broken:
            raise DesignPointError(
                f"invalid design point {self.key()}: "
                + "; ".join(f"[{r.name}] {r.reason}" for r in broken),
                "change the named dimensions so the rule holds",
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
                "pick another point or hardware profile",
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
        except ValidationError as e:
            err = e.errors()[0]
            where = f"{err['loc'][0]}: " if err["loc"] else ""
            raise DesignPointError(f"invalid design point {key!r}: {where}{err['msg'].removeprefix('Value error, ')}",
                                   f"use the values of each dimension: {_VALUES}") from None
