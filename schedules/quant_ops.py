"""TE computes of the int8 operators (passes/quant_fuse.py forms), NCHW, ONNX Runtime semantics.

    QuantizeLinear    y = nearbyint(clamp(x / s, qmin - zp, qmax - zp)) + zp    (MLAS order)
    DequantizeLinear  y = float(int32(q) - zp) * s
    QConv             int32 accumulation of (x - x_zp)·(w - w_zp) plus the int32 bias, requantized
                      as ORT's QLinearConv: nearbyint(clamp(float(acc) * mult[o], lo - y_zp,
                      hi - y_zp)) + y_zp
    QDwSep            the DW QConv's requantized int8 rows feed the 1×1 QConv in the same kernel
    QAdd              ORT's QLinearAdd: nearbyint(clamp(a_ratio·(a - a_zp) + b_ratio·(b - b_zp),
                      ...)) + y_zp with ratio = scale / y_scale

nearbyint rounds half to even (the default rounding mode; LLVM's nearbyint). The zero point of
x is folded into the bias (b - x_zp·Σw, exact in int32: padding reads x_zp, as the float conv
reads 0), so the inner loop multiplies the stored integers.
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from fusion.core.ir import Graph, Node
from fusion.frontend.onnx_ops_quant import QRANGE
from schedules.ops import KernelSpec
from schedules import quant_vnni

I32, F32 = "int32", "float32"


def _ph(shape, dtype, name):
    return te.placeholder(tuple(int(s) for s in shape), dtype, name=name)


def _requant(acc, mult, lo: int, hi: int, zp: int, dtype: str):
    f = acc.astype(F32) * mult
    f = tirx.max(tirx.min(f, tirx.const(float(hi - zp), F32)), tirx.const(float(lo - zp), F32))
    return (tirx.nearbyint(f).astype(I32) + zp).astype(dtype)


def _requant_fn(a: dict):
    return lambda acc, mult: _requant(acc, mult, a["lo"], a["hi"], a["y_zp"], a["y_dtype"])


def conv_constants(w: np.ndarray, b: np.ndarray, a: dict) -> tuple[np.ndarray, np.ndarray]:
    """(w - w_zp) in the narrowest dtype that holds it, and b - x_zp·Σ(w - w_zp) per output."""
    wz = w.astype(np.int32) - np.asarray(a["w_zp"], np.int32).reshape(-1, 1, 1, 1)
    bias = b.astype(np.int64) - int(a["x_zp"]) * wz.reshape(wz.shape[0], -1).sum(axis=1)
    if np.abs(bias).max(initial=0) >= 2 ** 31:
        raise OverflowError("folded bias leaves int32")
    wdt = "int8" if wz.min(initial=0) >= -128 and wz.max(initial=0) <= 127 else "int16"
    return wz.astype(wdt), bias.astype(np.int32)


def _conv_acc(x, w, b, a: dict, name: str):
    """int32 accumulator of a grouped conv of x (N, C, H, W) with x_zp padding."""
    n, c, h, wd = (int(v) for v in x.shape)
    o, cpg, kh, kw = (int(v) for v in w.shape)
    sh, sw = a["strides"]
    dh, dw = a["dilations"]
    pt, pl, pb, pr = a["pads"]
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    xzp = tirx.const(int(a["x_zp"]), x.dtype)
    if any(a["pads"]):
        xp = te.compute((n, c, h + pt + pb, wd + pl + pr), lambda i, ci, y, z: tirx.if_then_else(
            tirx.all(y >= pt, y < h + pt, z >= pl, z < wd + pl), x[i, ci, y - pt, z - pl], xzp),
            name=f"{name}_pad")
    else:
        xp = x
    opg = o // int(a["group"])
    rc = te.reduce_axis((0, cpg), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    acc = te.compute((n, o, oh, ow), lambda i, co, y, z: te.sum(
        xp[i, (co // opg) * cpg + rc, y * sh + ry * dh, z * sw + rx * dw].astype(I32)
        * w[co, rc, ry, rx].astype(I32), axis=[rc, ry, rx]), name=f"{name}_acc")
    return te.compute(acc.shape, lambda i, co, y, z: acc[i, co, y, z] + b[co], name=f"{name}_bias")


def _qconv_te(x, a: dict, prefix: str, w_np, b_np):
    wz, bias = conv_constants(w_np, b_np, a)
    w = _ph(wz.shape, wz.dtype.name, f"{prefix}w")
    b = _ph(bias.shape, I32, f"{prefix}b")
    m = _ph((wz.shape[0],), F32, f"{prefix}m")
    acc = _conv_acc(x, w, b, a, prefix + "conv")
    return acc, (w, b, m), [wz, bias, np.asarray(a["mult"], np.float32)]


def _attrs(n: Node, prefix: str = "") -> dict:
    return {k[len(prefix):]: v for k, v in n.attrs if k.startswith(prefix)}


def quant_kernel(n: Node, g: Graph) -> KernelSpec | None:
    """The kernel of a quantized node; None for any other node."""
    op = n.op_type
    if op == "QuantizeLinear":
        xt = g.types[n.inputs[0]]
        x = _ph(xt.shape, F32, "x")
        s, zp, dt = np.float32(n.attr("scale")), int(n.attr("zero_point")), n.attr("dtype")
        lo, hi = QRANGE[dt]
        y = te.compute(xt.shape, lambda *i: (tirx.nearbyint(tirx.max(tirx.min(
            x[i] / tirx.const(float(s), F32), tirx.const(float(hi - zp), F32)),
            tirx.const(float(lo - zp), F32))).astype(I32) + zp).astype(dt), name="y")
        return KernelSpec(n.name, te.create_prim_func([x, y]), (n.inputs[0],), xt.shape, dt, "quant_ew")
    if op == "DequantizeLinear":
        xt = g.types[n.inputs[0]]
        x = _ph(xt.shape, xt.dtype, "x")
        s, zp = np.float32(n.attr("scale")), int(n.attr("zero_point"))
        y = te.compute(xt.shape, lambda *i: (x[i].astype(I32) - zp).astype(F32)
                       * tirx.const(float(s), F32), name="y")
        return KernelSpec(n.name, te.create_prim_func([x, y]), (n.inputs[0],), xt.shape, F32, "quant_ew")
    if op == "QAdd":
        at = g.types[n.inputs[0]]
        a = _ph(at.shape, at.dtype, "a")
        b = _ph(at.shape, g.types[n.inputs[1]].dtype, "b")
        ys = np.float32(n.attr("y_scale"))
        ra = float(np.float32(n.attr("a_scale")) / ys)
        rb = float(np.float32(n.attr("b_scale")) / ys)
        azp, bzp, yzp = n.attr("a_zp"), n.attr("b_zp"), n.attr("y_zp")
        lo, hi, dt = n.attr("lo"), n.attr("hi"), n.attr("y_dtype")

        def add(*i):
            f = ((a[i].astype(I32) - azp).astype(F32) * tirx.const(ra, F32)
                 + (b[i].astype(I32) - bzp).astype(F32) * tirx.const(rb, F32))
            f = tirx.max(tirx.min(f, tirx.const(float(hi - yzp), F32)), tirx.const(float(lo - yzp), F32))
            return (tirx.nearbyint(f).astype(I32) + yzp).astype(dt)
        y = te.compute(at.shape, add, name="y")
        return KernelSpec(n.name, te.create_prim_func([a, b, y]), tuple(n.inputs), at.shape, dt, "quant_ew")
    if op == "QConv":
        xt = g.types[n.inputs[0]]
        a = _attrs(n)
        x = _ph(xt.shape, xt.dtype, "x")
        w_np, b_np = g.constants[n.inputs[1]], g.constants[n.inputs[2]]
        if quant_vnni.usable(a, w_np):
            y, phs = quant_vnni.pw_compute(lambda *i: x[i], (xt.shape[0], xt.shape[2], xt.shape[3]),
                                           xt.shape[1], xt.dtype, a, _requant_fn(a))
            return KernelSpec(n.name, te.create_prim_func([x, *phs, y]),
                              (n.inputs[0], *quant_vnni.pack_constants(w_np, b_np, a, xt.dtype)),
                              tuple(int(v) for v in y.shape), a["y_dtype"], "quant_conv_vnni")
        acc, phs, consts = _qconv_te(x, a, "", w_np, b_np)
        m = phs[2]
        y = te.compute(acc.shape, lambda i, co, yy, z: _requant(acc[i, co, yy, z], m[co], a["lo"], a["hi"],
                                                                 a["y_zp"], a["y_dtype"]), name="y")
        return KernelSpec(n.name, te.create_prim_func([x, *phs, y]), (n.inputs[0], *consts),
                          tuple(int(v) for v in y.shape), a["y_dtype"], "quant_conv")
    if op == "QDwSep":
        xt = g.types[n.inputs[0]]
        ad, ap = _attrs(n, "dw_"), _attrs(n, "pw_")
        x = _ph(xt.shape, xt.dtype, "x")
        acc1, ph1, c1 = _qconv_te(x, ad, "dw", g.constants[n.inputs[1]], g.constants[n.inputs[2]])
        m1 = ph1[2]
        mid = te.compute(acc1.shape, lambda i, c, yy, z: _requant(acc1[i, c, yy, z], m1[c], ad["lo"], ad["hi"],
                                                                   ad["y_zp"], ad["y_dtype"]), name="mid")
        w2, b2 = g.constants[n.inputs[3]], g.constants[n.inputs[4]]
        if quant_vnni.usable(ap, w2):   # the DW rows' requantized values feed the packed tile directly
            y, ph2 = quant_vnni.pw_compute(
                lambda i, c, yy, z: _requant(acc1[i, c, yy, z], m1[c], ad["lo"], ad["hi"], ad["y_zp"],
                                             ad["y_dtype"]),
                (acc1.shape[0], acc1.shape[2], acc1.shape[3]), int(acc1.shape[1]), ad["y_dtype"], ap,
                _requant_fn(ap))
            return KernelSpec(n.name, te.create_prim_func([x, *ph1, *ph2, y]),
                              (n.inputs[0], *c1, *quant_vnni.pack_constants(w2, b2, ap, ad["y_dtype"])),
                              tuple(int(v) for v in y.shape), ap["y_dtype"], "quant_dwsep_vnni")
        acc2, ph2, c2 = _qconv_te(mid, ap, "pw", w2, b2)
        m2 = ph2[2]
        y = te.compute(acc2.shape, lambda i, co, yy, z: _requant(acc2[i, co, yy, z], m2[co], ap["lo"], ap["hi"],
                                                                  ap["y_zp"], ap["y_dtype"]), name="y")
        return KernelSpec(n.name, te.create_prim_func([x, *ph1, *ph2, y]), (n.inputs[0], *c1, *c2),
                          tuple(int(v) for v in y.shape), ap["y_dtype"], "quant_dwsep")
    return None
