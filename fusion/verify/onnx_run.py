"""ONNX Runtime on a fused ONNX model (fusion/driver/onnx_export.py), on this CPU: each `ai.megafuse` node
runs the LLVM kernels rebuilt from the node's own attributes and inputs.

The onnxruntime wheel ships no C++ headers, so the nodes run as Python custom ops of
onnxruntime-extensions (the `deploy` extra), which calls the compiled TVM kernels. That bridge
has three limits the session adapts to in memory, leaving the file as written: it serves one
domain of its own (`ai.onnx.contrib`), so the nodes move there; it registers an op type once per
process, so each gets a serial suffix; it has no float16, so a float16 node reads its inputs
through exact Casts to float32 and writes through a Cast back (fp16 -> fp32 -> fp16 is exact).
The nodes' attributes, inputs, weights and places in the graph are the file's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import onnx
import tvm
from onnx import TensorProto, helper

from fusion.codegen.ascendc.emit_chain import WEIGHTS
from fusion.codegen.ascendc.node_spec import DOMAIN, NO_CLIP, NO_RESIDUAL
from fusion.core.errors import MegafuseError
from fusion.core.ir import C0
from fusion.frontend.onnx_import import read_model
from fusion.core.soc import get_soc
from schedules.activations import needs_slope
from schedules.build import build_fused
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig

BRIDGE_DOMAIN = "ai.onnx.contrib"   # onnxruntime-extensions' Python ops live here
_SERIAL = itertools.count(1)


@dataclass(frozen=True)
class Member:
    workload: DwSepWorkload
    tile: TileConfig
    x_max: float | None
    residual_from: int | None
    weight_offsets: tuple[int, ...]


def members_of(node: onnx.NodeProto) -> list[Member]:
    """The node's members from its attributes (fusion/codegen/ascendc/node_spec.py)."""
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    dec = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    try:
        n = len(a["members"])
        out = []
        for i in range(n):
            wl = DwSepWorkload(int(a["batch"]), a["cin"][i], a["cout"][i], a["height"][i], a["width"][i],
                               tuple(a["kernel_shape"][2 * i:2 * i + 2]), tuple(a["strides"][2 * i:2 * i + 2]),
                               tuple(a["pads"][4 * i:4 * i + 4]), dec(a["act1"][i]), dec(a["act2"][i]),
                               bool(a["residual"][i]), dec(a["dtype"]))
            th, tw, cob, cib = a["tile"][4 * i:4 * i + 4]
            tile = TileConfig(th, tw, cob, cib, bool(a["double_buffer"][i]), dec(a["pw_engine"][i]),
                              a["tile_cores"][i])
            x_max = a["x_max"][i] if "x_max" in a else NO_CLIP
            res = a["residual_from"][i] if "residual_from" in a else NO_RESIDUAL
            offs = tuple(a["weight_offsets"][4 * i:4 * i + 4]) if "weight_offsets" in a else ()
            out.append(Member(wl, tile, None if x_max == NO_CLIP else float(x_max),
                              None if res == NO_RESIDUAL else int(res), offs))
        return out
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise MegafuseError(f"node {node.name!r}: attributes do not describe its members ({e})") from None


def _weights_of(m: Member, blob: np.ndarray) -> list[np.ndarray]:
    """w_dw, b_dw, w_pw, b_pw of a chain member, from the packed uint8 weights."""
    wl = m.workload
    c1, co1, (kh, kw) = wl.c1, wl.co1, wl.kernel
    specs = {"w_dw": ((c1, kh, kw, C0), wl.dtype), "b_dw": ((c1, C0), "float32"),
             "w_pw": ((co1, c1, C0, C0), wl.dtype), "b_pw": ((co1, C0), "float32")}
    out = []
    for w, off in zip(WEIGHTS, m.weight_offsets):
        shape, dt = specs[w]
        nbytes = int(np.prod(shape)) * np.dtype(dt).itemsize
        out.append(blob[off:off + nbytes].view(dt).reshape(shape))
    return out


class NodeKernels:
    """One fused node: its members' LLVM kernels run in order (a block: one member)."""

    def __init__(self, node: onnx.NodeProto):
        self.node = node
        self.members = members_of(node)
        soc = get_soc(next(helper.get_attribute_value(a) for a in node.attribute if a.name == "soc").decode())
        self.kernels = [build_fused(make_plan(m.workload, m.tile, soc))["main"] for m in self.members]
        self.chain = any(m.weight_offsets for m in self.members)

    def __call__(self, *inputs: np.ndarray) -> np.ndarray:
        dev = tvm.cpu(0)
        tensor = lambda a, dt: tvm.runtime.tensor(np.ascontiguousarray(a, dtype=dt), dev)  # noqa: E731
        x0 = inputs[0]
        outs: list[np.ndarray] = []
        cur = x0
        for k, (m, fn) in enumerate(zip(self.members, self.kernels)):
            wl = m.workload
            if self.chain:
                weights = _weights_of(m, np.asarray(inputs[1], np.uint8))
                res = None if m.residual_from is None else (x0 if m.residual_from == -1 else outs[m.residual_from])
            else:
                n_slopes = sum(needs_slope(a) for a in (wl.act1, wl.act2))
                weights = list(inputs[1:5 + n_slopes])
                res = inputs[5 + n_slopes] if wl.residual else None
            x = cur if m.x_max is None else np.minimum(cur, m.x_max)   # a producer's deferred clip
            dts = [wl.dtype, "float32", wl.dtype, "float32"] + ["float32"] * (len(weights) - 4)
            args = [tensor(x, wl.dtype)] + [tensor(w, dt) for w, dt in zip(weights, dts)]
            if res is not None:
                args.append(tensor(res, wl.dtype))
            y = tvm.runtime.empty((wl.batch, wl.co1, wl.out_height, wl.out_width, C0), wl.dtype, dev)
            fn(*args, y)
            cur = y.numpy()
            outs.append(cur)
        return cur


def session(model):
    """An onnxruntime InferenceSession of the fused model (path, bytes or ModelProto)."""
    try:
        import onnxruntime as ort
        from onnxruntime_extensions import PyCustomOpDef, get_library_path, onnx_op
    except ImportError:
        raise MegafuseError("running a fused ONNX model needs onnxruntime-extensions: install the deploy extra "
                            "(pip install -e '.[deploy]'; bin/setup does)") from None
    m = read_model(model)
    g = m.graph
    types = _tensor_types(m)
    nodes = []
    cast: dict[str, str] = {}
    for node in g.node:
        if node.domain != DOMAIN:
            nodes.append(node)
            continue
        run = NodeKernels(node)
        op = f"{node.op_type}_r{next(_SERIAL)}"
        ins = [PyCustomOpDef.dt_uint8 if types.get(t) == TensorProto.UINT8 else PyCustomOpDef.dt_float
               for t in node.input]
        onnx_op(op_type=op, inputs=ins, outputs=[PyCustomOpDef.dt_float])(
            lambda *xs, run=run: run(*xs).astype(np.float32))
        bridged = []
        for t in node.input:   # float16 -> float32 (exact) for the bridge, once per tensor
            if types.get(t) == TensorProto.FLOAT16:
                if t not in cast:
                    cast[t] = f"{t}__bridge_f32"
                    nodes.append(helper.make_node("Cast", [t], [cast[t]], to=TensorProto.FLOAT))
                t = cast[t]
            bridged.append(t)
        y = node.output[0]
        f16 = types.get(y) == TensorProto.FLOAT16
        if f16:   # the float32 result also serves the next fused node's input
            cast[y] = f"{y}__bridge_f32"
        nodes.append(helper.make_node(op, bridged, [cast[y] if f16 else y], name=node.name, domain=BRIDGE_DOMAIN))
        if f16:
            nodes.append(helper.make_node("Cast", [cast[y]], [y], to=TensorProto.FLOAT16))
    del g.node[:]
    g.node.extend(nodes)
    for o in m.opset_import:
        if o.domain == DOMAIN:
            o.domain = BRIDGE_DOMAIN
    so = ort.SessionOptions()
    so.register_custom_ops_library(get_library_path())
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _tensor_types(m: onnx.ModelProto) -> dict[str, int]:
    g = m.graph
    out = {t.name: t.data_type for t in g.initializer}
    for v in list(g.input) + list(g.output) + list(g.value_info):
        out.setdefault(v.name, v.type.tensor_type.elem_type)
    return out


def run(model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    s = session(model)
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


__all__ = ["BRIDGE_DOMAIN", "Member", "NodeKernels", "members_of", "run", "session"]
