"""A kernel exported by cuco as a PyTorch custom op; README.md one folder up says how to build and
use it. Importing registers the op (no GPU needed); the library loads on the first real call."""

from .op import CONFIG, FLAGS, INPUTS, NAMESPACE, OP, OUTPUTS, close, run

__all__ = ["CONFIG", "FLAGS", "INPUTS", "NAMESPACE", "OP", "OUTPUTS", "close", "run"]
