"""The evaluator cascade (see cascade.py); importing it registers cuco's kernel templates, which
the canary and the sweeps render."""

import kernels as _kernels  # noqa: F401  (registers the built-in renderers)
