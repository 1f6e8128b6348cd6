"""Checks after each transformation: a pass may only produce finite weights.

The input's weights and parameters are checked on import (fusion.frontend.validate, fusion.frontend.param_checks);
a rewrite can still overflow (a BN scale of 1e30 folded into float32 weights is Inf). Every
constant a step adds or replaces is checked here, and the error names the step and, for a fold,
the node whose parameters caused it.
"""

from __future__ import annotations

import numpy as np

from fusion.frontend import validate
from fusion.core.errors import ModelLoadError
from fusion.core.ir import Graph
from fusion.core.sanitize import display


def check_folded(step: str, node: str, detail: str, *arrays: np.ndarray) -> None:
    """Arrays a fold computed from `node`'s parameters (detail: e.g. its epsilon and variance)."""
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            _report(f"{step}: folding '{display(node)}' ({detail}) gives {int(a.size - np.isfinite(a).sum()):,} "
                    f"non-finite weight(s)")


def check_new_constants(step: str, before: Graph, after: Graph) -> None:
    """Every constant `step` added or replaced is finite (unless --allow-nonfinite)."""
    if after is before:
        return
    for name, arr in after.constants.items():
        if before.constants.get(name) is arr:
            continue
        a = np.asarray(arr)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            _report(f"{step} produced weight '{display(name)}' with {int(a.size - np.isfinite(a).sum()):,} "
                    f"non-finite value(s)")


def _report(msg: str) -> None:
    """An error; with --allow-nonfinite nothing more (non-finite weights were accepted and warned
    about once on import: what passes derive from them is not repeated line by line)."""
    if not validate.current().allow_nonfinite:
        raise ModelLoadError(f"{msg} (--allow-nonfinite compiles it anyway)")
