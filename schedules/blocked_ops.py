"""Vision operators whose unfused kernels (schedules/ops_vision.py, ops_shape.py) also run on
NC1HWC0 tensors, so the layout pass can keep them inside a blocked region instead of converting
around them.

Per-channel spatial ops qualify (the channel block is one more parallel axis). Element-wise ops
qualify when f(0) is finite: the zero-padded channel tail of a blocked tensor then holds finite
values, which the blocked consumers multiply by zero weights or drop (Log, Reciprocal and Pow
would put inf/NaN there, and 0 * inf is NaN). A channel Concat qualifies when every input but the
last fills whole C0 blocks, so the blocks line up and the only padded tail is the output's."""

from __future__ import annotations

from fusion.core.ir import C0, Graph, Node

SPATIAL = frozenset({"MaxPool", "AveragePool", "GlobalMaxPool", "Resize"})
ELEMENTWISE = frozenset({"Exp", "Tanh", "Erf", "Abs", "Neg", "Floor", "Ceil", "Softplus",
                         "LeakyRelu", "Elu", "Gelu", "Sqrt"})
BLOCKED_VISION_OPS = SPATIAL | ELEMENTWISE | {"Concat"}


def runs_blocked(g: Graph, n: Node) -> bool:
    shapes = [g.types[t].shape for t in n.inputs]
    if any(len(s) != 4 for s in shapes):
        return False
    if n.op_type != "Concat":
        return n.op_type in BLOCKED_VISION_OPS
    return (n.attr("axis") == 1 and not any(g.is_constant(t) for t in n.inputs)
            and all(s[1] % C0 == 0 for s in shapes[:-1]))
