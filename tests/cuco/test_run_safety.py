"""A run that cannot start says so in one line and leaves nothing behind (a read-only or full run
folder, a missing API key); a second Ctrl-C leaves at once, without a traceback."""

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cuco.run_process import sigint_default, wait_for_evaluations

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE = str(ROOT / "examples" / "allgather_gemm")
RUN = ["evolve", EXAMPLE, "--generations", "1", "--population", "2"]


def _mount_ns_works() -> bool:
    if not shutil.which("unshare"):
        return False
    res = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True)
    return res.returncode == 0


needs_mount_ns = pytest.mark.skipif(not _mount_ns_works(),
                                    reason="needs `unshare -rm` (user and mount namespaces) to mount a test disk")


def _in_mount_ns(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _one_line_error(res: subprocess.CompletedProcess, text: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and text in errors[0], res.stderr
    assert "Traceback" not in res.stderr


@needs_mount_ns
def test_a_read_only_run_folder_is_one_line_and_nothing_is_created(tmp_path):
    disk = tmp_path / "ro"
    disk.mkdir()
    res = _in_mount_ns(f"mount -t tmpfs -o ro tmpfs {disk} && exec {CUCO} {' '.join(RUN)} --run-dir {disk}/run",
                       tmp_path)
    _one_line_error(res, "is read-only")


@needs_mount_ns
def test_a_full_disk_is_one_line_and_nothing_is_created(tmp_path):
    disk = tmp_path / "full"
    disk.mkdir()
    script = (f"mount -t tmpfs -o size=256k tmpfs {disk} && head -c 200000 /dev/zero > {disk}/fill && "
              f"{CUCO} {' '.join(RUN)} --run-dir {disk}/run; rc=$?; ls -A {disk}; exit $rc")
    res = _in_mount_ns(script, tmp_path)
    _one_line_error(res, "KiB free")
    assert res.stdout.split()[-1:] == ["fill"], res.stdout  # no run folder, no database


def test_a_missing_api_key_is_one_line_and_nothing_is_created(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    res = subprocess.run([CUCO, *RUN, "--run-dir", "run", "--llm", "openai:gpt-4.1"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    _one_line_error(res, "OPENAI_API_KEY")
    assert not (tmp_path / "run").exists()


def test_a_second_ctrl_c_leaves_at_once_without_a_traceback(tmp_path):
    env = {**os.environ, "CUCO_CACHE_DIR": str(tmp_path / "cache")}  # cold: evaluations are in flight
    args = [CUCO, "evolve", EXAMPLE, "--run-dir", "run", "--generations", "2", "--population", "4", "--workers", "2"]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=sigint_default)
    db = tmp_path / "run" / "cuco.db"
    wait_for_evaluations(db, proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    res = subprocess.run([*args, "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(db) as con:
        per_candidate = con.execute("select candidate_id, count(*) from evaluations group by candidate_id").fetchall()
        candidates = con.execute("select count(*) from candidates").fetchone()[0]
    assert candidates == 8 and len(per_candidate) == 8 and all(n == 1 for _, n in per_candidate), per_candidate


def test_a_run_whose_every_candidate_failed_exits_non_zero_with_the_most_common_reason(tmp_path):
    spec = tmp_path / "strict"
    spec.mkdir()
    # the reference is a hair off the family's (a semantic match) and the tolerance admits no hair
    ref = (ROOT / "examples" / "allgather_gemm" / "reference.py").read_text()
    hair = ref.replace("c = gathered.float() @ b.float()\n", "c = gathered.float() @ b.float() + 0.01\n")
    assert hair != ref
    (spec / "reference.py").write_text(hair)
    text = (ROOT / "examples" / "allgather_gemm" / "spec.py").read_text()
    text = text.replace("from design_space import DType, KernelSpec, ShapeCase",
                        "from design_space import DType, KernelSpec, ShapeCase, Tolerance")
    text = text.replace('    hardware="H100",', '    hardware="H100",\n    tolerances={DType.BF16: Tolerance(atol=1e-9, '
                        'rtol=0.0), DType.FP16: Tolerance(atol=1e-9, rtol=0.0), DType.FP32: Tolerance(atol=1e-9, '
                        'rtol=0.0)},')
    (spec / "spec.py").write_text(text)
    res = subprocess.run([CUCO, "evolve", str(spec), "--run-dir", "run", "--generations", "1", "--population", "2"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert "all 2 evaluated candidates failed" in line and "wrong_result" in line and "Traceback" not in res.stderr
