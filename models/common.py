"""Shared ONNX graph-building helpers for the reference workloads.

Everything goes through :class:`GraphBuilder`, which owns the node list, the
initializers and the RNG.  Keeping the RNG in one place is what makes the
models deterministic: every builder draws its random tensors in a fixed order,
and it draws the same tensors whether or not BatchNorm is folded, so the folded
and unfolded variants of a model compute the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8
ACTIVATIONS = ("relu", "relu6", "hardswish", "none")
# activations the builders write in exporters' multi-node forms (silu: Sigmoid + Mul)
EXPORTED_ACTS = ("silu", "gelu", "gelutanh", "mish")
HSWISH_FORMS = ("op", "hardsigmoid", "clip")
CLIP_FORMS = ("input", "attr")
AUTO_PADS = ("SAME_UPPER", "SAME_LOWER", "VALID")
BN_EPSILON = 1e-5

_DTYPES = {
    "float32": (np.float32, TensorProto.FLOAT),
    "float16": (np.float16, TensorProto.FLOAT16),
}


@dataclass(frozen=True)
class BNStats:
    """Inference-mode BatchNormalization parameters for one layer."""

    scale: np.ndarray
    bias: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    epsilon: float = BN_EPSILON


def fold_bn(weight: np.ndarray, bias: np.ndarray | None, bn: BNStats) -> tuple[np.ndarray, np.ndarray]:
    """Fold ``bn`` into an OIHW conv ``weight`` and optional ``bias``.

    Done in float64 so the folded model differs from the unfolded one only by
    the final rounding to the model dtype.
    """
    s = bn.scale.astype(np.float64) / np.sqrt(bn.var.astype(np.float64) + bn.epsilon)
    b = np.zeros(weight.shape[0]) if bias is None else bias.astype(np.float64)
    w = weight.astype(np.float64) * s[:, None, None, None]
    return w, (b - bn.mean) * s + bn.bias


def conv_out_size(size: int, kernel: int, stride: int, dilation: int,
                  pad_begin: int, pad_end: int, auto_pad: str | None) -> int:
    """Output extent of one spatial axis, following the ONNX Conv spec."""
    eff_k = dilation * (kernel - 1) + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return -(-size // stride)
    if auto_pad == "VALID":
        return -(-(size - eff_k + 1) // stride)
    return (size + pad_begin + pad_end - eff_k) // stride + 1


def make_divisible(value: float, divisor: int = 8) -> int:
    """Round a width-scaled channel count as the MobileNet reference code does
    (nearest multiple of ``divisor``, never dropping more than 10%)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class GraphBuilder:
    """Accumulates nodes and initializers for one model.

    Tensor names equal the name of the node producing them, so node names in a
    built model read as the dataflow (``b3_dw`` -> ``b3_dw_bn`` -> ...).
    """

    def __init__(self, *, seed: int = 0, opset: int = 13, fold_bn: bool = False,
                 dtype: str = "float32", hswish_form: str = "op",
                 clip_form: str | None = None):
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        if hswish_form not in HSWISH_FORMS:
            raise ValueError(f"hswish_form must be one of {HSWISH_FORMS}, got {hswish_form!r}")
        # Clip lost its min/max attributes in opset 11 (they became inputs), so
        # the form is dictated by the opset; an explicit form must agree.
        auto_form = "input" if opset >= 11 else "attr"
        if clip_form not in (None, auto_form):
            raise ValueError(f"clip_form={clip_form!r} is invalid at opset {opset} (needs {auto_form!r})")
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.fold_bn = fold_bn
        self.np_dtype, self.elem_type = _DTYPES[dtype]
        self.hswish_form = hswish_form
        self.clip_form = auto_form
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()

    # -- low level -----------------------------------------------------------

    def _claim(self, name: str) -> str:
        if name in self._names:
            raise ValueError(f"duplicate name {name!r}")
        self._names.add(name)
        return name

    def initializer(self, name: str, value: np.ndarray) -> str:
        self._claim(name)
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=self.np_dtype), name))
        return name

    def const(self, name: str, value: float) -> str:
        """A scalar initializer shared by every node that needs the same constant."""
        if name not in self._names:
            self.initializer(name, np.array(value))
        return name

    def node(self, op: str, name: str, inputs: list[str], **attrs) -> str:
        self._claim(name)
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    # -- random parameters ---------------------------------------------------

    def he_weight(self, cout: int, cin_per_group: int, kernel: int, gain: float = 2.0) -> np.ndarray:
        """OIHW weight, N(0, gain / fan_in): gain 2 suits a following ReLU-like
        activation, gain 1 a linear layer; either keeps activations O(1)."""
        fan_in = cin_per_group * kernel * kernel
        std = np.sqrt(gain / fan_in)
        return self.rng.normal(0.0, std, size=(cout, cin_per_group, kernel, kernel))

    def bn_stats(self, channels: int) -> BNStats:
        return BNStats(
            scale=self.rng.uniform(0.5, 1.5, channels),
            bias=self.rng.normal(0.0, 0.1, channels),
            mean=self.rng.normal(0.0, 0.1, channels),
            var=self.rng.uniform(0.5, 1.5, channels),
        )

    # -- layers --------------------------------------------------------------

    def conv(self, name: str, x: str, weight: np.ndarray, bias: np.ndarray | None = None, *,
             stride: int = 1, group: int = 1, pads: tuple[int, int, int, int] | None = None,
             auto_pad: str | None = None, dilation: int = 1) -> str:
        """Conv with an OIHW ``weight``.  ``pads`` is ONNX order
        (top, left, bottom, right); ``None`` means symmetric k//2 unless
        ``auto_pad`` is given."""
        kernel = weight.shape[2]
        inputs = [x, self.initializer(f"{name}_W", weight)]
        if bias is not None:
            inputs.append(self.initializer(f"{name}_B", bias))
        attrs = dict(kernel_shape=[kernel, kernel], strides=[stride, stride],
                     dilations=[dilation, dilation], group=group)
        if auto_pad is not None:
            attrs["auto_pad"] = auto_pad
        else:
            attrs["pads"] = list(pads) if pads is not None else [dilation * (kernel // 2)] * 4
        return self.node("Conv", name, inputs, **attrs)

    def batchnorm(self, name: str, x: str, bn: BNStats) -> str:
        inputs = [x] + [self.initializer(f"{name}_{k}", getattr(bn, k))
                        for k in ("scale", "bias", "mean", "var")]
        return self.node("BatchNormalization", name, inputs, epsilon=bn.epsilon)

    def conv_bn(self, name: str, x: str, cin: int, cout: int, kernel: int = 1, *,
                group: int = 1, gain: float = 2.0, **conv_kw) -> str:
        """Conv followed by BN (``{name}_bn``), or one conv with BN folded in.

        The weights and BN statistics are drawn before looking at ``fold_bn``
        so both variants consume the RNG identically.
        """
        weight = self.he_weight(cout, cin // group, kernel, gain)
        bn = self.bn_stats(cout)
        if self.fold_bn:
            return self.conv(name, x, *fold_bn(weight, None, bn), group=group, **conv_kw)
        return self.batchnorm(f"{name}_bn", self.conv(name, x, weight, group=group, **conv_kw), bn)

    def clip(self, name: str, x: str, lo: float, hi: float) -> str:
        if self.clip_form == "attr":
            return self.node("Clip", name, [x], min=lo, max=hi)
        return self.node("Clip", name, [x, self.const(f"clip_{lo:g}", lo), self.const(f"clip_{hi:g}", hi)])

    def activation(self, name: str, x: str, act: str) -> str:
        """Emit ``act`` on ``x``; the last node is called ``name`` and helper
        nodes of multi-node forms are ``{name}_<role>``."""
        if act == "none":
            return x
        if act == "relu":
            return self.node("Relu", name, [x])
        if act == "relu6":
            return self.clip(name, x, 0.0, 6.0)
        if act == "silu":   # nn.SiLU as torch.onnx.export writes it: x * Sigmoid(x)
            gate = self.node("Sigmoid", f"{name}_sig", [x])
            return self.node("Mul", name, [x, gate])
        if act in ("gelu", "gelutanh", "mish"):
            return self._spelled_act(name, x, act)
        if act != "hardswish":
            raise ValueError(f"act must be one of {ACTIVATIONS + EXPORTED_ACTS}, got {act!r}")
        if self.hswish_form == "op":
            if self.opset < 14:
                raise ValueError(f"hswish_form='op' needs opset >= 14 (HardSwish), got opset {self.opset}")
            return self.node("HardSwish", name, [x])
        if self.hswish_form == "hardsigmoid":
            gate = self.node("HardSigmoid", f"{name}_hsig", [x], alpha=1.0 / 6.0, beta=0.5)
            return self.node("Mul", name, [x, gate])
        # "clip": x * Clip(x + 3, 0, 6) / 6
        shifted = self.node("Add", f"{name}_add", [x, self.const("hswish_3", 3.0)])
        gate = self.clip(f"{name}_clip", shifted, 0.0, 6.0)
        prod = self.node("Mul", f"{name}_mul", [x, gate])
        return self.node("Div", name, [prod, self.const("hswish_6", 6.0)])

    def _spelled_act(self, name: str, x: str, act: str) -> str:
        """GELU / Mish as torch.onnx.export writes them (opset < 20 spells GELU out; from opset 20
        nn.GELU is one Gelu node)."""
        if act == "mish":   # nn.Mish: x * Tanh(Softplus(x))
            sp = self.node("Softplus", f"{name}_softplus", [x])
            return self.node("Mul", name, [x, self.node("Tanh", f"{name}_tanh", [sp])])
        if self.opset >= 20:
            return self.node("Gelu", name, [x], approximate="tanh" if act == "gelutanh" else "none")
        half, one = self.const("gelu_half", 0.5), self.const("gelu_one", 1.0)
        if act == "gelu":   # Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5
            z = self.node("Div", f"{name}_div", [x, self.const("gelu_sqrt2", 1.4142135623730951)])
            e1 = self.node("Add", f"{name}_add", [self.node("Erf", f"{name}_erf", [z]), one])
            return self.node("Mul", name, [self.node("Mul", f"{name}_mul", [x, e1]), half])
        # tanh: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
        cube = self.node("Mul", f"{name}_cube", [x, self.node("Mul", f"{name}_sq", [x, x])])
        inner = self.node("Add", f"{name}_inner", [x, self.node("Mul", f"{name}_kappa", [
            self.const("gelu_kappa", 0.044715), cube])])
        t = self.node("Tanh", f"{name}_tanh", [self.node("Mul", f"{name}_beta", [
            self.const("gelu_beta", 0.7978845608028654), inner])])
        e1 = self.node("Add", f"{name}_add", [one, t])
        return self.node("Mul", name, [half, self.node("Mul", f"{name}_mul", [x, e1])])

    def gemm(self, name: str, x: str, cin: int, cout: int) -> str:
        weight = self.rng.normal(0.0, np.sqrt(1.0 / cin), size=(cout, cin))
        bias = self.rng.normal(0.0, 0.1, size=cout)
        return self.node("Gemm", name, [x, self.initializer(f"{name}_W", weight),
                                        self.initializer(f"{name}_B", bias)], transB=1)

    # -- model ---------------------------------------------------------------

    def model(self, graph_name: str, input_shape: list, output: str, output_shape: list) -> onnx.ModelProto:
        """Wrap the graph; input is ``x`` and the tensor ``output`` is renamed ``y``."""
        for node in self.nodes:
            node.output[:] = ["y" if o == output else o for o in node.output]
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info("x", self.elem_type, input_shape)],
            [helper.make_tensor_value_info("y", self.elem_type, output_shape)],
            self.initializers,
        )
        return helper.make_model(graph, producer_name="megafuse.models", ir_version=IR_VERSION,
                                 opset_imports=[helper.make_opsetid("", self.opset)])
