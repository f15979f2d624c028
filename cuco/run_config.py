"""``cuco evolve --config run.toml``: a run as one TOML file, which flags given on the command line
override. Keys are the long option names (``generations = 8``, ``population = 12``,
``llm = ["openai:gpt-4.1"]``, ``launcher = "ray"``; dashes or underscores), at the top level or under
``[evolve]``; an unknown key is an error that lists the known ones."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Mapping

from design_space.errors import ConfigError

# options a config file cannot set: the spec itself, and what only makes sense on one command line
NOT_IN_CONFIG = {"spec", "config", "json_out", "wide", "top"}


def merged(values: Mapping[str, Any], from_command_line: Mapping[str, bool], path: Path) -> dict:
    """``values`` (every option) with the file's keys taken wherever the command line did not set one."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"no run config at {path}", "pass --config an existing TOML file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"cannot read the run config {path}: {e}", "fix the TOML syntax") from None
    table = data.get("evolve", data)
    known = sorted(k for k in values if k not in NOT_IN_CONFIG)
    out = dict(values)
    for key, value in table.items():
        name = key.replace("-", "_")
        if name == "evolve":
            continue
        if name not in known:
            raise ConfigError(f"the run config {path} has an unknown key {key!r}",
                              "use the long option names of `cuco evolve`: " + ", ".join(known))
        if not from_command_line.get(name, False):
            out[name] = list(value) if isinstance(value, (list, tuple)) else value
    return out
