"""The fast path's prompts (template files ``agents/prompts/fast_*.md``) and the reading of the
writer's reply.

Template files start with a version header ``<!-- cuco-prompt NAME vN -->`` (kept in the prompt,
so every recorded call says which template wrote it) and hold ``{name}`` placeholders, the
convention of the slow path's templates. Prompt size is bounded: the example is one template
rendering (~8k characters), and the previous attempt and logs are trimmed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from design_space.dimensions import DIMENSION_DOCS
from design_space.errors import ConfigError, DesignPointError
from design_space.evaluation import trim_log
from design_space.point import DesignPoint

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
_HEADER = re.compile(r"^<!-- cuco-prompt [\w-]+ v\d+ -->\n")
_SLOT = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.S)
_POINT = re.compile(r"DESIGN-POINT:\s*`?([^\s`]+)`?")
CODE_LIMIT = 12_000  # characters of a previous attempt or checked code quoted back to the LLM
LOG_LIMIT = 4_000


@lru_cache(maxsize=None)
def template(name: str) -> str:
    path = PROMPTS_DIR / f"{name}.md"
    if not path.is_file():
        raise ConfigError(f"prompt template {path} is missing", "reinstall cuco (agents/prompts/*.md ship with it)")
    return path.read_text()


def fill(name: str, values: Mapping[str, str]) -> str:
    """Template ``name`` with each ``{slot}`` replaced; a slot without a value is an error."""
    text = template(name)
    missing = sorted({m.group(1) for m in _SLOT.finditer(text)} - set(values))
    if missing:
        raise ConfigError(f"prompt template {name} needs {', '.join(missing)}", "pass every placeholder's value")
    return _SLOT.sub(lambda m: str(values[m.group(1)]), text)


def body(name: str) -> str:
    """A template file without its version header (for files included in another prompt)."""
    return _HEADER.sub("", template(name), count=1).strip()


def comm_api(backend: str) -> str:
    """The shared comm API text (``comm_api.md``, also given to the slow path): its common part
    and the section of ``backend`` only, so the writer is not tempted by another backend's calls."""
    shared = body("comm_api")
    return "\n\n".join(s for s in (_section(shared, "common"), _section(shared, f"backend: {backend}")) if s)


def _section(text: str, heading: str) -> str:
    """The text under the ``## <heading>`` line, up to the next ``## `` line ('' when none)."""
    parts = re.split(r"^## +(.*?)\s*$", text, flags=re.M)
    for title, content in zip(parts[1::2], parts[2::2]):
        if title.lower() == heading.lower():
            return content.strip()
    return ""


def point_docs(point: DesignPoint) -> str:
    lines = [f"`{point.key()}`:"]
    for dim in ("backend", "placement", "sync_scope", "issuer"):
        value = getattr(point, dim).value
        lines.append(f"- {dim} = {value}: {DIMENSION_DOCS.get(dim, {}).get(value, '')}".rstrip(": "))
    lines.append(f"- chunk = {point.chunk_bytes // 1024} KiB per transfer (`#define CHUNK_BYTES {point.chunk_bytes}`)")
    lines.append(f"- comm_ctas = {point.comm_ctas} CTAs for communication (`#define COMM_CTAS {point.comm_ctas}`)")
    return "\n".join(lines)


def write_prompt(*, analysis: str, point: DesignPoint, example: str, feedback: str) -> tuple[str, str]:
    """(system, user) for the writer."""
    user = fill("fast_write", {
        "backend": point.backend.value, "point": point.key(), "analysis": analysis, "point_docs": point_docs(point),
        "contract": body("fast_contract"), "comm_api": comm_api(point.backend.value), "example": example.rstrip(),
        "feedback": feedback})
    return template("fast_write_system"), user


def feedback_text(*, iteration: int, reason: str, diagnosis: str, code: Optional[str]) -> str:
    """What the next writer sees about the previous attempt."""
    parts = [f"\n## Your previous attempt (iteration {iteration}) failed", f"Reason: {reason}"]
    if diagnosis:
        parts.append(f"Reviewer's diagnosis:\n{diagnosis}")
    if code:
        parts.append(f"The code that failed:\n```cuda\n{_trim(code)}\n```")
    parts.append("Fix this and answer with the whole corrected file.\n")
    return "\n".join(parts)


def judge_prompt(*, iteration: int, point_key: str, status: str, stage: str, reason: str, logs: str,
                 code: str) -> tuple[str, str]:
    user = fill("fast_judge", {"iteration": str(iteration), "point": point_key, "status": status, "stage": stage,
                               "reason": reason, "logs": trim_log(logs or "(none)", LOG_LIMIT), "code": _trim(code)})
    return template("fast_judge_system"), user


def _trim(code: str) -> str:
    return code if len(code) <= CODE_LIMIT else trim_log(code, CODE_LIMIT)


@dataclass(frozen=True)
class WriterReply:
    code: Optional[str]  # the file, or None when the reply holds no usable code block
    point_key: Optional[str]  # what DESIGN-POINT declared, as written
    problem: str = ""  # why the reply cannot be checked ('' when it can)


NO_CODE = "no code in the reply"


def parse_reply(text: str) -> WriterReply:
    """The ```cuda block (the largest fenced block, preferring one with the cuco_run entry) and
    the DESIGN-POINT line. Empty or garbled replies give ``problem == NO_CODE``."""
    blocks = [m.group(2) for m in _FENCE.finditer(text or "") if m.group(2).strip()]
    blocks = [b for b in blocks if "cuco_run" in b] or blocks
    outside = _FENCE.sub("", text or "")
    declared = _POINT.search(outside) or _POINT.search(text or "")
    key = declared.group(1) if declared else None
    if not blocks:
        return WriterReply(None, key, NO_CODE)
    return WriterReply(max(blocks, key=len), key)


def declared_point(key: Optional[str], asked: DesignPoint) -> tuple[Optional[DesignPoint], str]:
    """(point, problem): the declared point, or the one asked for when none was declared; a
    key that does not parse is a problem the writer must fix."""
    if key is None:
        return asked, ""
    try:
        return DesignPoint.parse_key(key), ""
    except DesignPointError as e:
        return None, f"the DESIGN-POINT line does not parse: {e.problem}"
