"""Prompt template files (``agents/prompts/*.md``) and their renderer.

Each file starts with a version header, ``<!-- cuco-prompt NAME vN -->``, kept in the rendered
prompt so every recorded call says which template wrote it. Placeholders are ``{name}`` (lower-case
identifiers); ``{{`` and ``}}`` are literal braces and any other brace (CUDA in examples) passes
through. Rendering fails loudly: a placeholder with no value, or a value with no placeholder, is
a ``ConfigError`` -- a template and its caller that drifted apart must not send a half-empty prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from design_space.errors import ConfigError

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
_HEADER = re.compile(r"^<!-- cuco-prompt (?P<name>[\w-]+) v(?P<version>\d+) -->\n")
_SLOT = re.compile(r"\{\{|\}\}|\{([a-z_][a-z0-9_]*)\}")


@dataclass(frozen=True)
class Template:
    name: str
    version: int
    text: str  # the whole file, header included

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(m.group(1) for m in _SLOT.finditer(self.text) if m.group(1))

    def render(self, values: Mapping[str, str]) -> str:
        return render(self.text, values, where=f"prompt template {self.name} v{self.version}")


@lru_cache(maxsize=None)
def load_template(name: str, directory: Path = PROMPTS_DIR) -> Template:
    path = directory / f"{name}.md"
    if not path.is_file():
        raise ConfigError(f"prompt template {path} is missing", "reinstall cuco or restore agents/prompts/")
    text = path.read_text()
    m = _HEADER.match(text)
    if not m or m.group("name") != name:
        raise ConfigError(f"prompt template {path} has no version header for {name!r}",
                          f"make its first line <!-- cuco-prompt {name} v1 -->")
    return Template(name=name, version=int(m.group("version")), text=text)


def read_doc(name: str, directory: Path = PROMPTS_DIR) -> str:
    """A curated reference text (e.g. comm_api), without its version header."""
    return _HEADER.sub("", load_template(name, directory).text, count=1)


def render(text: str, values: Mapping[str, str], where: str = "prompt template") -> str:
    """Fill ``{name}`` slots from ``values`` in one pass (values are never re-scanned)."""
    wanted = {m.group(1) for m in _SLOT.finditer(text) if m.group(1)}
    missing = sorted(wanted - set(values))
    if missing:
        raise ConfigError(f"{where} needs a value for {', '.join('{' + m + '}' for m in missing)}",
                          "pass every placeholder the template names")
    unused = sorted(set(values) - wanted)
    if unused:
        raise ConfigError(f"{where} has no placeholder for {', '.join(unused)}",
                          "add the placeholder to the template or stop passing the value")

    def fill(m: re.Match) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        return str(values[m.group(1)])
    return _SLOT.sub(fill, text)
