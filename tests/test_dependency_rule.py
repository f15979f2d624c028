"""The layered dependency rule (README, "Layout") and the identity of the `agents` package."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = {"design_space", "kernels", "agents", "evaluator", "candidates_db", "cuco"}
# design_space (the pure vocabulary) <- kernels (CUDA sources, renderers, CUDA-text tools)
# <- agents, evaluator, candidates_db (never each other) <- cuco (the composition root)
ALLOWED = {
    "design_space": set(),
    "kernels": {"design_space"},
    "agents": {"design_space", "kernels"},
    "evaluator": {"design_space", "kernels"},
    "candidates_db": {"design_space"},
    "cuco": OURS,
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_the_star_allows(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for target in _imports(path) - ALLOWED[package] - {package}:
            bad.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not bad, "import edges outside the star:\n" + "\n".join(bad)


def test_the_rule_checker_sees_a_forbidden_edge(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("from evaluator import guard\nimport agents.proposer\n")
    assert _imports(bad) == {"evaluator", "agents"}


def test_agents_is_this_projects_package():
    import agents

    assert Path(agents.__file__).resolve().parent == ROOT / "agents"
    assert hasattr(agents, "TemplateProposer")


def test_cli_import_stays_light():
    code = ("import sys, cuco.cli; heavy = [m for m in ('torch', 'sqlalchemy', 'numpy', 'pydantic') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
