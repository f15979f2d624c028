"""The all-points sweep's ledger: one JSON line per finished check (guard, a build for one arch, an
emulation), keyed by a hash of everything that decides its verdict. A sweep that is stopped or killed
resumes from it, and a later sweep skips what is still valid; a change to a source, the toolchain,
the runtime headers, the shim or the spec changes the key, so nothing stale is reused. Timeouts are
not recorded: they may be the machine's fault, so they are tried again."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class Verdict:
    kind: str  # "guard", "build:<arch>" or "emulate"
    status: str  # a design_space Status value
    reason: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def verdict_key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class Ledger:
    """Append-only and thread-safe; ``path`` None keeps verdicts in memory only."""

    def __init__(self, path: Optional[Path]) -> None:
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._entries: dict[str, Verdict] = {}
        if self.path and self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    row = json.loads(line)
                    key = row.pop("check")  # a digest of what the check depends on
                    self._entries[key] = Verdict(**row)
                except (ValueError, TypeError, KeyError):
                    continue  # a line cut short by a kill: that check simply runs again

    def __len__(self) -> int:
        return len(self._entries)

    def verdicts(self) -> dict[str, Verdict]:
        return dict(self._entries)

    def get(self, key: str) -> Optional[Verdict]:
        return self._entries.get(key)

    def put(self, key: str, verdict: Verdict) -> None:
        with self._lock:
            self._entries[key] = verdict
            if self.path and verdict.status != "timeout":
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as f:
                    f.write(json.dumps({"check": key, **asdict(verdict)}) + "\n")
