"""Input sensitivity of a check's reference: does the output depend on the input at all?

sensitivity = max over outputs of max|y(x0) - y(x1)| / max|y(x0)| for two random inputs x0, x1
(the check's seed and seed + 1). A model whose output barely moves with its input (random BN
statistics that saturate or wash out the activations) makes the comparison vacuous: a wrong
kernel would pass. A check is conclusive only when the sensitivity is at least
SENSITIVITY_FACTOR x the tolerance: then a kernel that answered with the output of another input
(one that ignored or misread its data) would miss the tolerance by that factor.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
from fusion.verify.inputs import random_inputs

SENSITIVITY_FACTOR = 2.0


def relative_change(y0: Mapping[str, np.ndarray], y1: Mapping[str, np.ndarray]) -> float:
    worst = 0.0
    for name, a in y0.items():
        a = np.asarray(a, np.float64)
        b = np.asarray(y1[name], np.float64)
        if a.size == 0:
            continue
        scale = float(np.abs(a).max())
        diff = float(np.abs(a - b).max())
        if not np.isfinite(diff):
            return float("nan")
        worst = max(worst, diff / scale if scale > 0 else (np.inf if diff > 0 else 0.0))
    return worst


def input_sensitivity(reference: Callable[[dict], Mapping[str, np.ndarray]], compiled, seed: int,
                      ref0: Mapping[str, np.ndarray]) -> float:
    """`reference(feeds)` runs the reference (ONNX Runtime) on a feed dict; `ref0` is its output on
    the check's own inputs (seed)."""

    return relative_change(ref0, reference(random_inputs(compiled, seed + 1)))


def conclusive(sensitivity: float | None, tolerance: float) -> bool:
    return sensitivity is not None and bool(sensitivity >= SENSITIVITY_FACTOR * tolerance)


def warning(sensitivity: float | None, tolerance: float) -> str | None:
    if conclusive(sensitivity, tolerance):
        return None
    return (f"the reference output barely depends on the input (sensitivity {sensitivity:.1e} < "
            f"{SENSITIVITY_FACTOR:g} x tolerance {tolerance:.0e}): the comparison cannot tell a wrong "
            f"kernel from a right one; use a model whose activations stay in range")
