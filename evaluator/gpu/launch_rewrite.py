"""Route a candidate's kernel launches through the co-residency check (GPU builds).

``kern<<<grid, block[, smem[, stream]]>>>(args);`` becomes
``cuco_checked_launch_named((kern), "kern", dim3(grid), dim3(block), (size_t)(smem),
(cudaStream_t)(stream), args);`` (evaluator/runtime/cuco_launch_check.h), which asks the CUDA
occupancy API how many blocks of ``kern`` fit on one SM and refuses a grid larger than this rank's
SM share allows. Launch parsing is the CPU rewrite's (evaluator/source_rewrite.py), reused as is;
line numbers stay stable so nvcc diagnostics point at the candidate's own lines.

Limit: the kernel must name one function (a plain or explicitly instantiated kernel,
``k<T, 4>``); a template kernel whose arguments nvcc deduces from the call does not compile in
this mode (write its template arguments out).
"""

from __future__ import annotations

from kernels import cuda_scan as scan
from evaluator.source_rewrite import parse_launch  # the CPU rewrite's tested launch parser


def rewrite_launches_checked(source: str) -> str:
    """Return ``source`` with every ``<<<...>>>`` launch replaced by a checked launch."""
    blank = scan.blank(source)
    code = scan.blank(source, strings=False)  # comments dropped: the call is joined onto one line
    out = []
    pos = 0
    lt = blank.find("<<<")
    while lt >= 0:
        start, end, text = _one_launch(source, code, blank, lt)
        out.append(source[pos:start])
        out.append(text)
        pos = end
        lt = blank.find("<<<", end)
    out.append(source[pos:])
    return "".join(out)


def _one_launch(src: str, code: str, b: str, lt: int) -> tuple[int, int, str]:
    k = parse_launch(code, b, lt)  # parsed on ``code`` (comments dropped): the call goes on one line
    callee = code[k.start:k.callee_end]
    name = " ".join(callee.split()).replace("\\", "\\\\").replace('"', '\\"')
    args = code[k.paren + 1:k.close]
    text = (f'cuco_checked_launch_named(({callee}), "{name}", dim3({k.grid}), dim3({k.block}), '
            f"(size_t)({k.smem}), (cudaStream_t)({k.stream})" + (f", {args}" if args.strip() else "") + ")")
    text = text.replace("\\\n", " ").replace("\n", " ")
    # line breaks of the text we replaced go after the call, so later lines keep their numbers
    return k.start, k.close + 1, text + scan.line_breaks(src[k.start:k.close + 1])
