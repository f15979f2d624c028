"""Where cuco keeps what it computes once and reuses (reference data, builds, semantic verdicts)
when a command is not given ``--cache-dir``."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    env = os.environ.get("CUCO_CACHE_DIR")
    return Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cuco"
