"""Dims that grow with the world size: a shape's dim may be an integer expression of ``n`` (the
world size) written as a string, e.g. ``"64*n"`` (each rank holds a fixed 64-wide slice) or ``"n"``
(one expert per rank). Integers, ``n``, ``+ - * //`` and parentheses only; parsed with ``ast`` and
walked here, never ``eval``. A dim value is an ``int`` (fixed, as before) or such a string.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Mapping, Optional, Union

from design_space.errors import SpecError

DimValue = Union[int, str]
WORLDS = range(1, 33)  # every world size a spec may name (KernelSpec: 1..32)
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b}
# for prompts and reports: code must read such a dim from ctx.dims, never assume its value
WORLD_NOTE = ("n is the world size: a dim written with n (e.g. k=64*n, a fixed slice per rank) grows with it; "
              "ctx.dims[] holds its value at the run's world size")
_FIX = "write an integer expression of the world size n, e.g. \"64*n\", \"n\" or \"2*n+8\""


def _checked(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        _checked(node.left, text)
        _checked(node.right, text)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _checked(node.operand, text)
    elif isinstance(node, ast.Name) and node.id == "n":
        pass
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        pass
    else:
        what = ast.get_source_segment(text, node) or type(node).__name__
        raise SpecError(f"dim expression {text!r} uses {what!r}: only integers, n, + - * // and parentheses "
                        "are allowed", _FIX)


@lru_cache(maxsize=1024)
def _parse(text: str) -> ast.expr:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise SpecError(f"dim expression {text!r} is not an expression", _FIX) from None
    _checked(tree.body, text.strip())
    return tree.body


def _value(node: ast.AST, world: int) -> int:
    if isinstance(node, ast.BinOp):
        return _OPS[type(node.op)](_value(node.left, world), _value(node.right, world))
    if isinstance(node, ast.UnaryOp):
        v = _value(node.operand, world)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Name):
        return world
    return node.value  # type: ignore[attr-defined]


def value_at(value: DimValue, world: int) -> int:
    """The dim's value at ``world`` ranks (an int is its own value)."""
    if not isinstance(value, str):
        return value
    try:
        return _value(_parse(value), world)
    except ZeroDivisionError:
        raise SpecError(f"dim expression {value!r} divides by zero at n={world}", _FIX) from None


def checked(name: str, value: DimValue) -> DimValue:
    """``value`` validated: an int as is, a constant expression as its int, else the expression
    (stripped), positive at every world size 1..32. SpecError (with its fix) otherwise."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    _parse(text)
    bad = next((w for w in WORLDS if value_at(text, w) <= 0), None)
    if bad is not None:
        raise SpecError(f"dim {name}={text!r} is {value_at(text, bad)} at world size n={bad}: a dim must be "
                        "positive at every world size 1..32", _FIX)
    constant = {value_at(text, w) for w in WORLDS}
    return constant.pop() if len(constant) == 1 and "n" not in text else text


def linear(value: DimValue) -> Optional[tuple[int, int]]:
    """``(a, b)`` when the dim is ``a*n + b`` at every world size 1..32 (an int: ``(0, value)``);
    None for anything else (``n*n``, ``n//2``)."""
    if not isinstance(value, str):
        return 0, value
    # read at n=1 and n=2 (n=0 may divide by zero), then confirmed at every world size
    one, two = value_at(value, 1), value_at(value, 2)
    a, b = two - one, 2 * one - two
    if all(value_at(value, w) == a * w + b for w in WORLDS):
        return a, b
    return None


def scaled(a: int, b: int = 0) -> DimValue:
    """The expression text of ``a*n + b`` (an int when ``a`` is 0)."""
    if a == 0:
        return b
    head = "n" if a == 1 else f"{a}*n"
    return head if b == 0 else f"{head}{'+' if b > 0 else '-'}{abs(b)}"


def resolve(dims: Mapping[str, DimValue], world: int) -> dict[str, int]:
    """Every dim's value at ``world`` ranks."""
    return {k: value_at(v, world) for k, v in dims.items()}


def scales(dims: Mapping[str, DimValue]) -> bool:
    """Whether any dim depends on the world size."""
    return any(isinstance(v, str) for v in dims.values())


def shown(dims: Mapping[str, DimValue], world: Optional[int] = None, sep: str = ", ") -> str:
    """``k=64*n`` as written; with ``world``, ``k=256 (64*n)``."""
    def one(k: str, v: DimValue) -> str:
        if not isinstance(v, str):
            return f"{k}={v}"
        return f"{k}={v}" if world is None else f"{k}={value_at(v, world)} ({v})"
    return sep.join(one(k, v) for k, v in dims.items())
