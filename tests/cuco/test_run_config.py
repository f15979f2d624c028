"""A run as one TOML file: `cuco evolve --config run.toml`, whose keys the command line's flags
override, recorded with the run; unknown keys are refused with the known ones."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from candidates_db import Store
from cuco.run_config import merged
from design_space.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")


def test_the_file_fills_what_the_command_line_did_not_set(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[evolve]\ngenerations = 7\npopulation = 3\nllm = ["openai:gpt-4.1"]\nlauncher-address = "x"\n')
    values = {"generations": 5, "population": 2, "llm": [], "launcher_address": None, "spec": "s"}
    out = merged(values, {"population": True}, path)
    assert out == {"generations": 7, "population": 2, "llm": ["openai:gpt-4.1"], "launcher_address": "x", "spec": "s"}


@pytest.mark.parametrize("text, problem", [("generationz = 3\n", "unknown key 'generationz'"),
                                           ("spec = 'elsewhere'\n", "unknown key 'spec'"),
                                           ("generations = \n", "cannot read")])
def test_a_bad_file_is_refused_naming_the_fix(tmp_path, text, problem):
    path = tmp_path / "run.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem):
        merged({"generations": 5, "spec": "s"}, {}, path)


def test_a_configured_run_records_its_file_and_the_flags_win(tmp_path, shared_cache):
    (tmp_path / "run.toml").write_text("generations = 1\npopulation = 3\nseed = 4\n")
    env = {**os.environ, "CUCO_CACHE_DIR": str(shared_cache)}
    res = subprocess.run([CUCO, "evolve", str(ROOT / "examples" / "allgather_gemm"), "--config", "run.toml",
                          "--run-dir", "run", "--population", "2", "--json"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr
    with Store.open(tmp_path / "run" / "cuco.db") as s:
        run = s.get_run("allgather_gemm")
        assert len(s.candidates("allgather_gemm")) == 2
    assert run.config["population"] == 2 and run.config["seed"] == 4 and run.config["config_file"] == "run.toml"
