"""Graph IR: frozen nodes and tensor types; a Graph is immutable and passes return new ones.

Tensors are named edges. Every tensor has a TensorType (shape, dtype, layout). Constants
(ONNX initializers, folded weights) live in `Graph.constants` as numpy arrays.
`structural_diff` compares two graphs up to the names of their nodes and inner tensors (as TVM's
structural equality does with free variables) and `format_graph` prints one, so pass tests can
state the whole expected graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Mapping

import networkx as nx
import numpy as np

NCHW = "NCHW"
NC1HWC0 = "NC1HWC0"
C0 = 16  # channel block of the blocked layout (32 B of fp16; kept at 16 for fp32 too)
C0_BYTES = 32  # one DataBlock: a pixel's C0 channels of an 8- or 16-bit tensor [devkit: C0 = 32 B]


def c0_of(dtype: str) -> int:
    """C0 of a dtype: one 32 B DataBlock of channels for 8- and 16-bit dtypes (int8/uint8: 32,
    fp16: 16); fp32 keeps 16 (the project's float32 layout, 64 B a pixel)."""
    return C0_BYTES // np.dtype(dtype).itemsize if np.dtype(dtype).itemsize <= 2 else C0


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)



@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str
    layout: str = NCHW  # NCHW (or any plain row-major layout) | NC1HWC0
    channels: int | None = None  # logical channel count of an NC1HWC0 tensor

    @property
    def logical_shape(self) -> tuple[int, ...]:
        if self.layout == NC1HWC0:
            n, _c1, h, w, _c0 = self.shape
            return (n, self.channels, h, w)
        return self.shape

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return tuple(value.tolist())
    return value


@dataclass(frozen=True)
class Node:
    name: str
    op_type: str
    inputs: tuple[str, ...]  # "" marks an omitted optional input
    outputs: tuple[str, ...]
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def with_attrs(self, **updates: Any) -> "Node":
        merged = dict(self.attrs)
        merged.update({k: _freeze(v) for k, v in updates.items()})
        return replace(self, attrs=tuple(sorted(merged.items())))


def make_node(name: str, op_type: str, inputs: Iterable[str], outputs: Iterable[str], **attrs: Any) -> Node:
    return Node(name, op_type, tuple(inputs), tuple(outputs),
                tuple(sorted((k, _freeze(v)) for k, v in attrs.items())))


@dataclass(frozen=True, eq=False)
class Graph:
    name: str
    nodes: tuple[Node, ...]  # topological order
    inputs: tuple[str, ...]  # runtime inputs (initializers excluded)
    outputs: tuple[str, ...]
    types: Mapping[str, TensorType]
    constants: Mapping[str, np.ndarray] = field(default_factory=dict)
    # constants the model stored quantized (QDQ): float constant name -> its integer form
    # (fusion.frontend.onnx_ops_quant.QuantizedConst); read by passes/quant_fuse.py
    quant: Mapping[str, Any] = field(default_factory=dict)

    # --- analysis -------------------------------------------------------------------------
    @cached_property
    def producers(self) -> dict[str, Node]:
        return {t: n for n in self.nodes for t in n.outputs if t}

    @cached_property
    def consumers(self) -> dict[str, list[Node]]:
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for t in n.inputs:
                if t:
                    out.setdefault(t, []).append(n)
        return out

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def producer(self, tensor: str) -> Node | None:
        return self.producers.get(tensor)

    def consumers_of(self, tensor: str) -> list[Node]:
        return self.consumers.get(tensor, [])

    def uses(self, tensor: str) -> int:
        """Number of consuming node inputs plus one if the tensor is a graph output."""
        return len(self.consumers_of(tensor)) + (1 if tensor in self.outputs else 0)

    def is_constant(self, tensor: str) -> bool:
        return tensor in self.constants

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op_type] = counts.get(n.op_type, 0) + 1
        return counts

    # --- rewriting ------------------------------------------------------------------------
    def rewrite(self, nodes: Iterable[Node], constants: Mapping[str, np.ndarray] | None = None,
                types: Mapping[str, TensorType] | None = None,
                outputs: Iterable[str] | None = None) -> "Graph":
        """A new graph with these nodes (re-sorted topologically) and unused constants/types pruned."""
        nodes = _toposort(tuple(nodes))
        consts = dict(self.constants if constants is None else constants)
        tys = dict(self.types if types is None else types)
        outs = self.outputs if outputs is None else tuple(outputs)
        live = set(self.inputs) | set(outs)
        for n in nodes:
            live.update(t for t in n.inputs if t)
            live.update(t for t in n.outputs if t)
        return Graph(self.name, nodes, self.inputs, outs,
                     {k: v for k, v in tys.items() if k in live},
                     {k: v for k, v in consts.items() if k in live},
                     {k: v for k, v in self.quant.items() if k in live})


def _toposort(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
    g = nx.DiGraph()
    order = {n.name: i for i, n in enumerate(nodes)}
    produced = {t: n.name for n in nodes for t in n.outputs if t}
    for n in nodes:
        g.add_node(n.name)
        for t in n.inputs:
            if t in produced:
                g.add_edge(produced[t], n.name)
    by_name = {n.name: n for n in nodes}
    # stable: among ready nodes keep the original order
    return tuple(by_name[k] for k in nx.lexicographical_topological_sort(g, key=order.__getitem__))


# ---------------------------------------------------------------------------------------------
# structural equality and printing
# ---------------------------------------------------------------------------------------------
def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt_value(x) for x in v) + ")"
    return repr(v) if isinstance(v, str) else str(v)


def _fmt_type(t: TensorType | None) -> str:
    if t is None:
        return "?"
    extra = f" C={t.channels}" if t.channels is not None else ""
    return f"{t.dtype}[{','.join(map(str, t.shape))}] {t.layout}{extra}"


def format_graph(g: Graph) -> str:
    """One line per node: `outputs = Op(inputs) {attrs} : types`; constants marked with $."""
    def name(t: str) -> str:
        return "_" if not t else (f"${t}" if t in g.constants else t)

    lines = [f"graph {g.name}({', '.join(f'{t}: {_fmt_type(g.types.get(t))}' for t in g.inputs)})"]
    for n in g.nodes:
        attrs = " {" + ", ".join(f"{k}={_fmt_value(v)}" for k, v in n.attrs) + "}" if n.attrs else ""
        types = ", ".join(_fmt_type(g.types.get(t)) for t in n.outputs if t)
        lines.append(f"  {', '.join(name(t) for t in n.outputs)} = {n.op_type}"
                     f"({', '.join(name(t) for t in n.inputs)}){attrs} : {types}")
    lines.append(f"  return {', '.join(g.outputs)}")
    return "\n".join(lines)


def _attr_equal(a: Any, b: Any, rtol: float) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_attr_equal(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)):
        return a == b or abs(a - b) <= rtol * max(abs(a), abs(b))
    return type(a) is type(b) and a == b


def structural_diff(a: Graph, b: Graph, rtol: float = 0.0) -> str | None:
    """None when the graphs are equal up to the names of nodes and of tensors that are neither
    graph inputs nor outputs; else the first difference. Compared: node order, op types,
    attributes, the dataflow, every tensor's type, constants by value (within rtol)."""
    m: dict[str, str] = {}      # tensor of a -> tensor of b
    taken: set[str] = set()

    def bind(ta: str, tb: str, where: str) -> str | None:
        if (ta == "") != (tb == ""):
            return f"{where}: {ta or '<omitted>'} vs {tb or '<omitted>'}"
        if not ta:
            return None
        if ta in m:
            return None if m[ta] == tb else f"{where}: {ta} is {m[ta]} in the other graph, not {tb}"
        if tb in taken:
            return f"{where}: {tb} already stands for another tensor"
        if a.types.get(ta) != b.types.get(tb):
            return f"{where}: type of {ta} {_fmt_type(a.types.get(ta))} vs {tb} {_fmt_type(b.types.get(tb))}"
        if (ta in a.constants) != (tb in b.constants):
            return f"{where}: {ta} and {tb} are not both constants"
        if ta in a.constants:
            x, y = np.asarray(a.constants[ta]), np.asarray(b.constants[tb])
            if x.shape != y.shape or x.dtype != y.dtype or not np.allclose(x, y, rtol=rtol, atol=0.0):
                return f"{where}: constant {ta} differs from {tb}"
        m[ta] = tb
        taken.add(tb)
        return None

    if len(a.inputs) != len(b.inputs) or len(a.outputs) != len(b.outputs):
        return f"graph signature: {len(a.inputs)}->{len(a.outputs)} vs {len(b.inputs)}->{len(b.outputs)}"
    for ta, tb in zip(a.inputs, b.inputs):
        if ta != tb:
            return f"graph input {ta} vs {tb}"
        if err := bind(ta, tb, "graph input"):
            return err
    if len(a.nodes) != len(b.nodes):
        return f"{len(a.nodes)} nodes vs {len(b.nodes)}"
    for i, (na, nb) in enumerate(zip(a.nodes, b.nodes)):
        where = f"node {i} ({na.op_type} {na.name})"
        if na.op_type != nb.op_type:
            return f"{where}: op {na.op_type} vs {nb.op_type}"
        if [k for k, _ in na.attrs] != [k for k, _ in nb.attrs] or not all(
                _attr_equal(x, y, rtol) for (_, x), (_, y) in zip(na.attrs, nb.attrs)):
            return f"{where}: attrs {dict(na.attrs)} vs {dict(nb.attrs)}"
        if len(na.inputs) != len(nb.inputs) or len(na.outputs) != len(nb.outputs):
            return f"{where}: arity {len(na.inputs)}->{len(na.outputs)} vs {len(nb.inputs)}->{len(nb.outputs)}"
        for j, (ta, tb) in enumerate(zip(na.inputs, nb.inputs)):
            if ta and ta not in m and ta not in a.constants:
                return f"{where}: input {j} ({ta}) is produced by no earlier node"
            if err := bind(ta, tb, f"{where} input {j}"):
                return err
        for j, (ta, tb) in enumerate(zip(na.outputs, nb.outputs)):
            if ta in m:
                return f"{where}: output {ta} is written twice"
            if err := bind(ta, tb, f"{where} output {j}"):
                return err
    for ta, tb in zip(a.outputs, b.outputs):
        if ta != tb or m.get(ta, ta) != tb:
            return f"graph output {ta} vs {tb}"
    return None


def assert_structural_equal(a: Graph, b: Graph, rtol: float = 0.0) -> None:
    """Raise AssertionError naming the first difference and printing both graphs."""
    diff = structural_diff(a, b, rtol)
    if diff is not None:
        raise AssertionError(f"graphs differ: {diff}\n--- got\n{format_graph(a)}\n--- expected\n{format_graph(b)}")
