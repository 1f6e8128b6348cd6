"""How far honest float32 rounding moves a model's output: the basis of the fp32 check tolerance.

A float32 dot product of n terms carries a rounding error of about sqrt(n) * u * sum |a_i b_i|
(u = 2^-24; the probabilistic form of Higham's gamma_n bound, errors of random sign adding as a
random walk), so the error depends on the reduction lengths and on the magnitudes of the terms,
not on the output's range: a deep network whose output is a small difference of large terms has
a small range and a large error. `fp32_rounding_shift` measures this on the model itself: ONNX
Runtime with every float node output perturbed by such an error, drawn uniformly in
[-1, 1] x sqrt(n) x u x M, where for a Conv / Gemm / MatMul with constant weights n is its
reduction length and M = the same op on |x| and |W| (the magnitudes summed), and for every other
node n = 1 and M = |y| (one rounding of its result); the result is the perturbed output's
distance from the plain reference, relative to the output's range as the check measures errors.
Our kernels and ORT both commit errors of this size (in other orders of summation), so their
difference is a small multiple of it: fusion.verify.check.fp32_tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fusion.core.errors import MegafuseError
from fusion.verify.reference import run_ort, widen_to_fp32

U32 = 2.0 ** -24          # float32 unit roundoff (round to nearest)


def _shapes_and_floats(m: onnx.ModelProto) -> tuple[dict, set]:
    from onnx import shape_inference
    try:
        g = shape_inference.infer_shapes(m).graph
    except Exception:  # noqa: BLE001 - no inference: the declared outputs only
        g = m.graph
    infos = list(g.value_info) + list(g.output) + list(g.input)
    shapes = {vi.name: tuple(d.dim_value if d.HasField("dim_value") else 0 for d in vi.type.tensor_type.shape.dim)
              for vi in infos}
    floats = {vi.name for vi in infos if vi.type.tensor_type.elem_type == TensorProto.FLOAT}
    return shapes, floats


def _attr(n: onnx.NodeProto, key: str, default):
    for a in n.attribute:
        if a.name == key:
            return helper.get_attribute_value(a)
    return default


def _magnitude(n: onnx.NodeProto, inits: dict, shapes: dict, tag: str, new_inits: list) -> tuple[list, str, int] | None:
    """(nodes computing M, M's name, n) for a Conv / Gemm / MatMul with a constant weight."""
    if n.op_type not in ("Conv", "Gemm", "MatMul") or len(n.input) < 2 or n.input[1] not in inits:
        return None
    w = numpy_helper.to_array(inits[n.input[1]])
    wa = numpy_helper.from_array(np.abs(w).astype(np.float32), f"{tag}_absw")
    new_inits.append(wa)
    xa = helper.make_node("Abs", [n.input[0]], [f"{tag}_absx"])
    mag = f"{tag}_mag"
    if n.op_type == "Conv":
        op = helper.make_node("Conv", [xa.output[0], wa.name], [mag])
        op.attribute.extend(n.attribute)
        terms = int(np.prod(w.shape[1:]))
    elif n.op_type == "Gemm":
        op = helper.make_node("Gemm", [xa.output[0], wa.name], [mag], transA=_attr(n, "transA", 0),
                              transB=_attr(n, "transB", 0), alpha=abs(_attr(n, "alpha", 1.0)))
        terms = w.shape[1] if _attr(n, "transB", 0) else w.shape[0]
    else:
        op = helper.make_node("MatMul", [xa.output[0], wa.name], [mag])
        terms = w.shape[-2] if w.ndim >= 2 else w.shape[0]
    return [xa, op], mag, int(terms)


def _reduced_terms(n: onnx.NodeProto, shapes: dict) -> int:
    """Terms a pooling / reduction sums (1 when unknown or none)."""
    shape = shapes.get(n.input[0]) if n.input else None
    if not shape or 0 in shape:
        return 1
    if n.op_type in ("GlobalAveragePool", "GlobalMaxPool"):
        return int(np.prod(shape[2:]))
    if n.op_type in ("AveragePool", "LpPool"):
        return int(np.prod(_attr(n, "kernel_shape", [1])))
    if n.op_type in ("ReduceMean", "ReduceSum", "ReduceL2"):
        axes = _attr(n, "axes", None)
        axes = range(len(shape)) if axes is None else axes
        return int(np.prod([shape[a] for a in axes]))
    return 1


def perturbed_model(model: onnx.ModelProto, seed: int = 0) -> tuple[onnx.ModelProto, int]:
    """The model (float32) with every float node output perturbed by a modeled fp32 rounding error
    (module doc), and the longest reduction it models."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    shapes, floats = _shapes_and_floats(m)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    new_inits: list = []
    nodes: list = []
    longest = 1
    for i, n in enumerate(list(g.node)):
        outs = [t for t in n.output if t in floats]
        if not outs or n.op_type in ("Constant", "Shape", "RandomUniformLike"):
            nodes.append(n)
            continue
        tag = f"__fp32err{i}"
        mag = _magnitude(n, inits, shapes, tag, new_inits)
        terms = mag[2] if mag else _reduced_terms(n, shapes)
        longest = max(longest, terms)
        raw = f"{tag}_raw"
        out = outs[0]
        for j, t in enumerate(n.output):
            if t == out:
                n.output[j] = raw
        if mag:
            mag[0][0].input[0] = n.input[0]
        nodes += [n] + (mag[0] if mag else [])
        m_name = mag[1] if mag else f"{tag}_abs"
        if not mag:
            nodes.append(helper.make_node("Abs", [raw], [m_name]))
        rho = numpy_helper.from_array(np.array(math.sqrt(terms) * U32, np.float32), f"{tag}_rho")
        new_inits.append(rho)
        nodes += [helper.make_node("RandomUniformLike", [raw], [f"{tag}_r"], low=-1.0, high=1.0, seed=float(seed * 7919 + i)),
                  helper.make_node("Mul", [m_name, rho.name], [f"{tag}_s"]),
                  helper.make_node("Mul", [f"{tag}_s", f"{tag}_r"], [f"{tag}_e"]),
                  helper.make_node("Add", [raw, f"{tag}_e"], [out])]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    return m, longest


def fp32_rounding_shift(model: onnx.ModelProto, feeds: dict, ref: dict, seed: int = 0) -> tuple[float, int] | None:
    """(how far modeled fp32 rounding moves the output, relative to its range; the longest
    reduction modeled), or None where the perturbed model does not run."""
    try:
        m, longest = perturbed_model(widen_to_fp32(model), seed)
        got = run_ort(m, {k: np.asarray(v, np.float32) for k, v in feeds.items()})
    except (MegafuseError, onnx.checker.ValidationError, ValueError):
        return None
    worst = 0.0
    for name, r in ref.items():
        r = np.asarray(r, np.float64)
        scale = float(np.abs(r).max()) if r.size else 0.0
        y = got.get(name)
        if y is None or scale <= 0 or y.shape != r.shape or not np.isfinite(y).all():
            continue
        worst = max(worst, float(np.abs(np.asarray(y, np.float64) - r).max()) / scale)
    return worst, longest
