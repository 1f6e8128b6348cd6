"""Blocks of today's efficient networks as torch.onnx.export writes them (opset 17, odd shapes in
the tests): a grouped pointwise conv after a DW (EfficientViT's LiteMLA aggregation; also spelled
Split → Conv 1×1 ×g → Concat) and ConvNeXt's block (DW 7×7 → channel LayerNorm → PW → GELU → PW →
layer scale → + x, with conv_mlp as in convnext_atto: the LN between two Transposes, or written out
as ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div / Mul / Add)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from .common import GraphBuilder

LN_FORMS = ("op", "spelled")


def grouped_pw_block(cin: int = 32, cout: int = 48, h: int = 9, w: int = 7, groups: int = 2, form: str = "conv",
                     act1: str = "relu", act2: str = "none", dtype: str = "float32", seed: int = 0) -> onnx.ModelProto:
    """DW 3×3 → act1 → PW 1×1 with `groups` groups (form "conv": one Conv group=g; "split": Split →
    g Convs → Concat) → act2."""
    if cin % groups or cout % groups:
        raise ValueError(f"groups {groups} must divide cin {cin} and cout {cout}")
    g = GraphBuilder(seed=seed, opset=17, fold_bn=True, dtype=dtype)
    t = g.activation("dw_act", g.conv_bn("dw", "x", cin, cin, 3, group=cin), act1)
    if form == "conv":
        t = g.conv_bn("pw", t, cin, cout, group=groups, gain=1.0)
    elif form == "split":
        parts = [f"split_{i}" for i in range(groups)]
        g.initializers.append(numpy_helper.from_array(np.array([cin // groups] * groups, np.int64),
                                                      g._claim("split_sizes")))
        g.nodes.append(onnx.helper.make_node("Split", [t, "split_sizes"], parts, name="split", axis=1))
        outs = [g.conv_bn(f"pw{i}", p, cin // groups, cout // groups, gain=1.0) for i, p in enumerate(parts)]
        t = g.node("Concat", "concat", outs, axis=1)
    else:
        raise ValueError(f"form must be conv or split, got {form!r}")
    t = g.activation("pw_act", t, act2)
    return g.model("grouped_pw_block", [1, cin, h, w], t, [1, cout, h, w])


def convnext_block(dim: int = 40, h: int = 9, w: int = 7, mlp_ratio: int = 4, ln_form: str = "op",
                   act: str = "gelu", dtype: str = "float32", seed: int = 0, eps: float = 1e-6) -> onnx.ModelProto:
    """timm's ConvNeXtBlock with conv_mlp (convnext_atto): x → DW 7×7 (+ bias) → channel LayerNorm
    → Conv 1×1 (dim → mlp_ratio·dim) → GELU → Conv 1×1 (→ dim) → Mul(layer scale) → + x.
    ln_form "op": Transpose → LayerNormalization(axis -1) → Transpose (opset 17); "spelled":
    ConvNeXt's channels_first LayerNorm written out on axis 1 (opset 13)."""
    if ln_form not in LN_FORMS:
        raise ValueError(f"ln_form must be one of {LN_FORMS}, got {ln_form!r}")
    g = GraphBuilder(seed=seed, opset=17 if ln_form == "op" else 13, fold_bn=True, dtype=dtype)
    rng = g.rng
    t = g.conv("dw", "x", g.he_weight(dim, 1, 7, 1.0), rng.normal(0, 0.1, dim), group=dim)
    gamma, beta = rng.uniform(0.5, 1.5, dim), rng.normal(0, 0.1, dim)
    if ln_form == "op":
        t = g.node("Transpose", "norm_to_nhwc", [t], perm=[0, 2, 3, 1])
        t = g.node("LayerNormalization", "norm", [t, g.initializer("norm_g", gamma), g.initializer("norm_b", beta)],
                   axis=-1, epsilon=eps)
        t = g.node("Transpose", "norm_to_nchw", [t], perm=[0, 3, 1, 2])
    else:
        u = g.node("ReduceMean", "norm_mean", [t], axes=[1], keepdims=1)
        d = g.node("Sub", "norm_sub", [t, u])
        s = g.node("ReduceMean", "norm_var", [g.node("Pow", "norm_pow", [d, g.const("norm_two", 2.0)])],
                   axes=[1], keepdims=1)
        s = g.node("Sqrt", "norm_sqrt", [g.node("Add", "norm_eps", [s, g.const("norm_epsilon", eps)])])
        t = g.node("Div", "norm_div", [d, s])
        t = g.node("Mul", "norm_scale", [t, g.initializer("norm_g", gamma.reshape(dim, 1, 1))])
        t = g.node("Add", "norm", [t, g.initializer("norm_b", beta.reshape(dim, 1, 1))])
    hidden = mlp_ratio * dim
    t = g.conv("fc1", t, g.he_weight(hidden, dim, 1, 1.0), rng.normal(0, 0.1, hidden))
    t = g.activation("act", t, act)
    t = g.conv("fc2", t, g.he_weight(dim, hidden, 1, 1.0), rng.normal(0, 0.1, dim))
    t = g.node("Mul", "layer_scale", [t, g.initializer("ls_gamma", rng.uniform(0.1, 1.0, (dim, 1, 1)))])
    t = g.node("Add", "residual", [t, "x"])
    return g.model("convnext_block", [1, dim, h, w], t, [1, dim, h, w])
