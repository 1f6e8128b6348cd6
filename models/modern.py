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
