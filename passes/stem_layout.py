"""A convolution that feeds a blocked region writes NC1HWC0 itself (llvm target).

The layout pass converts a tensor to NC1HWC0 where it enters a region of blocked nodes; when that
tensor comes straight from a dense convolution (the network's stem: 3 -> 32 channels, 3x3 s2),
the conversion is a full extra read and write of the conv's output. The conv kernel can store its
C0 output lanes blocked instead (schedules/cpu_conv.conv_to_blocked_kernel: the C0 output
channels are its vector anyway), so this pass drops the ToNC1HWC0 node:

  pattern    Conv (group 1, no dilation, 4-D NCHW input) -> t -> ToNC1HWC0 -> t'
  legality   t has no other use and is not a graph output; the conv reads no residual
  rewrite    the Conv writes t' (NC1HWC0) directly; the ToNC1HWC0 node goes

It runs after the layout pass and before passes/conv_epilogue.py, which then folds the blocked
activation that follows into the conv's epilogue.
"""

from __future__ import annotations

import logging

from fusion.core.ir import NCHW, Graph, Node

log = logging.getLogger("megafuse.layout")


def _legal(g: Graph, conv: Node, t: str) -> bool:
    return (conv.op_type == "Conv" and conv.attr("group", 1) == 1
            and tuple(conv.attr("dilations", (1, 1))) == (1, 1) and len(conv.inputs) <= 3
            and g.types[conv.inputs[0]].layout == NCHW and len(g.types[conv.inputs[0]].shape) == 4
            and len(g.consumers_of(t)) == 1 and t not in g.outputs)


def convs_write_blocked(g: Graph) -> Graph:
    drop: set[str] = set()
    writes: dict[str, str] = {}   # conv name -> the blocked tensor it now writes
    for n in g.nodes:
        if n.op_type != "ToNC1HWC0":
            continue
        conv = g.producer(n.inputs[0])
        if conv is None or not _legal(g, conv, n.inputs[0]):
            continue
        drop.add(n.name)
        writes[conv.name] = n.outputs[0]
        log.info("conv '%s' writes NC1HWC0 itself (no layout conversion)", conv.name)
    if not drop:
        return g
    nodes = [Node(n.name, n.op_type, n.inputs, (writes[n.name],), n.attrs) if n.name in writes else n
             for n in g.nodes if n.name not in drop]
    return g.rewrite(nodes)
