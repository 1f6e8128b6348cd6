"""Layout: NCHW → NC1HWC0 once at the entry of a region of blocked nodes, back once at its exit.

Fused nodes must run blocked. Pointwise 1×1 convs and shape-preserving elementwise ops can run
in either layout; they join a blocked region when a neighbour is blocked (forward from a blocked
producer, backward when every consumer is blocked), so MobileNetV2's expansion convs keep the
blocked layout between fused blocks instead of converting around each one. Each tensor is
converted at most once per direction; conversions are `ToNC1HWC0` / `ToNCHW` nodes.
"""

from __future__ import annotations

from fusion.core.ir import C0, NC1HWC0, NCHW, Graph, Node, TensorType, make_node
from passes.fuse_dwsep import FUSED_OP, fused_data_inputs
from schedules.blocked_ops import BLOCKED_VISION_OPS, runs_blocked
from schedules.workload import ceil_div

UNARY = {"Relu", "Relu6", "HardSwish", "Sigmoid", "HardSigmoid", "Clip"}
BINARY = {"Add", "Mul"}


def can_run_blocked(g: Graph, n: Node) -> bool:
    if n.op_type == FUSED_OP:
        return True
    if n.op_type == "Conv":
        return (n.attr("kernel") == (1, 1) and n.attr("group", 1) == 1 and n.attr("strides") == (1, 1)
                and n.attr("pads") == (0, 0, 0, 0) and len(g.types[n.inputs[0]].shape) == 4)
    if n.op_type in UNARY:
        return len(g.types[n.inputs[0]].shape) == 4
    if n.op_type in BLOCKED_VISION_OPS:
        return runs_blocked(g, n)
    if n.op_type in BINARY:
        a, b = n.inputs
        return (not g.is_constant(a) and not g.is_constant(b) and len(g.types[a].shape) == 4
                and g.types[a].shape == g.types[b].shape)
    return False


def _data_inputs(g: Graph, n: Node) -> list[str]:
    if n.op_type == FUSED_OP:
        return list(fused_data_inputs(n))
    if n.op_type == "Conv":
        return [n.inputs[0]]
    return [t for t in n.inputs if t and not g.is_constant(t)]


def assign_layouts(g: Graph) -> set[str]:
    blocked = {n.name for n in g.nodes if n.op_type == FUSED_OP}
    if not blocked:
        return blocked
    changed = True
    while changed:
        changed = False
        for n in g.nodes:
            if n.name in blocked or not can_run_blocked(g, n):
                continue
            from_blocked = any((p := g.producer(t)) is not None and p.name in blocked for t in _data_inputs(g, n))
            out = n.outputs[0]
            users = g.consumers_of(out)
            to_blocked = out not in g.outputs and users and all(u.name in blocked for u in users)
            if from_blocked or to_blocked:
                blocked.add(n.name)
                changed = True
    return blocked


def blocked_type(t: TensorType) -> TensorType:
    n, c, h, w = t.shape
    return TensorType((n, ceil_div(c, C0), h, w, C0), t.dtype, NC1HWC0, channels=c)


def insert_layout_conversions(g: Graph) -> Graph:
    blocked = assign_layouts(g)
    if not blocked:
        return g
    g = _rename_blocked_outputs(g, blocked)
    types = dict(g.types)
    for n in g.nodes:  # outputs of blocked nodes become NC1HWC0 tensors
        if n.name in blocked:
            types[n.outputs[0]] = blocked_type(g.types[n.outputs[0]])
    conversions: dict[tuple[str, str], Node] = {}

    def converted(t: str, want: str, name: str | None = None) -> str:
        if types[t].layout == want:
            return t
        if (t, want) not in conversions:
            if want == NC1HWC0:
                new, op = f"{t}__nc1hwc0", "ToNC1HWC0"
                types[new] = blocked_type(types[t])
            else:
                new, op = name or f"{t}__nchw", "ToNCHW"
                types[new] = TensorType(types[t].logical_shape, types[t].dtype)
            conversions[(t, want)] = make_node(f"{op.lower()}_{t}", op, [t], [new])
        return conversions[(t, want)].outputs[0]

    nodes = []
    for n in g.nodes:
        want = NC1HWC0 if n.name in blocked else NCHW
        data = set(_data_inputs(g, n))
        ins = tuple(converted(t, want) if t in data else t for t in n.inputs)
        nodes.append(Node(n.name, n.op_type, ins, n.outputs, n.attrs))
    for t in g.outputs:  # graph outputs stay NCHW under their own names
        if f"{t}{_OUT_SUFFIX}" in types:
            converted(f"{t}{_OUT_SUFFIX}", NCHW, name=t)
    return g.rewrite(nodes + list(conversions.values()), types=types)


_OUT_SUFFIX = "__nc1hwc0_out"
OUT_SUFFIX = _OUT_SUFFIX   # public: fusion/driver/onnx_export.py maps the renamed outputs back


def _rename_blocked_outputs(g: Graph, blocked: set[str]) -> Graph:
    """A graph output produced by a blocked node is renamed so its ToNCHW copy can take the name."""
    renames = {t: f"{t}{_OUT_SUFFIX}" for t in g.outputs
               if (p := g.producer(t)) is not None and p.name in blocked}
    if not renames:
        return g
    nodes = [Node(n.name, n.op_type, tuple(renames.get(t, t) for t in n.inputs),
                  tuple(renames.get(t, t) for t in n.outputs), n.attrs) for n in g.nodes]
    types = dict(g.types)
    for old, new in renames.items():
        types[new] = types[old]
    return Graph(g.name, tuple(nodes), g.inputs, g.outputs, types, g.constants)
