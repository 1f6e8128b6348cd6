"""The ONNX Runtime reference of `check`: always float32, whatever precision the model stores.

A model stored in float16 is widened to float32 (initializers, Constant nodes, declared
types, Cast targets) before ONNX Runtime runs it, so
- `check --dtype float32` of an fp16-stored model compares fp32 against fp32 (the same fp16
  weight values, widened exactly), not against ORT's fp16 arithmetic;
- an fp16 run is compared with the exact-as-fp32 answer, and its tolerance follows the model's
  conditioning (`conditioning`), not a fixed number that deep chains with large weights exceed
  even unfused.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from fusion.errors import MegafuseError


def widen_to_fp32(model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT16:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        tt = vi.type.tensor_type
        if tt.elem_type == TensorProto.FLOAT16:
            tt.elem_type = TensorProto.FLOAT
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT16:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
    return m


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        want = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
        typed = {k: v.astype(onnx.helper.tensor_dtype_to_np_dtype(want[k])) for k, v in feeds.items()}
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(names, typed)))
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 - ORT raises its own exception types (Fail, InvalidGraph...)
        text = " ".join(str(e).split())
        if "bad_alloc" in text or "Failed to allocate" in text:
            raise MegafuseError("the ONNX Runtime reference ran out of memory") from None
        from fusion.sanitize import display

        raise MegafuseError(f"the ONNX Runtime reference cannot run this model: {display(text, 300)}") from None


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """ORT's outputs of the float32-widened model."""
    return run_ort(widen_to_fp32(model), {k: np.asarray(v, np.float32) for k, v in feeds.items()})


def conditioning(model: onnx.ModelProto, feeds: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> float:
    """How much rounding of intermediates can move the output, relative to the output's range:
    max over outputs of max|y_abs| / max|y|, where y_abs is the model run with every weight and
    input replaced by its absolute value (the |W|·|x| of the forward error bound of a dot
    product, |fl(w·x) − w·x| ≤ γ_n |w|·|x|, carried through the chain). 1 for a model without
    cancellation; large when big weights cancel."""
    m = widen_to_fp32(model)
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == TensorProto.FLOAT:
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.abs(numpy_helper.to_array(t)), t.name))
    try:
        mag = run_ort(m, {k: np.abs(np.asarray(v, np.float32)) for k, v in feeds.items()})
    except MegafuseError:
        return 1.0
    worst = 1.0
    for name, r in ref.items():
        scale = float(np.abs(r).max()) if r.size else 0.0
        a = mag.get(name)
        if a is None or scale <= 0 or not np.isfinite(a).all():
            continue
        worst = max(worst, float(np.abs(a).max()) / scale)
    return worst
