"""ONNX -> Graph import: every tensor gets a concrete TensorType, every operator a normalized form.

Public API
    load_graph(model, input_shapes=None) -> Graph
        model: path (str / Path), bytes, or onnx.ModelProto.
        input_shapes: {input name: concrete shape} for inputs with symbolic/unknown dims.
    parse_input_shape("x=1x3x224x224") -> ("x", (1, 3, 224, 224))

Normalized node forms (the contract the passes rely on; attribute values are plain Python
ints/floats/tuples, as frozen by `make_node`):

    Conv                inputs (x, w) or (x, w, b)   w, b constants
                        kernel=(kh, kw) strides=(sh, sw) pads=(top, left, bottom, right)
                        dilations=(dh, dw) group=int      (auto_pad resolved into pads)
    BatchNormalization  inputs (x, scale, bias, mean, var) constants; epsilon=float; 1 output
    Relu / Sigmoid / HardSwish / Identity   input (x)
    HardSigmoid         input (x); alpha=float beta=float (ONNX defaults 0.2, 0.5 filled in)
    Clip                input (x); min=float max=float (-inf / inf when absent)
    Mul / Add / Sub / Div   inputs (a, b), numpy broadcasting; Div: b is a constant
    GlobalAveragePool   input (x), 4-D
    ReduceMean          input (x), 4-D; axes=(2, 3) keepdims=0|1
    Flatten             input (x); axis=int in [0, rank]
    Reshape             input (x); shape=tuple (concrete output shape, 0 / -1 resolved)
    Gemm                inputs (a, b) or (a, b, c); alpha=float beta=float transA=int transB=int
    MatMul              inputs (a, b)

Constant nodes become entries of Graph.constants (no node). Parameter inputs folded into
attributes (Clip bounds, ReduceMean axes, Reshape shape) are dropped from the graph.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from fusion import onnx_shapes as S
from fusion import validate
from fusion.errors import (
    MegafuseError,
    ModelLoadError,
    ShapeError,
    UnsupportedModelError,
)
from fusion.const_eval import try_fold
from fusion.ir import Graph, Node, TensorType, make_node
from fusion.onnx_coverage import check_supported, extra_converters

SUPPORTED_DTYPES = ("float32", "float16")

__all__ = ["load_graph", "parse_input_shape", "SUPPORTED_OPS", "SUPPORTED_DTYPES"]


# --------------------------------------------------------------------------------------------
# public helpers
# --------------------------------------------------------------------------------------------
_SHAPE_RE = re.compile(r"^\d+([x,]\d+)*$")


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse a CLI value `NAME=D0xD1x...` (commas also accepted between dims)."""
    if not isinstance(text, str) or "=" not in text:
        raise ShapeError(f"bad --input-shape {text!r}: expected NAME=D0xD1x..., e.g. x=1x3x224x224")
    name, _, dims = text.rpartition("=")
    name, dims = name.strip(), dims.strip().lower().replace(" ", "")
    if not name:
        raise ShapeError(f"bad --input-shape {text!r}: missing input name before '='")
    if not _SHAPE_RE.match(dims):
        raise ShapeError(f"bad --input-shape {text!r}: dims must be positive integers joined by 'x', "
                         f"e.g. {name}=1x3x224x224")
    shape = tuple(int(d) for d in re.split(r"[x,]", dims))
    if any(d <= 0 for d in shape):
        raise ShapeError(f"bad --input-shape {text!r}: every dim must be >= 1")
    return name, shape


def load_graph(model: Any, input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Graph:
    """Import an ONNX model as a Graph with concrete shapes/dtypes on every tensor."""
    label = "?"
    try:
        proto, base_dir, label = _load_proto(model)
        g = _Importer(proto, base_dir, label, input_shapes).run()
        validate.check_graph(g, label)
        return g
    except MegafuseError as e:
        msg = str(e)
        if all(c.isprintable() for c in msg):
            raise
        # tensor/node names may hold newlines or control characters: keep the message one line
        raise type(e)("".join(c if c.isprintable() else repr(c)[1:-1] for c in msg)) from None
    except Exception as e:  # malformed protobuf content (bad UTF-8 names, mistyped attributes...)
        raise ModelLoadError(f"cannot load ONNX model '{label}': malformed model "
                             f"({type(e).__name__}: {_one_line(e)})") from None


def read_model(model: Any):
    """The onnx.ModelProto of a path/bytes/proto, with the same one-line errors as load_graph."""
    try:
        return _load_proto(model)[0]
    except MegafuseError:
        raise
    except Exception as e:  # noqa: BLE001 - any protobuf failure is a load error
        raise ModelLoadError(f"cannot load ONNX model: malformed model ({type(e).__name__}: {_one_line(e)})") from None


# --------------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------------
def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _load_proto(model: Any):
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        proto, base_dir, label = model, os.getcwd(), "<ModelProto>"
    else:
        if isinstance(model, (str, os.PathLike)):
            path = Path(model)
            label = str(path)
            data = validate.read_model_file(path, label)   # regular file, size cap, never blocks
            base_dir = str(path.resolve().parent)
        elif isinstance(model, (bytes, bytearray, memoryview)):
            data, label, base_dir = bytes(model), "<bytes>", os.getcwd()
        else:
            raise ModelLoadError(f"cannot load ONNX model: expected a path, bytes or onnx.ModelProto, "
                                 f"got {type(model).__name__}")
        if not data:
            raise ModelLoadError(f"cannot load ONNX model '{label}': empty file")
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as e:
            raise ModelLoadError(f"cannot load ONNX model '{label}': not a valid ONNX protobuf "
                                 f"(truncated or corrupt file: {_one_line(e)})") from None
    if proto.ir_version <= 0 or not proto.HasField("graph"):
        raise ModelLoadError(f"cannot load ONNX model '{label}': not an ONNX model (no graph)")
    if len(proto.opset_import) == 0 and proto.ir_version >= 3:
        raise ModelLoadError(f"cannot load ONNX model '{label}': no opset_import "
                             f"(truncated or corrupt file)")
    if len(proto.graph.output) == 0:
        raise ModelLoadError(f"cannot load ONNX model '{label}': the graph has no outputs "
                             f"(truncated or corrupt file)")
    validate.check_proto(proto, label)
    validate.check_external_data(proto, base_dir, label)
    return proto, base_dir, label


def _np_dtype_name(elem_type: int) -> str | None:
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except Exception:  # UNDEFINED, STRING, custom float8 etc.
        try:
            import onnx

            return onnx.TensorProto.DataType.Name(elem_type).lower()
        except Exception:
            return f"elem_type {elem_type}"


def _dims_text(dims: list) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


# --------------------------------------------------------------------------------------------
# the importer
# --------------------------------------------------------------------------------------------
class _Importer:
    def __init__(self, proto, base_dir: str, label: str,
                 input_shapes: Mapping[str, tuple[int, ...]] | None):
        self.proto = proto
        self.g = proto.graph
        self.base_dir = base_dir
        self.label = label
        self.input_shapes = dict(input_shapes or {})
        self.opset = 1
        for imp in proto.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = int(imp.version)
        self.all_consts: dict[str, np.ndarray] = {}   # every known constant (may be unused)
        self.types: dict[str, TensorType] = {}       # tensors of the output graph
        self.used_consts: set[str] = set()
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self.available: set[str] = set()
        # every tensor name some ONNX node or graph output reads (to check dropped outputs)
        self.read: set[str] = {t for n in self.g.node for t in n.input if t}
        self.read |= {o.name for o in self.g.output}

    # ---- driver ----------------------------------------------------------------------------
    def run(self) -> Graph:
        self._initializers()
        self._graph_inputs()
        names = self._node_names()
        check_supported(self.g.node, names, _CONVERTERS)
        for idx in self._order(names):
            n = self.g.node[idx]
            self._convert(n, names[idx])
        outputs = self._graph_outputs()
        for name in self.inputs:  # after the nodes, so a misused int input names its node first
            self._check_dtype(name, self.types[name].dtype)
        consts = {k: v for k, v in self.all_consts.items() if k in self.used_consts}
        return Graph(self.g.name or "main", tuple(self.nodes), tuple(self.inputs), tuple(outputs),
                     dict(self.types), consts)

    # ---- graph-level pieces ----------------------------------------------------------------
    def _to_array(self, tensor, what: str) -> np.ndarray:
        from onnx import numpy_helper

        try:
            return np.asarray(numpy_helper.to_array(tensor, base_dir=self.base_dir))
        except Exception as e:  # external data missing, bad raw_data size, unsupported type
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': {what} '{tensor.name}' "
                                 f"cannot be read ({_one_line(e)})") from None

    def _initializers(self) -> None:
        for t in self.g.initializer:
            if t.name in self.all_consts:
                raise ModelLoadError(f"cannot load ONNX model '{self.label}': initializer "
                                     f"'{t.name}' is defined twice")
            self.all_consts[t.name] = self._to_array(t, "initializer")
        if len(self.g.sparse_initializer):
            raise UnsupportedModelError(
                f"sparse initializer '{self.g.sparse_initializer[0].values.name}' is not supported")
        self.available |= set(self.all_consts)

    def _graph_inputs(self) -> None:
        inits = set(self.all_consts)
        runtime = [vi for vi in self.g.input if vi.name not in inits]
        names = {vi.name for vi in runtime}
        for key in self.input_shapes:
            if key not in names:
                if key in inits:
                    raise ShapeError(f"--input-shape names '{key}', which is an initializer, "
                                     f"not a runtime input (inputs: {', '.join(sorted(names)) or 'none'})")
                raise ShapeError(f"--input-shape names '{key}', which is not a graph input "
                                 f"(inputs: {', '.join(sorted(names)) or 'none'})")
        for vi in runtime:
            name = vi.name
            if name in self.available:
                raise ModelLoadError(f"cannot load ONNX model '{self.label}': input '{name}' is "
                                     f"declared twice")
            if vi.type.WhichOneof("value") != "tensor_type":
                raise UnsupportedModelError(f"input '{name}' is not a tensor "
                                            f"({vi.type.WhichOneof('value')})")
            tt = vi.type.tensor_type
            dtype = _np_dtype_name(tt.elem_type)  # checked on use / at the end (see run)
            if tt.HasField("shape"):
                dims: list[int | str] | None = []
                for d in tt.shape.dim:
                    if d.HasField("dim_value") and d.dim_value > 0:
                        dims.append(int(d.dim_value))
                    elif d.HasField("dim_param") and d.dim_param:
                        dims.append(d.dim_param)
                    else:
                        dims.append("?")
            else:
                dims = None
            shape = self._input_shape(name, dims)
            self.types[name] = TensorType(shape, dtype)
            self.inputs.append(name)
            self.available.add(name)

    def _input_shape(self, name: str, dims: list | None) -> tuple[int, ...]:
        given = self.input_shapes.get(name)
        if given is not None:
            try:
                given = tuple(int(d) for d in given)
            except (TypeError, ValueError):
                raise ShapeError(f"--input-shape for '{name}' must be a tuple of ints, "
                                 f"got {given!r}") from None
            if any(d <= 0 for d in given):
                raise ShapeError(f"--input-shape {name}={'x'.join(map(str, given))}: every dim "
                                 f"must be >= 1")
            if dims is not None:
                text = f"--input-shape {name}={'x'.join(map(str, given))}"
                if len(given) != len(dims):
                    raise ShapeError(f"{text} has rank {len(given)}, but input '{name}' has shape "
                                     f"{_dims_text(dims)} (rank {len(dims)})")
                for i, (g, d) in enumerate(zip(given, dims)):
                    if isinstance(d, int) and d != g:
                        raise ShapeError(f"{text} disagrees with input '{name}' shape "
                                         f"{_dims_text(dims)} at dim {i} ({g} vs {d})")
            return given
        if dims is None:
            raise ShapeError(f"input '{name}' has unknown shape (no rank); pass --input-shape "
                             f"{name}=D0xD1x... (e.g. {name}=1x3x224x224)")
        if any(not isinstance(d, int) for d in dims):
            # batch 1, channels 3, a 224x224 image: the usual vision input, never 1x3x1x1
            usual = (1, 3, 224, 224) if len(dims) == 4 else (1,) * len(dims)
            hint = "x".join(str(d) if isinstance(d, int) else str(u) for d, u in zip(dims, usual))
            raise ShapeError(f"input '{name}' has dynamic shape {_dims_text(dims)}; pass "
                             f"--input-shape {name}={hint}")
        return tuple(dims)  # type: ignore[arg-type]

    def _node_names(self) -> list[str]:
        explicit = {n.name for n in self.g.node if n.name}
        taken: set[str] = set()
        out = []
        for i, n in enumerate(self.g.node):
            base = n.name or f"{n.op_type or 'node'}_{i}"
            name, k = base, 1
            while name in taken or (not n.name and name in explicit):
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            out.append(name)
        return out

    def _order(self, names: list[str]) -> list[int]:
        """ONNX order, stably re-sorted if a node reads a tensor produced later."""
        producer: dict[str, int] = {}
        for i, n in enumerate(self.g.node):
            for t in n.output:
                if not t:
                    continue
                if t in producer or t in self.available:
                    raise ModelLoadError(f"cannot load ONNX model '{self.label}': tensor '{t}' is "
                                         f"produced more than once")
                producer[t] = i
        deps: list[set[int]] = []
        for i, n in enumerate(self.g.node):
            d = set()
            for t in n.input:
                if not t or t in self.available:
                    continue
                if t not in producer:
                    raise ModelLoadError(
                        f"cannot load ONNX model '{self.label}': node '{names[i]}' reads "
                        f"tensor '{t}', which no node, input or initializer produces")
                d.add(producer[t])
            deps.append(d)
        order, done = [], set()
        pending = list(range(len(self.g.node)))
        while pending:
            progressed, rest = False, []
            for i in pending:
                if deps[i] <= done:
                    order.append(i)
                    done.add(i)
                    progressed = True
                else:
                    rest.append(i)
            if not progressed:
                raise ModelLoadError(f"cannot load ONNX model '{self.label}': the graph has a cycle "
                                     f"through node '{names[rest[0]]}'")
            pending = rest
        return order

    def _graph_outputs(self) -> list[str]:
        outs = []
        for vi in self.g.output:
            name = vi.name
            if name not in self.types:
                if name in self.all_consts:
                    self._const_type(name)
                else:
                    raise ModelLoadError(f"cannot load ONNX model '{self.label}': output '{name}' is "
                                         f"not produced by any node")
            ty = self.types[name]
            if ty.dtype not in ("int64", "bool"):  # ArgMax indices / comparison masks are outputs too
                self._check_dtype(name, ty.dtype)
            if vi.type.WhichOneof("value") == "tensor_type":
                tt = vi.type.tensor_type
                if tt.elem_type:
                    declared = _np_dtype_name(tt.elem_type)
                    if declared != ty.dtype:
                        raise ModelLoadError(f"cannot load ONNX model '{self.label}': output '{name}' "
                                             f"is declared {declared} but computes to {ty.dtype}")
                if tt.HasField("shape"):
                    dims = [int(d.dim_value) if d.HasField("dim_value") else None for d in tt.shape.dim]
                    bad = len(dims) != len(ty.shape) or any(
                        d is not None and d > 0 and d != s for d, s in zip(dims, ty.shape))
                    if bad:
                        shown = [d if d is not None else "?" for d in dims]
                        raise ShapeError(f"output '{name}' is declared with shape {_dims_text(shown)} "
                                         f"but computes to {S.fmt_shape(ty.shape)}")
            outs.append(name)
        return outs

    # ---- tensor access ---------------------------------------------------------------------
    @staticmethod
    def _check_dtype(tensor: str, dtype: str) -> None:
        if dtype not in SUPPORTED_DTYPES:
            raise UnsupportedModelError(f"tensor '{tensor}' has dtype {dtype}; only float32 and "
                                        f"float16 are supported")

    def _const_type(self, name: str) -> TensorType:
        arr = self.all_consts[name]
        self._check_dtype(name, arr.dtype.name)
        ty = TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name)
        self.types[name] = ty
        self.used_consts.add(name)
        return ty

    def _data(self, tensor: str) -> TensorType:
        """Type of a data input (float); constants referenced as data are kept in the graph."""
        if tensor in self.types:
            ty = self.types[tensor]
            self._check_dtype(tensor, ty.dtype)
            return ty
        if tensor in self.all_consts:
            return self._const_type(tensor)
        raise ModelLoadError(f"cannot load ONNX model '{self.label}': tensor '{tensor}' is read "
                             f"before it is produced")

    def _const(self, tensor: str, name: str, what: str) -> np.ndarray:
        if tensor not in self.all_consts:
            raise UnsupportedModelError(f"node '{name}': {what} '{tensor}' is not a constant")
        return self.all_consts[tensor]

    # ---- node conversion -------------------------------------------------------------------
    def _convert(self, n, name: str) -> None:
        if n.domain not in ("", "ai.onnx"):
            raise UnsupportedModelError(f"unsupported operator '{n.domain}.{n.op_type}' "
                                        f"(node '{name}')")
        fn = _CONVERTERS.get(n.op_type)
        if fn is None:
            raise UnsupportedModelError(f"unsupported operator '{n.op_type}' (node '{name}')")
        attrs = self._attrs(n, name)
        ins = list(n.input)
        while ins and not ins[-1]:
            ins.pop()
        if try_fold(self, n, name, ins, attrs):
            return
        fn(self, n, name, ins, attrs)

    def _attrs(self, n, name: str) -> dict[str, Any]:
        from onnx import helper

        out = {}
        for a in n.attribute:
            if a.ref_attr_name:
                raise UnsupportedModelError(f"node '{name}': attribute '{a.name}' refers to a "
                                            f"function attribute")
            v = helper.get_attribute_value(a)
            if v is None:
                raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' "
                                     f"attribute '{a.name}' has no value")
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            out[a.name] = v
        return out

    def _arity(self, n, name: str, ins: list[str], lo: int, hi: int) -> None:
        if not lo <= len(ins) <= hi or any(not t for t in ins[:lo]):
            want = str(lo) if lo == hi else f"{lo}..{hi}"
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' ({n.op_type}) "
                                 f"has {len(ins)} inputs, expected {want}")

    def _single_output(self, n, name: str) -> str:
        outs = list(n.output)
        if not outs or not outs[0]:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' ({n.op_type}) "
                                 f"has no output")
        for extra in outs[1:]:
            if extra and extra in self.read:
                raise UnsupportedModelError(f"node '{name}': {n.op_type} output '{extra}' is not "
                                            f"supported")
        return outs[0]

    def _same_dtype(self, name: str, tensors: list[str]) -> str:
        dts = {t: self.types[t].dtype for t in tensors}
        first = tensors[0]
        for t, d in dts.items():
            if d != dts[first]:
                raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' mixes "
                                     f"{dts[first]} ('{first}') and {d} ('{t}') inputs")
        return dts[first]

    def _emit(self, name: str, op: str, ins: list[str], out: str, shape: tuple[int, ...],
              dtype: str, /, **attrs: Any) -> None:
        self.nodes.append(make_node(name, op, ins, [out], **attrs))
        self.types[out] = TensorType(tuple(int(d) for d in shape), dtype)
        self.available.add(out)

    @staticmethod
    def _ints(name: str, op: str, key: str, value: Any, n: int, default: tuple[int, ...],
              minimum: int) -> tuple[int, ...]:
        if value is None:
            return default
        vals = tuple(int(v) for v in value)
        if len(vals) != n:
            raise UnsupportedModelError(f"node '{name}': {op} attribute {key}={list(vals)} must have "
                                        f"{n} values (only 2-D is supported)")
        if any(v < minimum for v in vals):
            raise UnsupportedModelError(f"node '{name}': {op} attribute {key}={list(vals)} is invalid")
        return vals

    # Conv -----------------------------------------------------------------------------------
    def conv(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 3)
        x, w = ins[0], ins[1]
        xt = self._data(x)
        if len(xt.shape) != 4:
            raise UnsupportedModelError(f"node '{name}': only 2-D Conv is supported (input '{x}' has "
                                        f"rank {len(xt.shape)})")
        wa = self._const(w, name, "Conv weight")
        if wa.ndim != 4:
            raise UnsupportedModelError(f"node '{name}': only 2-D Conv is supported (weight '{w}' has "
                                        f"rank {wa.ndim})")
        self._data(w)
        kernel = (int(wa.shape[2]), int(wa.shape[3]))
        if "kernel_shape" in a and tuple(int(v) for v in a["kernel_shape"]) != kernel:
            raise ShapeError(f"node '{name}': kernel_shape {list(a['kernel_shape'])} disagrees with "
                             f"weight '{w}' shape {S.fmt_shape(wa.shape)}")
        strides = self._ints(name, "Conv", "strides", a.get("strides"), 2, (1, 1), 1)
        dilations = self._ints(name, "Conv", "dilations", a.get("dilations"), 2, (1, 1), 1)
        pads = self._ints(name, "Conv", "pads", a.get("pads"), 4, (0, 0, 0, 0), 0)
        group = int(a.get("group", 1))
        auto_pad = str(a.get("auto_pad", "NOTSET")) or "NOTSET"
        if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
            raise UnsupportedModelError(f"node '{name}': Conv auto_pad '{auto_pad}' is not supported")
        nb, c, h, wd = xt.shape
        m = int(wa.shape[0])
        if group < 1 or c % group or m % group or wa.shape[1] * group != c:
            raise ShapeError(f"node '{name}': Conv group={group} does not fit input channels {c} and "
                             f"weight '{w}' shape {S.fmt_shape(wa.shape)}")
        pads = S.resolve_conv_pads((h, wd), kernel, strides, dilations, auto_pad, pads)
        oh, ow = S.conv_output_hw((h, wd), kernel, strides, dilations, pads, f"node '{name}': ")
        inputs = [x, w]
        if len(ins) == 3 and ins[2]:
            b = ins[2]
            ba = self._const(b, name, "Conv bias")
            if tuple(ba.shape) != (m,):
                raise ShapeError(f"node '{name}': Conv bias '{b}' has shape {S.fmt_shape(ba.shape)}, "
                                 f"expected [{m}]")
            self._data(b)
            inputs.append(b)
        dtype = self._same_dtype(name, inputs)
        self._emit(name, "Conv", inputs, self._single_output(n, name), (nb, m, oh, ow), dtype,
                   kernel=kernel, strides=strides, pads=pads, dilations=dilations, group=group)

    # BatchNormalization ---------------------------------------------------------------------
    def batchnorm(self, n, name, ins, a):
        self._arity(n, name, ins, 5, 5)
        if int(a.get("training_mode", 0)) != 0:
            raise UnsupportedModelError(f"node '{name}': BatchNormalization in training mode is not "
                                        f"supported")
        if int(a.get("spatial", 1)) != 1:
            raise UnsupportedModelError(f"node '{name}': BatchNormalization with spatial=0 is not "
                                        f"supported")
        outs = list(n.output)
        for extra in outs[1:]:
            if extra and extra in self.read:
                raise UnsupportedModelError(f"node '{name}': BatchNormalization training output "
                                            f"'{extra}' is used (training mode is not supported)")
        x = ins[0]
        xt = self._data(x)
        if len(xt.shape) < 2:
            raise ShapeError(f"node '{name}': BatchNormalization input '{x}' has rank {len(xt.shape)}")
        c = xt.shape[1]
        for t, what in zip(ins[1:], ("scale", "bias", "mean", "var")):
            arr = self._const(t, name, f"BatchNormalization {what}")
            if tuple(arr.shape) != (c,):
                raise ShapeError(f"node '{name}': BatchNormalization {what} '{t}' has shape "
                                 f"{S.fmt_shape(arr.shape)}, expected [{c}]")
            self._data(t)
        dtype = self.types[x].dtype
        for t in ins[1:]:  # ONNX allows T1/T2 differing from T; require the model's own dtype
            self._same_dtype(name, [x, t])
        self._emit(name, "BatchNormalization", ins, self._single_output_bn(n, name), xt.shape,
                   dtype, epsilon=float(a.get("epsilon", 1e-5)))

    def _single_output_bn(self, n, name):
        if not n.output or not n.output[0]:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' has no output")
        return n.output[0]

    # element-wise unary ---------------------------------------------------------------------
    def unary(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 1)
        xt = self._data(ins[0])
        attrs = {}
        if n.op_type == "HardSigmoid":
            attrs = {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}
        self._emit(name, n.op_type, ins, self._single_output(n, name), xt.shape, xt.dtype, **attrs)

    def clip(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 3)
        xt = self._data(ins[0])
        lo, hi = float(a.get("min", -math.inf)), float(a.get("max", math.inf))
        for i, which in ((1, "min"), (2, "max")):
            if len(ins) > i and ins[i]:
                arr = self._const(ins[i], name, f"Clip {which} bound")
                if arr.size != 1:
                    raise UnsupportedModelError(f"node '{name}': Clip {which} bound '{ins[i]}' is not "
                                                f"a scalar (shape {S.fmt_shape(arr.shape)})")
                if which == "min":
                    lo = float(arr.reshape(()))
                else:
                    hi = float(arr.reshape(()))
        self._emit(name, "Clip", [ins[0]], self._single_output(n, name), xt.shape, xt.dtype,
                   min=lo, max=hi)

    # element-wise binary --------------------------------------------------------------------
    def binary(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 2)
        if int(a.get("broadcast", 0)) and "axis" in a:
            raise UnsupportedModelError(f"node '{name}': legacy {n.op_type} broadcast with axis "
                                        f"(opset < 7) is not supported")
        if n.op_type == "Div":
            self._const(ins[1], name, "Div divisor")
        at, bt = self._data(ins[0]), self._data(ins[1])
        dtype = self._same_dtype(name, ins)
        shape = S.broadcast(at.shape, bt.shape, f"node '{name}': ")
        self._emit(name, n.op_type, ins, self._single_output(n, name), shape, dtype)

    # pooling / reductions -------------------------------------------------------------------
    def gap(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 1)
        xt = self._data(ins[0])
        if len(xt.shape) != 4:
            raise UnsupportedModelError(f"node '{name}': GlobalAveragePool is supported on 4-D "
                                        f"tensors only (input '{ins[0]}' has rank {len(xt.shape)})")
        nb, c = xt.shape[:2]
        self._emit(name, "GlobalAveragePool", ins, self._single_output(n, name), (nb, c, 1, 1),
                   xt.dtype)

    def reduce_mean(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 2)
        xt = self._data(ins[0])
        rank = len(xt.shape)
        if len(ins) == 2 and ins[1]:
            axes = [int(v) for v in self._const(ins[1], name, "ReduceMean axes").reshape(-1)]
        elif "axes" in a:
            axes = [int(v) for v in a["axes"]]
        else:
            axes = []
        if not axes:
            if int(a.get("noop_with_empty_axes", 0)):
                raise UnsupportedModelError(f"node '{name}': ReduceMean with empty axes and "
                                            f"noop_with_empty_axes=1 is not supported")
            axes = list(range(rank))
        if any(not -rank <= ax < rank for ax in axes):
            raise ShapeError(f"node '{name}': ReduceMean axes {axes} out of range for rank {rank}")
        norm = sorted({ax % rank for ax in axes})
        if rank != 4 or norm != [2, 3]:
            raise UnsupportedModelError(f"node '{name}': ReduceMean over axes {axes} of a {rank}-D "
                                        f"tensor is not supported (only the spatial axes 2, 3 of a "
                                        f"4-D tensor)")
        keep = 1 if int(a.get("keepdims", 1)) else 0
        nb, c = xt.shape[:2]
        shape = (nb, c, 1, 1) if keep else (nb, c)
        self._emit(name, "ReduceMean", [ins[0]], self._single_output(n, name), shape, xt.dtype,
                   axes=(2, 3), keepdims=keep)

    # shape ops ------------------------------------------------------------------------------
    def flatten(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 1)
        xt = self._data(ins[0])
        rank = len(xt.shape)
        axis = int(a.get("axis", 1))
        if not -rank <= axis <= rank:
            raise ShapeError(f"node '{name}': Flatten axis {axis} out of range for rank {rank}")
        axis = axis + rank if axis < 0 else axis
        self._emit(name, "Flatten", ins, self._single_output(n, name), S.flatten(xt.shape, axis),
                   xt.dtype, axis=axis)

    def reshape(self, n, name, ins, a):
        self._arity(n, name, ins, 1, 2)
        xt = self._data(ins[0])
        if len(ins) == 2 and ins[1]:
            target = [int(v) for v in self._const(ins[1], name, "Reshape shape").reshape(-1)]
        elif "shape" in a:  # opset < 5
            target = [int(v) for v in a["shape"]]
        else:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' (Reshape) "
                                 f"has no shape")
        shape = S.reshape(xt.shape, tuple(target), bool(int(a.get("allowzero", 0))),
                          f"node '{name}': ")
        self._emit(name, "Reshape", [ins[0]], self._single_output(n, name), shape, xt.dtype,
                   shape=shape)

    # matrix ops -----------------------------------------------------------------------------
    def gemm(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 3)
        inputs = [t for t in ins if t]
        if len(inputs) != len(ins):
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': node '{name}' (Gemm) has an "
                                 f"empty input")
        tys = [self._data(t) for t in inputs]
        dtype = self._same_dtype(name, inputs)
        ta, tb = (1 if int(a.get("transA", 0)) else 0), (1 if int(a.get("transB", 0)) else 0)
        shape = S.gemm(tys[0].shape, tys[1].shape, tys[2].shape if len(tys) == 3 else None, ta, tb,
                       f"node '{name}': ")
        self._emit(name, "Gemm", inputs, self._single_output(n, name), shape, dtype,
                   alpha=float(a.get("alpha", 1.0)), beta=float(a.get("beta", 1.0)),
                   transA=ta, transB=tb)

    def matmul(self, n, name, ins, a):
        self._arity(n, name, ins, 2, 2)
        at, bt = self._data(ins[0]), self._data(ins[1])
        dtype = self._same_dtype(name, ins)
        shape = S.matmul(at.shape, bt.shape, f"node '{name}': ")
        self._emit(name, "MatMul", ins, self._single_output(n, name), shape, dtype)

    # Constant -------------------------------------------------------------------------------
    def constant(self, n, name, ins, a):
        if ins:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': Constant node '{name}' has "
                                 f"inputs")
        out = self._single_output(n, name)
        if len(a) != 1:
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': Constant node '{name}' must "
                                 f"have exactly one value attribute, has {sorted(a) or 'none'}")
        (key, v), = a.items()
        if key == "value":
            arr = self._to_array(v, "Constant value")
        elif key == "value_float":
            arr = np.array(v, dtype=np.float32)
        elif key == "value_floats":
            arr = np.array(list(v), dtype=np.float32)
        elif key == "value_int":
            arr = np.array(v, dtype=np.int64)
        elif key == "value_ints":
            arr = np.array(list(v), dtype=np.int64)
        else:
            raise UnsupportedModelError(f"node '{name}': Constant attribute '{key}' is not supported")
        self.all_consts[out] = arr
        self.available.add(out)


_CONVERTERS: dict[str, Callable] = {
    "Conv": _Importer.conv,
    "BatchNormalization": _Importer.batchnorm,
    "Relu": _Importer.unary,
    "Sigmoid": _Importer.unary,
    "HardSwish": _Importer.unary,
    "HardSigmoid": _Importer.unary,
    "Identity": _Importer.unary,
    "Clip": _Importer.clip,
    "Mul": _Importer.binary,
    "Add": _Importer.binary,
    "Sub": _Importer.binary,
    "Div": _Importer.binary,
    "GlobalAveragePool": _Importer.gap,
    "ReduceMean": _Importer.reduce_mean,
    "Flatten": _Importer.flatten,
    "Reshape": _Importer.reshape,
    "Gemm": _Importer.gemm,
    "MatMul": _Importer.matmul,
    "Constant": _Importer.constant,
}
_CONVERTERS.update(extra_converters(_CONVERTERS))

SUPPORTED_OPS = frozenset(_CONVERTERS)
