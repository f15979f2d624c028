"""The Jinja2 environment every template family renders through.

Templates are CUDA files with Jinja2 statements (``{% if backend == "lsa" %}`` ... ``{% endif %}``)
and expressions (``{{ chunk_bytes }}``), kept beside their family's renderer as
``kernels/<family>/*.cu.j2`` (a whole candidate) and ``*.cuh.j2`` (pieces it includes). Blocks
and their line breaks are trimmed, so a template reads like the CUDA it produces; an undefined
variable is an error, never an empty string. A rendered candidate is one self-contained source:
``{% include %}`` inlines pieces (candidates may include only CUDA and cuco headers).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from design_space.point import DesignPoint

ROOT = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def environment():
    import jinja2  # noqa: PLC0415  (only when something renders)

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT)), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                              autoescape=False)


def render_file(name: str, **context: Any) -> str:
    """Render ``kernels/<name>`` (e.g. ``"allgather_gemm/candidate.cu.j2"``) with ``context``."""
    return environment().get_template(name).render(**context)


def render_point(family: str, point: DesignPoint, **family_context: Any) -> str:
    """Render ``<family>/candidate.cu.j2`` for ``point``: every template sees the point's key
    (``point``) and values (``backend``, ``placement``, ``sync_scope``, ``issuer`` as strings,
    ``chunk_bytes``, ``comm_ctas``), plus the family's own constants."""
    return render_file(f"{family}/candidate.cu.j2", point=point.key(), backend=point.backend.value,
                       placement=point.placement.value, sync_scope=point.sync_scope.value,
                       issuer=point.issuer.value, chunk_bytes=point.chunk_bytes, comm_ctas=point.comm_ctas,
                       **family_context)
