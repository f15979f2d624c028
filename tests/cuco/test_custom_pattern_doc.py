"""docs/custom_pattern.md's examples run as they stand (in a fresh folder holding the doc's plugin
files): a plugin pattern registered with register_pattern is searched end to end, and its traced
cost agrees with the one it declares."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "custom_pattern.md"


def test_every_example_of_the_custom_pattern_doc_runs(tmp_path, shared_cache):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 2
    shutil.copytree(ROOT / "docs" / "plugin_example", tmp_path / "docs" / "plugin_example")
    script = tmp_path / "doc_examples.py"
    script.write_text("\n\n".join(blocks))
    env = {**os.environ, "CUCO_CACHE_DIR": str(shared_cache)}
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                         env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "valid points" in res.stdout and "allgather" in res.stdout
