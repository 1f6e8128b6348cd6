"""Operator parameters checked on import, before any pass uses them.

The weights' own NaN/Inf check is fusion.frontend.validate's; this one covers what the weights check
cannot see: float attributes (a LeakyRelu alpha of inf, a NaN epsilon) and the BatchNormalization
denominator var + epsilon, which must be > 0 for every channel (else folding divides by zero or
takes the root of a negative number: Inf/NaN weights that would compile silently). The error
names the node, the attribute or channel, and the value.
"""

from __future__ import annotations

import math

import numpy as np

from fusion.core.errors import ModelLoadError
from fusion.core.sanitize import display

# float attributes that are multiplied into, or divide, the data: each must be finite
FINITE_ATTRS = {
    "LeakyRelu": ("alpha",), "Elu": ("alpha",), "Celu": ("alpha",), "ThresholdedRelu": ("alpha",),
    "Selu": ("alpha", "gamma"), "HardSigmoid": ("alpha", "beta"), "Gemm": ("alpha", "beta"),
    "BatchNormalization": ("epsilon",), "InstanceNormalization": ("epsilon",),
    "LayerNormalization": ("epsilon",), "LRN": ("alpha", "beta", "bias"),
}


def check_node_params(op_type: str, name: str, ins: list[str], attrs: dict, const) -> None:
    """attrs: the node's attributes; const(tensor name) → its constant array or None."""
    for key in FINITE_ATTRS.get(op_type, ()):
        v = attrs.get(key)
        if isinstance(v, (int, float)) and not math.isfinite(float(v)):
            raise ModelLoadError(f"node '{display(name)}': {op_type} attribute {key} = {v} is not finite")
    if op_type == "BatchNormalization":
        var = const(ins[4]) if len(ins) > 4 and ins[4] else None
        if var is not None:
            check_bn_denominator(name, float(attrs.get("epsilon", 1e-5)), var)


def check_bn_denominator(name: str, eps: float, var: np.ndarray) -> None:
    """var + epsilon > 0 and finite for every channel (checked where BN is folded or built)."""
    den = np.asarray(var, np.float64) + eps
    bad = np.flatnonzero(~(np.isfinite(den) & (den > 0)))
    if bad.size:
        c = int(bad[0])
        raise ModelLoadError(f"node '{display(name)}': BatchNormalization var + epsilon must be > 0 in every "
                             f"channel; channel {c} has var {float(np.ravel(var)[c]):g} + epsilon {eps:g} "
                             f"({bad.size} channel(s) bad): its normalisation would divide by zero or be NaN")
