"""The kernel of a quantized node: the NHWC VNNI kernels (schedules/quant_nhwc.py) where this CPU
has VNNI and the node's form allows (schedules/quant_layout.nhwc_node), with the buffers in the
layouts schedules/quant_layout.channels_last chose; else the NCHW kernels of
schedules/quant_ops.py (exact too, slower). QGemm (passes/quant_gemm.py) is always built here."""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from fusion.core.ir import Graph, Node
from fusion.frontend.onnx_ops_quant import QRANGE
from schedules import quant_nhwc as qn
from schedules.op_spec import KernelSpec
from schedules.quant_layout import _attrs, channels_last, conv_form, fits_int8, nhwc_node
from schedules.quant_vnni import has_vnni
from schedules.quant_ops import quant_kernel as nchw_kernel

I32, F32 = "int32", "float32"


def _ph(shape, nhwc: bool, dtype: str, name: str):
    return te.placeholder(qn.phys(shape, nhwc), dtype, name=name)


def _elementwise(n: Node, g: Graph, cl: frozenset) -> KernelSpec:
    shape = g.types[n.inputs[0]].shape
    ins = [_ph(shape, t in cl, g.types[t].dtype, f"in{k}") for k, t in enumerate(n.inputs[:2 if n.op_type == "QAdd" else 1])]
    ins_nhwc = [t in cl for t in n.inputs]
    out_nhwc = n.outputs[0] in cl
    op = n.op_type
    if op == "QuantizeLinear":
        s, zp, dt = np.float32(n.attr("scale")), int(n.attr("zero_point")), n.attr("dtype")
        lo, hi = QRANGE[dt]
        fn = lambda i, c, y, z: qn.clamp_round(   # noqa: E731
            qn.at(ins[0], ins_nhwc[0], i, c, y, z) / tirx.const(float(s), F32), lo, hi, zp, dt)
    elif op == "DequantizeLinear":
        s, zp, dt = np.float32(n.attr("scale")), int(n.attr("zero_point")), F32
        fn = lambda i, c, y, z: ((qn.at(ins[0], ins_nhwc[0], i, c, y, z).astype(I32) - zp).astype(F32)  # noqa: E731
                                 * tirx.const(float(s), F32))
    else:   # QAdd (ORT's QLinearAdd)
        ys = np.float32(n.attr("y_scale"))
        ra, rb = float(np.float32(n.attr("a_scale")) / ys), float(np.float32(n.attr("b_scale")) / ys)
        azp, bzp, yzp = n.attr("a_zp"), n.attr("b_zp"), n.attr("y_zp")
        dt = n.attr("y_dtype")

        def fn(i, c, y, z):
            f = ((qn.at(ins[0], ins_nhwc[0], i, c, y, z).astype(I32) - azp).astype(F32) * tirx.const(ra, F32)
                 + (qn.at(ins[1], ins_nhwc[1], i, c, y, z).astype(I32) - bzp).astype(F32) * tirx.const(rb, F32))
            return qn.clamp_round(f, n.attr("lo"), n.attr("hi"), yzp, dt)
    y = qn.out_compute(shape, out_nhwc, fn, name="y")
    return KernelSpec(n.name, te.create_prim_func([*ins, y]), tuple(n.inputs), tuple(int(v) for v in y.shape),
                      dt, "quant_nhwc_ew")


def _pool(n: Node, g: Graph, cl: frozenset) -> KernelSpec:
    """QLinearGlobalAveragePool's arithmetic (passes/quant_pool.py) on the int32 channel sums."""
    xt = g.types[n.inputs[0]]
    x_nhwc = n.inputs[0] in cl
    x = _ph(xt.shape, x_nhwc, xt.dtype, "x")
    nb, c, h, w = (int(v) for v in xt.shape)
    ry, rx = te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")
    acc = te.compute((nb, c), lambda i, ci: te.sum(qn.at(x, x_nhwc, i, ci, ry, rx).astype(I32), axis=[ry, rx]),
                     name="pool_acc")
    bias = -int(n.attr("x_zp")) * int(n.attr("image"))
    mult = tirx.const(float(n.attr("mult")), F32)
    y = qn.out_compute((nb, c, 1, 1), n.outputs[0] in cl, lambda i, ci, yy, z: qn.requant(
        acc[i, ci] + bias, mult, n.attr("lo"), n.attr("hi"), n.attr("y_zp"), n.attr("y_dtype")), name="y")
    return KernelSpec(n.name, te.create_prim_func([x, y]), (n.inputs[0],), tuple(int(v) for v in y.shape),
                      n.attr("y_dtype"), "quant_nhwc_pool")


def quant_kernel(n: Node, g: Graph, nhwc: bool = True) -> KernelSpec | None:
    """The kernel of a quantized node; None for any other node. nhwc=False: NCHW kernels only (the
    sim/ascend targets, whose int8 blocks the Ascend C check feeds NCHW tensors)."""
    if not nhwc or (n.op_type not in ("QGemm", "QGlobalAvgPool") and not nhwc_node(n, g)):
        return nchw_kernel(n, g)
    cl = channels_last(g)
    if n.op_type in ("QuantizeLinear", "DequantizeLinear", "QAdd"):
        return _elementwise(n, g, cl)
    if n.op_type == "QGlobalAvgPool":
        return _pool(n, g, cl)
    xt = g.types[n.inputs[0]]
    if n.op_type == "QGemm":
        x = te.placeholder(xt.shape, xt.dtype, name="x")
        a, w = _attrs(n), g.constants[n.inputs[1]]
        vnni = has_vnni() and fits_int8(w, a["w_zp"])
        y, phs, consts = qn.gemm(x, xt.dtype, a, w, g.constants[n.inputs[2]], vnni)
        return KernelSpec(n.name, te.create_prim_func([x, *phs, y]), (n.inputs[0], *consts),
                          tuple(int(v) for v in y.shape), a["y_dtype"],
                          "quant_nhwc_gemm_vnni" if vnni else "quant_nhwc_gemm")
    x_nhwc, out_nhwc = n.inputs[0] in cl, n.outputs[0] in cl
    x = _ph(xt.shape, x_nhwc, xt.dtype, "x")
    if n.op_type == "QDwSep":
        ad, ap = _attrs(n, "dw_"), _attrs(n, "pw_")
        residual, skip = None, ()
        if len(n.inputs) == 6:   # passes/quant_residual: the QAdd in the epilogue
            qa = _attrs(n, "add_")
            st = g.types[n.inputs[5]]
            sk = _ph(st.shape, n.inputs[5] in cl, st.dtype, "skip")
            residual, skip = (sk, n.inputs[5] in cl, qa, qa["block_is_a"]), (n.inputs[5],)
        y, phs, consts = qn.dwsep(x, x_nhwc, xt.shape, ad, ap, out_nhwc,
                                  *(g.constants[t] for t in n.inputs[1:5]), residual=residual)
        kind = "quant_nhwc_dwsep_vnni"
        dt = residual[2]["y_dtype"] if residual else ap["y_dtype"]
        return KernelSpec(n.name, te.create_prim_func([x, *phs, *(residual[:1] if residual else ()), y]),
                          (n.inputs[0], *consts, *skip), tuple(int(v) for v in y.shape), dt, kind)
    else:
        a = _attrs(n)
        w, b = g.constants[n.inputs[1]], g.constants[n.inputs[2]]
        if conv_form(a, xt.shape[1]) == "dw":
            y, phs, consts = qn.dw_conv(x, x_nhwc, xt.shape, a, out_nhwc, w, b)
            kind = "quant_nhwc_dw_vnni"
        else:
            y, phs, consts = qn.dense_conv(x, x_nhwc, xt.shape, xt.dtype, a, out_nhwc, w, b)
            kind = ("quant_nhwc_direct_vnni" if qn.direct(x_nhwc, xt.shape[1], a, xt.dtype)
                    else "quant_nhwc_dense_vnni")
        dt = a["y_dtype"]
    return KernelSpec(n.name, te.create_prim_func([x, *phs, y]), (n.inputs[0], *consts),
                      tuple(int(v) for v in y.shape), dt, kind)
