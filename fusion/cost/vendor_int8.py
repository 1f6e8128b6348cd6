"""Vendor-like int8 baseline of a quantized (QDQ) model: the kernels an ATC-compiled network
quantized by the vendor's tool would run, one per layer, MODELED with the primitives of
fusion/cost/vendor_baseline.py.

The vendor's quantization tool wraps each quantized convolution in AscendQuant (float -> int8)
before and AscendDequant (int32 -> float, deq_scale = scale_x * scale_w) after; the graph
compiler's fusion switches merge depthwise + dequant + (relu) + quant and conv + dequant + quant
into the conv kernels (on 310P dequant + quant into requant). The baseline takes that most
favourable placement: every quantized conv is one kernel reading and writing int8 --
  conv   int8 implicit GEMM on the cube (vendor_baseline.gemm_kernel with dtype int8: K in 32-wide
         DataBlocks, the int8 fractal, the output int8; 910B requantizes in the Fixpipe, 310P
         on the L0C -> UB move and the vector unit);
  dwconv int8 depthwise on the vector unit with the same instruction counts as the fused kernel's
         DW half (schedules/quant_plan.dw_int8_work), one kernel;
so a QDwSep costs a DW kernel and a 1x1 conv kernel with the int8 intermediate through GM/L2.
QAdd (QLinearAdd) is an int8 element-wise kernel; QuantizeLinear / DequantizeLinear left in the
graph are AscendQuant / AscendDequant element-wise kernels; GlobalAveragePool and Gemm run as the
fp16 baseline runs them; the network input is converted by a TransData kernel. The fused int8
network runs the same kernels for every node but its QDwSep blocks.
"""

from __future__ import annotations

from fusion.core.ir import Graph, Node, c0_of, ceil_div
from fusion.core.soc import SocSpec
from fusion.cost.primitives import ACC_BYTES, vec_op
from fusion.cost.baseline import time_program
from fusion.cost.vendor_baseline import VendorKernel, VendorNetwork, gemm_kernel, layer_kernel
from schedules.baseline_program import vector_program
from fusion.cost.vendor_layers import Layer
from schedules.l2 import produced_in_l2
from schedules.quant_plan import Int8Workload, dw_int8_work, int8_workload

I8 = "int8"
C0_I8 = c0_of(I8)
QADD_PASSES = 14   # 2 x (Cast in x2, - zp, * ratio), Add, Maxs, Mins, Cast RINT, + zp, Cast out
QUANT_PASSES = 4   # AscendQuant: Muls, Adds, Cast RINT, Cast -> int8 (half)
DEQUANT_PASSES = 3  # AscendDequant: Cast -> half, Adds -zp, Muls



def _vector_kernel(soc: SocSpec, name: str, kind: str, members, units: int, in_bytes: float, out_bytes: float,
                   work, n_in: int = 1, in_hit: float = 0.0) -> VendorKernel:
    """An int8 vector kernel as the vendor-like programs run one (schedules/baseline_program.
    vector_program on the step simulator): `units` equal rows, work(rows) per row group."""
    units = max(1, units)
    prog = vector_program(soc, name, kind, members, units, ceil_div(int(in_bytes), units * n_in),
                          ceil_div(int(out_bytes), units), 1, 1, I8, n_in, in_hit >= 1.0, work=work)
    return time_program(soc, prog)

def _nc1hwc0_bytes(shape, c0: int, e: int) -> float:
    n, c, *hw = (int(v) for v in shape)
    px = 1
    for v in hw:
        px *= v
    return float(n * ceil_div(c, c0) * c0 * px * e)


def dw_int8_kernel(soc: SocSpec, name: str, wl: Int8Workload, members=()) -> VendorKernel:
    """The int8 depthwise kernel (requant fused): per output row of one 32-channel block, the
    fused kernel's DW counts for a one-row tile."""
    kh, kw = wl.kernel
    sh = wl.stride[0]
    units = wl.batch * wl.c1 * wl.out_h
    iw = wl.width + wl.pads[1] + wl.pads[3]
    halo = 1.0 + max(0, kh - sh) / max(1, sh * min(wl.out_h, ceil_div(units, soc.vector_cores)))
    out = float(wl.batch * wl.c1 * C0_I8 * wl.out_h * wl.out_w)
    in_l2 = produced_in_l2(soc, wl.in_bytes, False)
    return _vector_kernel(soc, name, "dwconv", members or (name,), units, wl.in_bytes * halo, out,
                          lambda r: dw_int8_work(soc, r, wl.out_w, (r - 1) * sh + kh, iw, kh, kw, wl.stride[1]),
                          in_hit=1.0 if in_l2 else 0.0)


def conv_int8_kernel(soc: SocSpec, name: str, batch: int, cin: int, cout: int, h: int, w: int,
                     oh: int, ow: int, kh: int, kw: int, members=()) -> VendorKernel:
    """An int8 conv (dequant + quant fused): the int8 implicit GEMM."""
    in_bytes = float(batch * ceil_div(cin, C0_I8) * C0_I8 * h * w)
    k = ceil_div(cin * kh * kw, C0_I8) * C0_I8 if cin < C0_I8 else ceil_div(cin, C0_I8) * C0_I8 * kh * kw
    return gemm_kernel(soc, name, batch * oh * ow, k, cout, I8, a_unique=in_bytes, a_fmap=True,
                       kind="conv", members=members or (name,), a_in_l2=produced_in_l2(soc, in_bytes, False))


def block_int8_kernels(soc: SocSpec, wl: Int8Workload, members: tuple[str, str]) -> tuple[VendorKernel, VendorKernel]:
    """The vendor-like DW and PW int8 kernels a fused int8 block replaces."""
    dw = dw_int8_kernel(soc, members[0], wl, (members[0],))
    pw = conv_int8_kernel(soc, members[1], wl.batch, wl.cin, wl.cout, wl.out_h, wl.out_w, wl.out_h,
                          wl.out_w, 1, 1, (members[1],))
    return dw, pw


def _eltwise(soc: SocSpec, name: str, shape, in_e: int, out_e: int, n_in: int, passes: int,
             width: int) -> VendorKernel:
    n, c, h, w = (int(v) for v in shape) if len(shape) == 4 else (int(shape[0]), int(shape[1]), 1, 1)
    c0 = C0_I8 if min(in_e, out_e) == 1 else 16
    units = n * ceil_div(c, c0) * h
    row = w * c0
    in_b = _nc1hwc0_bytes((n, c, h, w), c0, in_e) * n_in
    hit = 1.0 if produced_in_l2(soc, in_b, False) else 0.0
    return _vector_kernel(soc, name, "eltwise", (name,), units, in_b, _nc1hwc0_bytes((n, c, h, w), c0, out_e),
                          lambda r: vec_op(soc, r * row, width) * passes, n_in, hit)


def node_kernels(soc: SocSpec, g: Graph, n: Node) -> tuple[VendorKernel, ...]:
    """The vendor-like kernels of one node of a quant_fuse'd graph (none for a view)."""
    shape = g.types[n.outputs[0]].shape
    if n.op_type == "QDwSep":
        return block_int8_kernels(soc, int8_workload(g, n), tuple(n.attr("members")))
    if n.op_type == "QConv":
        b, cin, h, w = (int(v) for v in g.types[n.inputs[0]].shape)
        _, cout, oh, ow = (int(v) for v in shape)
        kh, kw = n.attr("kernel")
        if n.attr("group") == cin == cout and cin > 1:
            wl = Int8Workload(b, cin, cout, h, w, (kh, kw), tuple(n.attr("strides")), tuple(n.attr("pads")))
            return (dw_int8_kernel(soc, n.name, wl),)
        return (conv_int8_kernel(soc, n.name, b, cin, cout, h, w, oh, ow, kh, kw),)
    if n.op_type == "QAdd":
        return (_eltwise(soc, n.name, shape, 1, 1, 2, QADD_PASSES, ACC_BYTES),)
    if n.op_type == "QuantizeLinear":
        return (_eltwise(soc, n.name, shape, 2, 1, 1, QUANT_PASSES, 2),)
    if n.op_type == "DequantizeLinear":
        return (_eltwise(soc, n.name, shape, 1, 2, 1, DEQUANT_PASSES, 2),)
    if n.op_type in ("GlobalAveragePool", "AveragePool", "MaxPool", "GlobalMaxPool"):
        b, c, h, w = (int(v) for v in g.types[n.inputs[0]].shape)
        return (layer_kernel(soc, Layer("pool", n.name, b, c, c, h, w, int(shape[2]), int(shape[3]), h, w,
                                        members=(n.name,))),)
    if n.op_type == "Gemm":
        b, k = (int(v) for v in g.types[n.inputs[0]].shape)
        return (layer_kernel(soc, Layer("gemm", n.name, b, k, int(shape[1]), 1, 1, 1, 1, members=(n.name,))),)
    if n.op_type in ("Flatten", "Reshape", "Identity", "Squeeze", "Unsqueeze"):
        return ()
    # anything else: one fp16 element-wise kernel
    return (_eltwise(soc, n.name, shape if len(shape) in (2, 4) else (1, int(max(1, len(shape)))), 2, 2, 1, 1, 2),)


def input_transdata(soc: SocSpec, g: Graph) -> tuple[VendorKernel, ...]:
    """NCHW -> NC1HWC0 of the network input (as the fp16 baseline converts it)."""
    out = []
    for t in g.inputs:
        shape = g.types[t].shape
        if len(shape) == 4:
            b, c, h, w = (int(v) for v in shape)
            out.append(layer_kernel(soc, Layer("transdata", f"{t}_transdata", b, c, c, h, w, h, w)))
    return tuple(out)


def int8_network(soc: SocSpec, g: Graph) -> VendorNetwork:
    """The vendor-like int8 network of a quant_fuse'd graph, kernel by kernel (MODELED)."""
    ks = list(input_transdata(soc, g))
    for n in g.nodes:
        ks += node_kernels(soc, g, n)
    return VendorNetwork(soc.name, I8, tuple(ks))
