"""Hostile candidates through the public command, `cuco check SPEC FILE.cu`, as a user runs it: one of
each class of attack, refused with exit code 1, its status and reason printed, and whatever the
candidate put in its reason or log shown as text, never as markup or terminal control."""

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cuco.cli import app
from tests.evaluator.adversarial import escape_kernels as X
from tests.evaluator.adversarial.catalogue import BY_NAME
from tests.evaluator.adversarial.honest_kernels import WORKLOADS
from tests.evaluator.adversarial.test_runtime_holds import ROOT

CUCO = os.path.join(os.path.dirname(sys.executable), "cuco")
# one of each class, all on allgather_gemm: `cuco check` draws the product's shape pool, whose
# reference the rest of the suite prepares for that workload anyway
SUBSET = ("own_main", "incbin_file_scope", "denylisted_execvpe", "cudart_version_branch",
          "works_only_at_the_spec_shapes_allgather_gemm", "peer_input_through_the_symmetric_buffer",
          "exits_with_the_harness_code", "markup_in_the_crash_reason")


def raw_controls(text: str) -> list[str]:
    return [repr(ch) for ch in X.RAW_CONTROLS if ch in text]


def check(tmp_path, name):
    case = BY_NAME[name]
    path = tmp_path / f"{name}.cu"
    path.write_bytes(case.build().encode())
    # a wide terminal: the reason stays on one line
    return case, CliRunner().invoke(app, ["check", str(WORKLOADS[case.workload].spec_dir), str(path)],
                                    env={"COLUMNS": "1000"})


@pytest.mark.parametrize("name", SUBSET)
def test_cuco_check_refuses_the_hostile_candidate_with_exit_1_and_its_reason(evaluators, tmp_path, name):
    evaluators(BY_NAME[name].workload)  # the reference is prepared (and cached) once per workload
    case, result = check(tmp_path, name)
    assert result.exit_code == 1, result.output
    assert f"verdict: {case.status.value}" in result.stdout
    # the reason as shown: control characters escaped, everything else as the candidate wrote it
    shown = result.stdout.replace("\\x1b", "\x1b").replace("\\x07", "\x07").replace("\\u202e", "\u202e")
    assert all(words in shown for words in case.reason), result.stdout
    assert raw_controls(result.stdout) == []


def test_markup_from_a_candidate_is_printed_as_text_by_the_installed_command(evaluators, tmp_path):
    evaluators("allgather_gemm")
    path = tmp_path / "markup.cu"
    path.write_text(X.markup_in_the_crash_reason())
    res = subprocess.run([CUCO, "check", str(WORKLOADS["allgather_gemm"].spec_dir), str(path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=600, env={**os.environ, "COLUMNS": "1000"})
    assert res.returncode == 1, res.stderr[-2000:]
    out = res.stdout
    assert "verdict: crashed" in out and raw_controls(out) == []
    # rich did not read the markup: the tags and the link target are there, as text
    assert "[/][bold red]pwned[/bold red]" in out and "[link=file:/etc/passwd]click[/link]" in out
    assert "\\x1b]8;;file:/etc/passwd\\x07" in out and "\\u202e" in out and "\\r" in out
