"""The ONNX Runtime reference of `check`: always float32, whatever precision the model stores.

A model stored in float16 is widened to float32 (initializers, Constant nodes, declared
types, Cast targets) before ONNX Runtime runs it, so
- `check --dtype float32` of an fp16-stored model compares fp32 against fp32 (the same fp16
  weight values, widened exactly), not against ORT's fp16 arithmetic;
- an fp16 run is compared with the exact-as-fp32 answer, and its tolerance follows how far fp16
  storage alone moves this model's output (`fp16_storage_shift`), not a fixed number that deep
  chains with large weights exceed even unfused.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display


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


# A QDQ model's reference is ORT's int8 kernels: on x86 ORT fuses QDQ convs with int8 activations
# into QLinearConv only with this option (ARM's default); without it it runs them as float convs
# between Q/DQ, whose summation order no integer kernel can reproduce (uint8 models are fused either way)
QDQ_CONFIG = {"session.qdqisint8allowed": "1"}


def is_qdq(model: onnx.ModelProto) -> bool:
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in model.graph.node)
def ort_session(model: onnx.ModelProto, so):
    """An ORT session on a self-contained model: every place megafuse hands ONNX Runtime a model
    goes through here. From bytes ORT resolves external data against the current directory, so a
    model whose external data is not read in (fusion.frontend.onnx_import.read_model does, from the
    model's own folder) is refused."""
    import onnxruntime as ort

    ext = [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if ext:
        raise MegafuseError(f"ONNX Runtime would read initializer '{display(ext[0])}' from the current "
                            f"directory: read the model with fusion.frontend.onnx_import.read_model (external data "
                            f"from the model's own folder)")
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        ort_session(model, None)   # raises the one-line refusal
    try:
        # errors only: ORT's coloured warnings would break the one-line contract on stderr; its
        # errors arrive as the exception below
        so = ort.SessionOptions()
        so.log_severity_level = 3
        if is_qdq(model):
            for k, v in QDQ_CONFIG.items():
                so.add_session_config_entry(k, v)
        sess = ort_session(model, so)
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

        raise MegafuseError(f"the ONNX Runtime reference cannot run this model: {display(text, 300)}") from None


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """ORT's outputs of the float32-widened model."""
    return run_ort(widen_to_fp32(model), {k: np.asarray(v, np.float32) for k, v in feeds.items()})


def fp16_storage_shift(model: onnx.ModelProto, feeds: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> float:
    """How far float16 storage alone moves this model's output on these inputs, relative to the
    output's range: ORT in float32 with the weights and every node's float output rounded to
    float16 (Cast to fp16 and back), against the plain float32 reference. Our fp16 kernels round
    at most as often (fp16 storage, fp32 accumulation; a fused block keeps its intermediate in
    fp32 or rounds it once), so their error is of this size whatever fusion does."""
    m = _rounded_fp16_storage(widen_to_fp32(model))
    try:
        got = run_ort(m, {k: np.asarray(v, np.float32) for k, v in feeds.items()})
    except MegafuseError:
        return 0.0
    worst = 0.0
    for name, r in ref.items():
        scale = float(np.abs(r).max()) if r.size else 0.0
        g = got.get(name)
        if g is None or scale <= 0 or g.shape != r.shape:
            continue
        if not np.isfinite(g).all():
            return math.inf     # fp16 overflows: no tolerance makes that right
        worst = max(worst, float(np.abs(np.asarray(g, np.float64) - r).max()) / scale)
    return worst


def _rounded_fp16_storage(m: onnx.ModelProto) -> onnx.ModelProto:
    from onnx import helper, shape_inference

    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16).astype(np.float32)
            g.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
    try:
        inferred = shape_inference.infer_shapes(m).graph
        floats = {vi.name for vi in list(inferred.value_info) + list(inferred.output)
                  if vi.type.tensor_type.elem_type == TensorProto.FLOAT}
    except Exception:  # noqa: BLE001 - no inference: round only the declared outputs
        floats = {o.name for o in g.output if o.type.tensor_type.elem_type == TensorProto.FLOAT}
    nodes = []
    for n in g.node:
        outs = list(n.output)
        casts = []
        for j, t in enumerate(outs):
            if t in floats:
                raw, half = f"{t}__fp32_raw", f"{t}__fp16"
                n.output[j] = raw
                casts += [helper.make_node("Cast", [raw], [half], to=TensorProto.FLOAT16),
                          helper.make_node("Cast", [half], [t], to=TensorProto.FLOAT)]
        nodes += [n] + casts
    del g.node[:]
    g.node.extend(nodes)
    return m
