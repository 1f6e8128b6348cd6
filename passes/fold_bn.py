"""Fold inference BatchNormalization into the producing Conv's weights and bias.

Pattern: Conv → BatchNormalization. Legality: the Conv output has no other use, the Conv
weights (and bias) are constants. A BN that cannot be folded stays a node (it runs as a
per-channel scale+shift kernel) and a Refusal says why: never skipped silently.
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import Graph, TensorType
from passes.guards import check_folded
from passes.records import Refusal


def fold_bn(g: Graph) -> tuple[Graph, list[Refusal]]:
    refusals: list[Refusal] = []
    nodes = list(g.nodes)
    consts = dict(g.constants)
    types = dict(g.types)
    for bn in g.nodes:
        if bn.op_type != "BatchNormalization":
            continue
        conv = g.producer(bn.inputs[0])
        why = _why_not(g, bn, conv)
        if why:
            refusals.append(Refusal("fold_bn", (bn.name,), why))
            continue
        scale, beta, mean, var = (np.asarray(g.constants[t], np.float64) for t in bn.inputs[1:5])
        k = scale / np.sqrt(var + bn.attr("epsilon", 1e-5))
        w = np.asarray(g.constants[conv.inputs[1]], np.float64)
        b = np.asarray(g.constants[conv.inputs[2]], np.float64) if len(conv.inputs) > 2 and conv.inputs[2] else 0.0
        # stored in float32 even for fp16 weights: a float32 compile of an fp16-stored model then
        # loses nothing to the fold; a float16 compile rounds once, when kernel parameters are made
        dt = np.promote_types(g.constants[conv.inputs[1]].dtype, np.float32)
        w_name, b_name = f"{conv.name}__w_bnfold", f"{conv.name}__b_bnfold"
        with np.errstate(over="ignore", invalid="ignore"):
            consts[w_name] = (w * k.reshape(-1, 1, 1, 1)).astype(dt)
            consts[b_name] = ((b - mean) * k + beta).astype(dt)
        check_folded("fold_bn", bn.name, f"epsilon {bn.attr('epsilon', 1e-5):g}, variance in "
                     f"[{var.min():g}, {var.max():g}]", consts[w_name], consts[b_name])
        types[w_name] = TensorType(consts[w_name].shape, str(dt))
        types[b_name] = TensorType(consts[b_name].shape, str(dt))
        # the conv now produces the BN's output tensor directly
        new_conv = conv.__class__(conv.name, "Conv", (conv.inputs[0], w_name, b_name), bn.outputs, conv.attrs)
        idx = nodes.index(conv)
        nodes[idx] = new_conv
        nodes.remove(bn)
    if len(nodes) == len(g.nodes):
        return g, refusals
    return g.rewrite(nodes, constants=consts, types=types), refusals


def _why_not(g: Graph, bn, conv) -> str | None:
    if conv is None or conv.op_type != "Conv":
        producer = "a graph input" if conv is None else f"{conv.op_type} '{conv.name}'"
        return f"input comes from {producer}, not a Conv: kept as a scale+shift kernel"
    if g.uses(conv.outputs[0]) != 1:
        return f"Conv '{conv.name}' output has {g.uses(conv.outputs[0])} uses: folding would change the others"
    params = [conv.inputs[1]] + ([conv.inputs[2]] if len(conv.inputs) > 2 and conv.inputs[2] else [])
    params += list(bn.inputs[1:5])
    missing = [t for t in params if not g.is_constant(t)]
    if missing:
        return f"non-constant parameters {missing}"
    return None
