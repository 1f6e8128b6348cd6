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
  gelu                x * (1 + erf(x / sqrt 2)) / 2    (nn.GELU: Div, Erf, Add, Mul, Mul; opset-20 Gelu);
                                                        erf is the rational approximation of
                                                        Eigen / TVM's fast_erf (ERF_NUM / ERF_DEN)
  gelutanh            x * sigmoid(2k (x + 0.044715 x^3)), k = sqrt(2 / pi)
                                                       (GELU(approximate='tanh'), the tanh spelling)
  mish                x * tanh(softplus(x))            (nn.Mish: Softplus, Tanh, Mul)
Every consumer derives from this module: the TE compute (`te_expr`), the cost model's vector
instruction count (`VECTOR_INSTRS`), the Ascend C body (`ascendc_body`) and the plan's scratch
buffer (`needs_scratch`), so the four cannot disagree on what an activation is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

PLAIN = ("none", "relu", "relu6", "hardswish", "prelu", "silu", "gelu", "gelutanh", "mish")
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
# the limit, so no clamp is needed); gelutanh = Mul, Muls, Adds, Mul, Muls, Exp, Adds, Div (silu of
# 2k (x + 0.044715 x^3)); mish = Mins, Exp, Adds, Mul, Adds, Div, Mul (tanh(ln(1 + u)) = n / (n + 2),
# n = u (u + 2), u = e^min(x, 20): no cancellation in either tail, and n / (n + 2) is 1 in fp32 from
# x = 20 on); gelu: see gelu_steps (42)
_INSTRS = {"none": 0, "relu": 1, "relu6": 2, "hardswish": 5, "leakyrelu": 2, "clip": 2,
           "hardsigmoid": 4, "hardswishab": 5, "prelu": 4, "silu": 4, "gelutanh": 8, "mish": 7}

# erf(z) ~ z P(z^2) / Q(z^2) on z clamped to [-4, 4] (erf(4) = 1 - 1.5e-8 is 1 in fp32): the
# coefficients of Eigen's generic_fast_erf_float, which TVM's topi fast_erf also uses; highest first
ERF_NUM = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
           -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)   # z^13 .. z^1
ERF_DEN = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
           -1.42647390514189e-02)                                                 # z^8 .. z^0
ERF_CLAMP = 4.0
GELU_TANH_K = 0.7978845608028654   # sqrt(2 / pi)
# the kinds whose body needs the scratch split in parts (each 32-B aligned: chunk = tmpLen / parts)
SCRATCH_PARTS = {"gelu": 2, "mish": 2}


def _erf_sum_coeffs() -> tuple[float, ...]:
    """Q(z^2) + z P(z^2) as one polynomial in z, highest degree (13) first: 1 + erf = (Q + zP) / Q."""
    c = [0.0] * 14
    for i, v in enumerate(ERF_NUM):
        c[13 - 2 * i] = v
    for i, v in enumerate(ERF_DEN):
        c[8 - 2 * i] = v
    return tuple(reversed(c))


def gelu_steps() -> list[tuple]:
    """GELU as two-operand fp32 steps over v (= x, the result), A and B (scratch parts): the one
    sequence the Ascend C body, the TE compute and the instruction count all read.
      v = max(x, -4 sqrt 2) (below, gelu is under 4e-8 in size: the clamp keeps 1 + erf's residue at
      z = -4 from being multiplied by a large |x|);  A = min(v / sqrt 2, 4) = z;  B = Q(z^2) by Horner (z twice per step: A holds only z);
      v = x / Q;  B = Q + z P(z^2) (one polynomial in z, zero terms skipped);  v = v * B / 2
    so gelu = x (1 + erf) / 2 with two scratch parts (z, and the polynomial being summed)."""
    s: list[tuple] = [("Maxs", "v", "v", -ERF_CLAMP * math.sqrt(2)), ("Muls", "A", "v", 0.7071067811865476),
                      ("Mins", "A", "A", ERF_CLAMP), ("Mul", "B", "A", "A"), ("Muls", "B", "B", ERF_DEN[0]),
                      ("Adds", "B", "B", ERF_DEN[1])]
    for c in ERF_DEN[2:]:
        s += [("Mul", "B", "B", "A"), ("Mul", "B", "B", "A"), ("Adds", "B", "B", c)]
    s.append(("Div", "v", "v", "B"))
    coef = _erf_sum_coeffs()
    s.append(("Muls", "B", "A", coef[0]))     # c13 z: the first Horner product
    for i, c in enumerate(coef[1:]):
        if i:
            s.append(("Mul", "B", "B", "A"))
        if c:
            s.append(("Adds", "B", "B", c))
    s += [("Mul", "v", "v", "B"), ("Muls", "v", "v", 0.5)]
    return s


_INSTRS["gelu"] = len(gelu_steps())


def vector_instructions(act: str) -> int:
    return _INSTRS[parse(act).kind]


def needs_scratch(act: str) -> bool:
    """True when the Ascend C body needs an fp32 scratch of the tile (tmp, tmpLen)."""
    return parse(act).kind in ("hardswish", "leakyrelu", "hardswishab", "prelu", "silu", "gelu", "gelutanh",
                               "mish")


def scratch_chunk(act: str, tmp_len: int) -> int:
    """Elements one pass of the body covers with a scratch of `tmp_len` fp32 elements: all of it, or
    for the kinds of SCRATCH_PARTS a part, whole 32-B blocks so the second part stays aligned."""
    parts = SCRATCH_PARTS.get(parse(act).kind, 1)
    chunk = tmp_len if parts == 1 else tmp_len // parts // 8 * 8
    if chunk <= 0:
        raise ValueError(f"activation {act!r} needs {parts} x 8 fp32 scratch elements, the buffer has {tmp_len}")
    return chunk


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
    if a.kind in ("gelu", "gelutanh", "mish"):   # fp32, the Ascend C body's steps (same order)
        return _te_steps(x.astype("float32"), a.kind).astype(dt)
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


def kind_steps(kind: str) -> list[tuple]:
    """The two-operand steps of gelu / gelutanh / mish over v, A, B (see gelu_steps)."""
    if kind == "gelu":
        return gelu_steps()
    if kind == "gelutanh":
        return [("Mul", "A", "v", "v"), ("Muls", "A", "A", 0.044715), ("Adds", "A", "A", 1.0),
                ("Mul", "A", "A", "v"), ("Muls", "A", "A", -2 * GELU_TANH_K), ("Exp", "A", "A"),
                ("Adds", "A", "A", 1.0), ("Div", "v", "v", "A")]
    if kind == "mish":
        return [("Mins", "A", "v", 20.0), ("Exp", "A", "A"), ("Adds", "B", "A", 2.0), ("Mul", "A", "A", "B"),
                ("Adds", "B", "A", 2.0), ("Div", "A", "A", "B"), ("Mul", "v", "v", "A")]
    raise ValueError(kind)


_BINARY = {"Mul": lambda a, b: a * b, "Div": lambda a, b: a / b}
_SCALAR = {"Muls": lambda a, s: a * s, "Adds": lambda a, s: a + s}


def run_steps(kind: str, v, const, exp, vmax, vmin):
    """Evaluate kind_steps on any value type (TE expressions, fp32 NumPy arrays): `const` makes a
    scalar, exp / vmax / vmin are the type's exponential, max and min."""
    env = {"v": v}
    for op, dst, src, *rest in kind_steps(kind):
        a = env[src]
        if op in _BINARY:
            env[dst] = _BINARY[op](a, env[rest[0]])
        elif op in _SCALAR:
            env[dst] = _SCALAR[op](a, const(rest[0]))
        elif op == "Maxs":
            env[dst] = vmax(a, const(rest[0]))
        elif op == "Mins":
            env[dst] = vmin(a, const(rest[0]))
        else:
            env[dst] = exp(a)
    return env["v"]


def _te_steps(xf, kind: str):
    from tvm import tirx

    return run_steps(kind, xf, lambda v: tirx.const(v, "float32"), tirx.exp, tirx.max, tirx.min)


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
    elif a.kind in ("gelu", "gelutanh", "mish"):
        return _parts_body(a.kind)
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


_WHAT = {"gelu": "x * (1 + erf(x / sqrt 2)) / 2, erf rational on z in [-4, 4]",
         "gelutanh": "x / (1 + exp(-2k (x + 0.044715 x^3))) = x * sigmoid(2k (...)), k = sqrt(2 / pi)",
         "mish": "x * n / (n + 2), n = u (u + 2), u = exp(min(x, 20)): x * tanh(softplus(x))"}


def _parts_body(kind: str) -> str:
    """The body of a kind_steps activation: per chunk of `m` elements, scratch A = tmp[0..m) and B =
    tmp[m..2m) (32-B aligned chunks: schedules/activations.scratch_chunk)."""
    parts = SCRATCH_PARTS.get(kind, 1)
    names = {"v": "v", "A": "ta", "B": "tb"}
    lines = []
    for op, dst, src, *rest in kind_steps(kind):
        args = [names[dst], names[src]]
        if op in _BINARY:
            args.append(names[rest[0]])
        elif rest:
            args.append(_f(rest[0]))
        lines.append(f"{'AscendC::' if op in ('Max', 'Min') else ''}{op}({', '.join(args)}, m);")
    body = "\n".join(f"            {s}" for s in lines)
    chunk = "tmpLen" if parts == 1 else f"tmpLen / {parts} / 8 * 8"
    second = "            LocalTensor<float> tb = tmp[chunk];\n" if parts > 1 else ""
    return (f"// {_WHAT[kind]}\n"
            f"        const int32_t chunk = {chunk};\n"
            "        for (int32_t off = 0; off < n; off += chunk) {\n"
            "            const int32_t m = n - off < chunk ? n - off : chunk;\n"
            "            LocalTensor<float> v = a[off];\n"
            "            LocalTensor<float> ta = tmp;\n"
            f"{second}{body}\n"
            "        }")


def _erf64(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


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
    if a.kind == "gelu":   # the exact function (the kernels' erf is within 3e-7 of it)
        return x * (1 + _erf64(np.asarray(x, np.float64) / math.sqrt(2))) / 2
    if a.kind == "gelutanh":
        xd = np.asarray(x, np.float64)
        return xd * (1 + np.tanh(GELU_TANH_K * (xd + 0.044715 * xd ** 3))) / 2
    if a.kind == "mish":
        xd = np.asarray(x, np.float64)
        return xd * np.tanh(np.logaddexp(0, xd))
    if a.kind == "leakyrelu":
        return np.where(x >= 0, x, x * a.params[0])
    if a.kind == "clip":
        return np.minimum(np.maximum(x, a.params[0]), a.params[1])
    gate = np.minimum(np.maximum(x * a.params[0] + a.params[1], 0), 1)
    return gate if a.kind == "hardsigmoid" else x * gate
