"""QDwSep → QAdd ⇒ one QDwSep with the residual add in its epilogue (CPU target, NHWC kernels):
the block's requantized int8 output and the skip tensor are added exactly as ORT's QLinearAdd
(schedules/quant_nhwc.dwsep), so the sum costs no kernel launch and no round trip of the block's
output. Applied after quant_fuse on llvm only, where schedules/quant_layout.nhwc_node says the
block runs the NHWC kernel (the NCHW kernels take no residual).

    QDwSep + residual   inputs (xq, w_dw, b_dw, w_pw, b_pw, skip); the QDwSep attrs plus add_*:
                        the QAdd's attrs (a_scale a_zp b_scale b_zp y_scale y_zp y_dtype lo hi)
                        and add_block_is_a (whether the block's output is the QAdd's first input);
                        members (dw, pw, add)
"""

from __future__ import annotations

from fusion.core.ir import Graph, make_node
from schedules.quant_layout import nhwc_node

PASS = "quant_residual"


def quant_residual(g: Graph) -> Graph:
    fused: dict[str, object] = {}
    drop: set[str] = set()
    for add in g.nodes:
        if add.op_type != "QAdd":
            continue
        for k, t in enumerate(add.inputs):
            blk = g.producer(t)
            other = add.inputs[1 - k]
            if (blk is None or blk.op_type != "QDwSep" or blk.name in fused or len(blk.inputs) != 5
                    or g.consumers_of(t) != [add] or t in g.outputs or other == t
                    or not nhwc_node(blk, g)):
                continue
            attrs = dict(blk.attrs)
            attrs["members"] = (*attrs["members"], add.name)
            attrs.update({f"add_{key}": v for key, v in add.attrs})
            attrs["add_block_is_a"] = k == 0
            fused[blk.name] = make_node(blk.name, "QDwSep", [*blk.inputs, other], add.outputs, **attrs)
            drop.add(add.name)
            break
    if not fused:
        return g
    return g.rewrite([fused.get(n.name, n) for n in g.nodes if n.name not in drop])
