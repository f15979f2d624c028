"""The run folder (``--run-dir``), checked before anything is written to it: a read-only or full
disk is one clear error, and leaves no half-made folder or empty database behind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from design_space.errors import StoreError

MIN_FREE_BYTES = 64 << 20  # a database, fast-path checkpoints and plots; builds go to the cache


def prepare_run_folder(path: Path, min_free_bytes: int = MIN_FREE_BYTES) -> Path:
    """Create ``path`` (and its parents) once it is known to be writable with room to spare."""
    path = Path(path).expanduser()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise StoreError(f"cannot make the run folder {path}: {existing} is not a folder",
                         "pass --run-dir a folder path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write the run folder {path}: {existing} is read-only",
                         "pass --run-dir a folder you can write")
    free = shutil.disk_usage(existing).free
    if free < min_free_bytes:
        raise StoreError(f"the disk of the run folder {path} has {free >> 10} KiB free; a run needs "
                         f"{min_free_bytes >> 20} MiB", "free some space, or pass --run-dir on another disk")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot make the run folder {path}: {e.strerror or e}",
                         "pass --run-dir a folder you can write") from e
    return path
