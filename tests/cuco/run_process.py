"""Helpers for tests that drive `cuco evolve` as a process and interrupt it."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path


def sigint_default() -> None:
    """preexec_fn: a suite started in the background inherits an ignored SIGINT, and Python then ignores ^C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_evaluations(db: Path, proc: subprocess.Popen, at_least: int = 1, timeout_s: float = 300) -> None:
    """Until the run's SQLite database holds ``at_least`` evaluations (or the process ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(db) as con:
                    if con.execute("select count(*) from evaluations").fetchone()[0] >= at_least:
                        return
            except sqlite3.Error:
                pass
        time.sleep(0.2)
