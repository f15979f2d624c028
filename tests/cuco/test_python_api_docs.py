"""docs/python_api.md's examples run as they stand: each ```python block, in order, in one fresh
interpreter whose working folder holds the repository's examples and user workloads."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "python_api.md"


def test_every_example_of_the_python_api_doc_runs(tmp_path, shared_cache):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 4
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "tests" / "user_workloads", tmp_path / "tests" / "user_workloads")
    script = "\n\n".join(f"# --- block {i}\n{b}" for i, b in enumerate(blocks))
    (tmp_path / "doc_examples.py").write_text(script)
    env = {**os.environ, "CUCO_CACHE_DIR": str(shared_cache)}
    res = subprocess.run([sys.executable, "doc_examples.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=900, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "best:" in res.stdout and "geomean speedup" in res.stdout
