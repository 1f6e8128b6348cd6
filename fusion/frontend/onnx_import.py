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

This module reads the model (proto, initializers, inputs, node order, outputs); the converters
of the operators live in fusion/frontend/onnx_convert.py (and fusion/onnx_ops_*.py for the extra ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import logging
import os
import re
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from fusion.frontend import onnx_shapes as S
from fusion.frontend.onnx_shapes import np_dtype_name as _np_dtype_name
from fusion.frontend import validate
from fusion.core.errors import (
    MegafuseError,
    ModelLoadError,
    ShapeError,
    UnsupportedModelError,
)
from fusion.frontend.const_eval import try_fold
from fusion.core.ir import Graph, Node, TensorType
from fusion.frontend.onnx_convert import CONVERTERS, SUPPORTED_OPS, OpConverters
from fusion.frontend.onnx_coverage import check_supported
from fusion.frontend.param_checks import check_node_params
from fusion.core.sanitize import display

log = logging.getLogger("megafuse.import")

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


@dataclass(frozen=True)
class LoadedModel:
    """A model file read once (load_once): the commands that compile a model and also run it as the
    reference (check, bench) hand this to both, so a file replaced between the two reads cannot give
    the kernels one model and the reference another. Accepted wherever a path is."""
    proto: Any
    base_dir: str
    label: str


def load_once(model: Any) -> LoadedModel:
    """Read and validate a path/bytes/proto once (the checks of load_graph, one-line errors), its
    external data read in as well, so nothing of the model is read again."""
    try:
        proto, base_dir, label = _load_proto(model)
        return LoadedModel(validate.inline_external_data(proto, base_dir, label), base_dir, label)
    except MegafuseError:
        raise
    except Exception as e:  # noqa: BLE001 - any protobuf failure is a load error
        raise ModelLoadError(f"cannot load ONNX model: malformed model ({type(e).__name__}: {_one_line(e)})") from None


def read_model(model: Any):
    """The onnx.ModelProto of a path/bytes/proto/LoadedModel, with the same one-line errors as
    load_graph, and its external data read in from the model's own folder (what ONNX Runtime is
    handed)."""
    try:
        return validate.inline_external_data(*_load_proto(model))   # read from the model's folder
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

    if isinstance(model, LoadedModel):   # read and checked already
        return model.proto, model.base_dir, model.label
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



def _dims_text(dims: list) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


# --------------------------------------------------------------------------------------------
# the importer
# --------------------------------------------------------------------------------------------
class _Importer(OpConverters):
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
        check_supported(self.g.node, names, CONVERTERS)
        for idx in self._order(names):
            n = self.g.node[idx]
            self._convert(n, names[idx])
        outputs = self._graph_outputs()
        for name in self.inputs:  # after the nodes, so a misused int input names its node first
            self._check_dtype(name, self.types[name].dtype)
        consts = {k: v for k, v in self.all_consts.items() if k in self.used_consts}
        quant = {k: v for k, v in getattr(self, "quant_consts", {}).items() if k in consts}
        return Graph(self.g.name or "main", tuple(self.nodes), tuple(self.inputs), tuple(outputs),
                     dict(self.types), consts, quant)

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
        shadowed = [vi.name for vi in self.g.input if vi.name in inits]
        if shadowed and not runtime:   # ONNX (IR >= 4): such an initializer is the input's default value
            raise ModelLoadError(f"cannot load ONNX model '{self.label}': every graph input ('{shadowed[0]}'"
                                 f"{f' and {len(shadowed) - 1} more' if len(shadowed) > 1 else ''}) has an "
                                 f"initializer of the same name, its default value, so nothing is left to feed "
                                 f"at run time; remove the initializer to compile it as an input")
        if shadowed:
            log.info("%d graph input(s) ('%s'...) have initializers of the same name: compiled as those "
                     "constants (ONNX IR >= 4: the initializer is the input's default value)",
                     len(shadowed), display(shadowed[0]))
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
        fn = CONVERTERS.get(n.op_type)
        if fn is None:
            raise UnsupportedModelError(f"unsupported operator '{n.op_type}' (node '{name}')")
        attrs = self._attrs(n, name)
        ins = list(n.input)
        while ins and not ins[-1]:
            ins.pop()
        check_node_params(n.op_type, name, ins, attrs, self.all_consts.get)
        if try_fold(self, n, name, ins, attrs):
            return
        fn(self, n, name, ins, attrs)
