"""The activations a fused kernel applies after DW (act1) and after PW (act2): one table.

An activation is a string: a plain name (none, relu, relu6, hardswish) or a name with its
constants, written by `spell`:
  leakyrelu(a)        x >= 0 ? x : a*x                 (LeakyRelu, PRelu with one slope)
  clip(lo,hi)         min(max(x, lo), hi)              (Clip with other bounds than 0/6)
  hardsigmoid(a,b)    min(max(a*x + b, 0), 1)          (HardSigmoid as the activation)
  hardswishab(a,b)    x * min(max(a*x + b, 0), 1)      (x * HardSigmoid(x; a, b), a != 1/6)
  prelu               x >= 0 ? x : s[c]*x              (PRelu with one slope per channel: the slope
                                                        is an operand of the fused block, `needs_slope`)
  silu                x * sigmoid(x) = x / (1 + e^-x)  (SiLU / Swish: Sigmoid + Mul(x, sigmoid(x)),
                                                        as torch.onnx.export writes nn.SiLU)
Every consumer derives from this module: the TE compute (`te_expr`), the cost model's vector
instruction count (`VECTOR_INSTRS`), the Ascend C body (`ascendc_body`) and the plan's scratch
buffer (`needs_scratch`), so the four cannot disagree on what an activation is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

PLAIN = ("none", "relu", "relu6", "hardswish", "prelu", "silu")
# activations that read a per-channel operand (the fused block's s_dw / s_pw input)
PER_CHANNEL = ("prelu",)
PARAMETRIC = {"leakyrelu": 1, "clip": 2, "hardsigmoid": 2, "hardswishab": 2}
_RE = re.compile(r"^([a-z0-9]+)\(([^()]*)\)$")


@dataclass(frozen=True)
class Act:
    kind: str
    params: tuple[float, ...] = ()


def spell(kind: str, *params: float) -> str:
    if not params:
        return kind
    # the kernels compute in fp32: the shortest text that round-trips the fp32 constant
    return f"{kind}({','.join(np.format_float_positional(np.float32(p), trim='-') for p in params)})"


@lru_cache(maxsize=256)
def parse(act: str) -> Act:
    if act in PLAIN:
        return Act(act)
    m = _RE.match(act or "")
    if m and m.group(1) in PARAMETRIC:
        try:
            params = tuple(float(v) for v in m.group(2).split(","))
        except ValueError:
            params = ()
        if len(params) == PARAMETRIC[m.group(1)] and all(p == p and abs(p) != float("inf") for p in params):
            return Act(m.group(1), params)
    raise ValueError(f"unknown activation {act!r}")


def is_valid(act: str) -> bool:
    try:
        parse(act)
        return True
    except ValueError:
        return False


# vector instructions per activation as the Ascend C body below issues them (fp32, in place):
# relu = Relu; relu6 = Maxs + Mins; hardswish = Adds, Maxs, Mins, Mul, Muls(1/6);
# leakyrelu = Muls(a) into scratch + Max (a <= 1) or Min (a > 1); clip = Maxs + Mins;
# hardsigmoid = Muls, Adds, Maxs, Mins; hardswishab = Muls, Adds, Maxs, Mins (scratch) + Mul;
# prelu = Mins(x, 0) into scratch, Mul by the channel's slopes, Maxs(x, 0), Add (the slopes may
# lie on both sides of 1, so the leakyrelu max/min trick does not apply); silu = Muls(-1) into
# scratch, Exp, Adds(1), Div (x / (1 + e^-x): e^-x overflows to inf for x < -88 and x / inf = -0,
# the limit, so no clamp is needed)
_INSTRS = {"none": 0, "relu": 1, "relu6": 2, "hardswish": 5, "leakyrelu": 2, "clip": 2,
           "hardsigmoid": 4, "hardswishab": 5, "prelu": 4, "silu": 4}


def vector_instructions(act: str) -> int:
    return _INSTRS[parse(act).kind]


def needs_scratch(act: str) -> bool:
    """True when the Ascend C body needs an fp32 scratch of the tile (tmp, tmpLen)."""
    return parse(act).kind in ("hardswish", "leakyrelu", "hardswishab", "prelu", "silu")


def needs_slope(act: str) -> bool:
    """True when the activation reads a per-channel slope operand."""
    return parse(act).kind in PER_CHANNEL


class _InstrTable(Mapping):
    """`VECTOR_INSTRS[act]` for any valid activation string (the cost model's table)."""

    def __getitem__(self, act: str) -> int:
        try:
            return vector_instructions(act)
        except ValueError:
            raise KeyError(act) from None

    def __iter__(self):
        return iter(_INSTRS)

    def __len__(self) -> int:
        return len(_INSTRS)


VECTOR_INSTRS = _InstrTable()


def te_expr(x, act: str, slope=None):
    """The activation on a TE expression (ONNX semantics), in the expression's dtype; `slope`: the
    channel's slope (an expression) for the per-channel activations."""
    from tvm import tirx

    a = parse(act)
    dt = str(x.ty)

    def c(v):
        return tirx.const(v, dt)

    if a.kind == "none":
        return x
    if a.kind == "relu":
        return tirx.max(x, c(0))
    if a.kind == "relu6":
        return tirx.min(tirx.max(x, c(0)), c(6))
    if a.kind == "hardswish":
        return x * tirx.min(tirx.max(x + c(3), c(0)), c(6)) / c(6)
    if a.kind == "silu":   # in fp32 whatever the storage (e^-x of fp16 overflows at x < -11)
        xf = x.astype("float32")
        return (xf / (tirx.const(1, "float32") + tirx.exp(-xf))).astype(dt)
    if a.kind == "leakyrelu":
        return tirx.if_then_else(x >= c(0), x, x * c(a.params[0]))
    if a.kind == "prelu":
        if slope is None:
            raise ValueError("prelu needs its per-channel slope operand")
        return tirx.if_then_else(x >= c(0), x, x * slope.astype(dt))
    if a.kind == "clip":
        return tirx.min(tirx.max(x, c(a.params[0])), c(a.params[1]))
    gate = tirx.min(tirx.max(x * c(a.params[0]) + c(a.params[1]), c(0)), c(1))
    return gate if a.kind == "hardsigmoid" else x * gate


def _f(v: float) -> str:
    text = format(float(v), ".9g")
    return (text if any(ch in text for ch in ".e") else text + ".0") + "f"


def ascendc_body(act: str) -> str:
    """C++ statements over `a` (LocalTensor<float>, n elements) with scratch `tmp` (tmpLen
    elements; chunked when the activation needs it): exactly the VECTOR_INSTRS instructions."""
    a = parse(act)
    if a.kind in PER_CHANNEL:  # fusion/ascendc refuses these blocks before emitting (ascendc_supported)
        raise ValueError(f"activation {act!r} has no Ascend C body (it reads a per-channel operand)")
    if a.kind == "none":
        return "(void)a;\n        (void)n;"
    if a.kind == "relu":
        return "Relu(a, a, n);"
    if a.kind == "relu6":
        return "Maxs(a, a, 0.0f, n);\n        Mins(a, a, 6.0f, n);"
    if a.kind == "clip":
        return f"Maxs(a, a, {_f(a.params[0])}, n);\n        Mins(a, a, {_f(a.params[1])}, n);"
    if a.kind == "hardsigmoid":
        return (f"// min(max(alpha * x + beta, 0), 1)\n"
                f"        Muls(a, a, {_f(a.params[0])}, n);\n        Adds(a, a, {_f(a.params[1])}, n);\n"
                f"        Maxs(a, a, 0.0f, n);\n        Mins(a, a, 1.0f, n);")
    if a.kind == "hardswish":
        steps = ["Adds(tmp, v, 3.0f, m);", "Maxs(tmp, tmp, 0.0f, m);", "Mins(tmp, tmp, 6.0f, m);",
                 "Mul(v, v, tmp, m);", "Muls(v, v, 1.0f / 6.0f, m);"]
        what = "x * min(max(x + 3, 0), 6) / 6"
    elif a.kind == "silu":
        steps = ["Muls(tmp, v, -1.0f, m);", "Exp(tmp, tmp, m);", "Adds(tmp, tmp, 1.0f, m);", "Div(v, v, tmp, m);"]
        what = "x * sigmoid(x) = x / (1 + exp(-x))"
    elif a.kind == "leakyrelu":
        slope = a.params[0]
        steps = [f"Muls(tmp, v, {_f(slope)}, m);",
                 f"AscendC::{'Max' if slope <= 1 else 'Min'}(v, v, tmp, m);"]   # the class has int Max/Min
        what = f"x >= 0 ? x : {slope:g} x  ({'max' if slope <= 1 else 'min'}(x, {slope:g} x))"
    else:  # hardswishab
        steps = [f"Muls(tmp, v, {_f(a.params[0])}, m);", f"Adds(tmp, tmp, {_f(a.params[1])}, m);",
                 "Maxs(tmp, tmp, 0.0f, m);", "Mins(tmp, tmp, 1.0f, m);", "Mul(v, v, tmp, m);"]
        what = "x * min(max(alpha * x + beta, 0), 1)"
    body = "\n".join(f"            {s}" for s in steps)
    return (f"// {what}\n"
            "        for (int32_t off = 0; off < n; off += tmpLen) {\n"
            "            const int32_t m = n - off < tmpLen ? n - off : tmpLen;\n"
            "            LocalTensor<float> v = a[off];\n"
            f"{body}\n"
            "        }")


def numpy_ref(x, act: str, slope=None):
    """The activation on a NumPy array (float64 references of tests and the tuner's check);
    `slope`: per-channel slopes broadcastable to x (prelu)."""
    a = parse(act)
    if a.kind == "none":
        return x
    if a.kind == "prelu":
        return np.where(x >= 0, x, x * slope)
    if a.kind == "relu":
        return np.maximum(x, 0)
    if a.kind == "relu6":
        return np.minimum(np.maximum(x, 0), 6)
    if a.kind == "hardswish":
        return x * np.minimum(np.maximum(x + 3, 0), 6) / 6
    if a.kind == "silu":   # sigmoid from e^-|x| (never overflows, exact in both tails)
        e = np.exp(-np.abs(x))
        return x * np.where(x >= 0, 1, e) / (1 + e)
    if a.kind == "leakyrelu":
        return np.where(x >= 0, x, x * a.params[0])
    if a.kind == "clip":
        return np.minimum(np.maximum(x, a.params[0]), a.params[1])
    gate = np.minimum(np.maximum(x * a.params[0] + a.params[1], 0), 1)
    return gate if a.kind == "hardsigmoid" else x * gate
