"""Shared test factories: small graphs, the two SoCs, small kernel plans, and whole-graph equality.

Importable from every test module (pyproject: pytest `pythonpath = ["tests"]`); the fixtures in
conftest.py wrap the same functions. One definition each, instead of a copy per test file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from fusion.core.ir import Graph, Node, TensorType, assert_structural_equal, make_node
from fusion.core.soc import SocSpec, get_soc
from schedules.plan import KernelPlan, make_plan
from schedules.workload import DwSepWorkload, TileConfig

F32, F16 = "float32", "float16"

# the two SoCs of the SoC table (fusion/core/soc.py), under the names the tests use
B910: SocSpec = get_soc("ascend910b2")
P310: SocSpec = get_soc("ascend310p3")
SOC = B910   # the default target of the pass tests

# A small DW-separable block: 16 -> 32 channels (C1 = 1, CO1 = 2), 8x8, 3x3 s1 pads 1, fp16 relu/relu
SMALL_WL = DwSepWorkload(1, 16, 32, 8, 8, dtype=F16)


def graph(nodes: Iterable[Node], inputs: Iterable[str], outputs: Iterable[str],
          types: Mapping[str, tuple], consts: Mapping[str, np.ndarray] | None = None, name: str = "t") -> Graph:
    """A Graph from nodes, names and `types` as TensorType argument tuples: {"x": ((1, 4), "float32")}."""
    return Graph(name, tuple(nodes), tuple(inputs), tuple(outputs),
                 {k: v if isinstance(v, TensorType) else TensorType(*v) for k, v in types.items()},
                 dict(consts or {}))


def conv_attrs(kernel=(1, 1), group=1, pads=None, strides=(1, 1), dilations=(1, 1)) -> dict:
    """The attributes the ONNX importer gives a Conv node (fusion/frontend)."""
    pads = pads if pads is not None else (0, 0, 0, 0)
    return dict(kernel=tuple(kernel), strides=tuple(strides), pads=tuple(pads), dilations=tuple(dilations),
                group=group)


def node(name: str, op: str, inputs: Iterable[str], outputs: Iterable[str], **attrs) -> Node:
    return make_node(name, op, inputs, outputs, **attrs)


def assert_graph_equal(got: Graph, expected: Graph, rtol: float = 0.0) -> None:
    """Whole-graph structural equality: node order, op types, attributes (same keys, same order),
    the dataflow between nodes, graph inputs and outputs by name, every tensor's type, constants by
    value (np.allclose within rtol, same shape and dtype). Node names and the names of tensors that
    are neither graph inputs nor outputs are normalized (passes generate them). Unused constants and
    types of tensors no node touches are compared too, by set of names after normalization."""
    assert_structural_equal(got, expected, rtol)
    # structural_diff binds only tensors the nodes use: stray constants would slip through
    assert len(got.constants) == len(expected.constants), (
        f"constants: {sorted(got.constants)} vs {sorted(expected.constants)}")
    used = {t for n in got.nodes for t in (*n.inputs, *n.outputs) if t} | set(got.inputs) | set(got.outputs)
    assert set(got.constants) <= used, f"unused constants left in the graph: {set(got.constants) - used}"


def plan(wl: DwSepWorkload = SMALL_WL, tile: TileConfig | tuple = (8, 8, 2, 0, True, "vector"),
         soc: SocSpec = B910) -> KernelPlan:
    """A kernel plan; `tile` as a TileConfig or its argument tuple (th, tw, cob, cib, db, engine[, cores])."""
    return make_plan(wl, tile if isinstance(tile, TileConfig) else TileConfig(*tile), soc)
