"""Graph IR: frozen nodes and tensor types; a Graph is immutable and passes return new ones.

Tensors are named edges. Every tensor has a TensorType (shape, dtype, layout). Constants
(ONNX initializers, folded weights) live in `Graph.constants` as numpy arrays; graph
analysis goes through a networkx DiGraph built on demand (`Graph.dag`).
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

    @cached_property
    def dag(self) -> nx.DiGraph:
        """Nodes are node names (attribute `node`); an edge producer→consumer carries `tensor`."""
        g = nx.DiGraph()
        for n in self.nodes:
            g.add_node(n.name, node=n)
        for n in self.nodes:
            for t in n.inputs:
                p = self.producers.get(t)
                if p is not None:
                    g.add_edge(p.name, n.name, tensor=t)
        return g

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
                     {k: v for k, v in consts.items() if k in live})


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
