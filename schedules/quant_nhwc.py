"""int8 kernels of the VNNI CPU path, channels-last: TE computes (schedules/quant_nhwc_schedule.py
schedules them). Each reads and writes NCHW or NHWC buffers (schedules/quant_layout.py decides
which), with the numerics of schedules/quant_ops.py (ORT's QLinearConv / QLinearAdd).

dense conv (group 1, any kernel, stride, padding, dilation) on vpdpbusd:
    pack[n, hp, wp, cp]  uint8 input tile, spatial padding = x_zp (+128 for int8 activations,
                         whose shift is folded into the bias), channels padded to 4 with zeros
    acc[n, y, x, ob, oi] Σ over (ky, kx, c/4, 4) of pack · w[ob, ky, kx, c/4, oi, 4]   (int32)
    y                    requant(acc + bias, mult) stored in the output layout
depthwise conv: the taps accumulate in int32 vectorised over channels (no VNNI needed).
QDwSep: the DW rows are requantized straight into the PW's packed tile (the intermediate exists
    only as that tile), then the dense 1×1 kernel above.
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from schedules.quant_ops import conv_constants

I32, F32, U8 = "int32", "float32", "uint8"


def phys(shape, nhwc: bool) -> tuple[int, ...]:
    """The buffer shape of a logical NCHW shape."""
    n, c, h, w = (int(v) for v in shape)
    return (n, h, w, c) if nhwc else (n, c, h, w)


def at(buf, nhwc: bool, i, c, y, z):
    return buf[i, y, z, c] if nhwc else buf[i, c, y, z]


def out_compute(shape, nhwc: bool, fn, name: str | None = None):
    """te.compute over the buffer shape of logical `shape`; fn takes logical (i, c, y, z). The
    conv kernels' output block is "y" when NHWC, "yc" when NCHW (their schedules read which)."""
    name = name or ("y" if nhwc else "yc")
    if nhwc:
        return te.compute(phys(shape, True), lambda i, y, z, c: fn(i, c, y, z), name=name)
    return te.compute(tuple(int(v) for v in shape), fn, name=name)


def requant(acc, mult, lo: int, hi: int, zp: int, dtype: str):
    """ORT's requantization (schedules/quant_ops._requant), through clamp_round."""
    return clamp_round(acc.astype(F32) * mult, lo, hi, zp, dtype)


ROUND_MAGIC = 12582912.0   # 1.5·2^23: f + it has ulp 1 for |f| < 2^22, its bits 0x4B400000 + round(f)


def clamp_round(f, lo: int, hi: int, zp: int, dtype: str):
    """nearbyint(clamp(f, lo − zp, hi − zp)) + zp as dtype (QuantizeLinear's order). The rounding
    is the float add of 1.5·2^23 (round half to even, the FPU's mode) read back as an integer:
    exact for the clamped |f| ≤ 255, and LLVM cannot fold it, as it folds float→int32→int8
    into a float→int8 conversion it scalarises on x86 (2-4× slower kernels, measured)."""
    f = tirx.max(tirx.min(f, tirx.const(float(hi - zp), F32)), tirx.const(float(lo - zp), F32))
    r = tirx.reinterpret(I32, f + tirx.const(ROUND_MAGIC, F32)) - tirx.const(0x4B400000 - zp, I32)
    return r.astype(dtype)


def _out_hw(h: int, w: int, a: dict) -> tuple[int, int]:
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["kernel"], a["strides"], a["dilations"], a["pads"]
    return (h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (w + pl + pr - dw * (kw - 1) - 1) // sw + 1


def _c4(c: int) -> int:
    return -(-c // 4) * 4


def _o16(o: int) -> int:
    return -(-o // 16) * 16


# --- dense conv on vpdpbusd ------------------------------------------------------------------
def pack_dense(w: np.ndarray, b: np.ndarray, a: dict, x_dtype: str):
    """(weights [O/16, kh, kw, C/4, 16, 4] int8, bias b − (x_zp + shift)·Σw (O,), mult (O,))."""
    o, c, kh, kw = w.shape
    wz = w.astype(np.int32) - np.asarray(a["w_zp"], np.int32).reshape(-1, 1, 1, 1)
    zp = int(a["x_zp"]) + (128 if x_dtype == "int8" else 0)
    bias = b.astype(np.int64) - zp * wz.reshape(o, -1).sum(axis=1)
    if np.abs(bias).max(initial=0) >= 2 ** 31:
        raise OverflowError("folded bias leaves int32")
    op, cp = _o16(o), _c4(c)
    wp = np.zeros((op, cp, kh, kw), np.int8)
    wp[:o, :c] = wz
    wp = wp.reshape(op // 16, 16, cp // 4, 4, kh, kw).transpose(0, 4, 5, 2, 1, 3)
    return np.ascontiguousarray(wp), bias.astype(np.int32), np.asarray(a["mult"], np.float32)


def direct(x_nhwc: bool, c: int, a: dict, x_dtype: str) -> bool:
    """Whether the packed tile is a plain copy of the input (the accumulation reads x itself)."""
    return x_nhwc and x_dtype == U8 and c % 4 == 0 and not any(a["pads"])


def _pack(read, n: int, c: int, h: int, w: int, a: dict, x_dtype: str, name: str):
    """The uint8 operand tile over the padded input (read(i, ci, y, z): the stored value)."""
    pt, pl, pb, pr = a["pads"]
    shift = 128 if x_dtype == "int8" else 0
    fill = tirx.const(int(a["x_zp"]) + shift, U8)

    def val(i, y, z, ci):
        v = read(i, ci, y - pt, z - pl)
        v = v if shift == 0 and v.dtype == U8 else (v.astype(I32) + shift).astype(U8)
        inside = tirx.all(y >= pt, y < h + pt, z >= pl, z < w + pl) if any(a["pads"]) else None
        if c % 4:
            v = tirx.if_then_else(ci < c, v, tirx.const(0, U8)) if inside is None else tirx.if_then_else(
                ci < c, tirx.if_then_else(inside, v, fill), tirx.const(0, U8))
        elif inside is not None:
            v = tirx.if_then_else(inside, v, fill)
        return v
    return te.compute((n, h + pt + pb, w + pl + pr, _c4(c)), val, name=name)


def _dense_acc(pack, o: int, oh: int, ow: int, a: dict, prefix: str):
    n, _, _, cp = (int(v) for v in pack.shape)
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["strides"], a["dilations"]
    wp = te.placeholder((_o16(o) // 16, kh, kw, cp // 4, 16, 4), "int8", name=f"{prefix}w")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    k4 = te.reduce_axis((0, cp // 4), "k4")
    ki = te.reduce_axis((0, 4), "ki")
    acc = te.compute((n, oh, ow, _o16(o) // 16, 16), lambda i, y, z, ob, oi: te.sum(
        pack[i, y * sh + ry * dh, z * sw + rx * dw, k4 * 4 + ki].astype(I32)
        * wp[ob, ry, rx, k4, oi, ki].astype(I32), axis=[ry, rx, k4, ki]), name=f"{prefix}_vacc")
    return acc, wp


def dense_conv(x, x_nhwc: bool, shape, x_dtype: str, a: dict, out_nhwc: bool, w_np, b_np):
    """QConv group 1 → (y, [w, b, m] placeholders, their constants)."""
    n, c, h, w = (int(v) for v in shape)
    o = int(w_np.shape[0])
    oh, ow = _out_hw(h, w, a)
    pack = _pack(lambda i, ci, y, z: at(x, x_nhwc, i, ci, y, z), n, c, h, w, a, x_dtype, "pw_pack")
    acc, wp = _dense_acc(pack, o, oh, ow, a, "pw")
    b = te.placeholder((o,), I32, name="pwb")
    m = te.placeholder((o,), F32, name="pwm")
    y = out_compute((n, o, oh, ow), out_nhwc, lambda i, co, yy, z: requant(
        acc[i, yy, z, co // 16, co % 16] + b[co], m[co], a["lo"], a["hi"], a["y_zp"], a["y_dtype"]))
    return y, [wp, b, m], list(pack_dense(w_np, b_np, a, x_dtype))


# --- depthwise ---------------------------------------------------------------------------------
def dw_constants(w: np.ndarray, b: np.ndarray, a: dict, cpad: int):
    """(w − w_zp as [kh, kw, cpad] int32, folded bias (cpad,), mult (cpad,)); padded channels 0."""
    wz, bias = conv_constants(w, b, a)
    c, _, kh, kw = wz.shape
    wd = np.zeros((kh, kw, cpad), np.int32)
    wd[:, :, :c] = wz[:, 0].transpose(1, 2, 0)
    bp = np.zeros(cpad, np.int32)
    bp[:c] = bias
    mp = np.zeros(cpad, np.float32)
    mp[:c] = np.asarray(a["mult"], np.float32)
    return [wd, bp, mp]


def _dw_acc(x, x_nhwc: bool, shape, a: dict, cpad: int):
    """int32 depthwise accumulator [n, oh, ow, cpad] (+ bias) and its placeholders."""
    n, c, h, w = (int(v) for v in shape)
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, _, _) = a["kernel"], a["strides"], a["dilations"], a["pads"]
    oh, ow = _out_hw(h, w, a)
    xzp = tirx.const(int(a["x_zp"]), x.dtype)

    def padded(i, y, z, ci):
        v = at(x, x_nhwc, i, ci, y - pt, z - pl)
        conds = ([y >= pt, y < h + pt, z >= pl, z < w + pl] if any(a["pads"]) else []) + (
            [ci < c] if cpad != c else [])
        return tirx.if_then_else(tirx.all(*conds), v, xzp) if conds else v
    # the padded input rows (x_zp outside, as the float conv reads 0), so the taps branch not
    xp = te.compute((n, h + a["pads"][0] + a["pads"][2], w + pl + a["pads"][3], cpad), padded, name="dw_pad")

    def tap(i, y, z, ci):
        return xp[i, y, z, ci].astype(I32)
    wd = te.placeholder((kh, kw, cpad), I32, name="dww")
    b = te.placeholder((cpad,), I32, name="dwb")
    m = te.placeholder((cpad,), F32, name="dwm")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    acc = te.compute((n, oh, ow, cpad), lambda i, y, z, ci: te.sum(
        tap(i, y * sh + ry * dh, z * sw + rx * dw, ci) * wd[ry, rx, ci], axis=[ry, rx]), name="dw_acc")
    return acc, [wd, b, m], (oh, ow)


def dw_conv(x, x_nhwc: bool, shape, a: dict, out_nhwc: bool, w_np, b_np):
    """Depthwise QConv → (y, placeholders, constants)."""
    n, c = int(shape[0]), int(shape[1])
    acc, phs, (oh, ow) = _dw_acc(x, x_nhwc, shape, a, c)
    _, b, m = phs
    y = out_compute((n, c, oh, ow), out_nhwc, lambda i, ci, yy, z: requant(
        acc[i, yy, z, ci] + b[ci], m[ci], a["lo"], a["hi"], a["y_zp"], a["y_dtype"]))
    return y, phs, dw_constants(w_np, b_np, a, c)


def dwsep(x, x_nhwc: bool, shape, ad: dict, ap: dict, out_nhwc: bool, w1, b1, w2, b2, residual=None):
    """QDwSep: DW rows requantized into the PW's packed tile → (y, placeholders, constants).
    residual: (skip placeholder, its nhwc, the QAdd attrs, block_is_a) — the block's requantized
    output and the skip added in the epilogue as ORT's QLinearAdd (passes/quant_residual)."""
    n, c = int(shape[0]), int(shape[1])
    cp = _c4(c)
    acc1, ph1, (oh, ow) = _dw_acc(x, x_nhwc, shape, ad, cp)
    _, b1p, m1p = ph1
    mid_dt = ad["y_dtype"]
    shift = 128 if mid_dt == "int8" else 0
    # padded channels hold junk-free values (weights and bias 0); their PW weights are 0 too
    pack = te.compute((n, oh, ow, cp), lambda i, y, z, ci: (requant(
        acc1[i, y, z, ci] + b1p[ci], m1p[ci], ad["lo"], ad["hi"], ad["y_zp"], mid_dt).astype(I32)
        + shift).astype(U8), name="pw_pack")
    o = int(w2.shape[0])
    acc2, wp = _dense_acc(pack, o, oh, ow, ap, "pw")
    b = te.placeholder((o,), I32, name="pwb")
    m = te.placeholder((o,), F32, name="pwm")
    def block(i, co, yy, z, dtype=ap["y_dtype"]):
        return requant(acc2[i, yy, z, co // 16, co % 16] + b[co], m[co], ap["lo"], ap["hi"], ap["y_zp"], dtype)
    if residual is None:
        y = out_compute((n, o, oh, ow), out_nhwc, block)
    else:
        skip, skip_nhwc, qa, block_is_a = residual
        ys = np.float32(qa["y_scale"])
        ra, rb = float(np.float32(qa["a_scale"]) / ys), float(np.float32(qa["b_scale"]) / ys)

        def added(i, co, yy, z):
            q = block(i, co, yy, z, I32)     # the block's int8 output, as the QAdd reads it
            s = at(skip, skip_nhwc, i, co, yy, z).astype(I32)
            a, bb = (q, s) if block_is_a else (s, q)
            f = ((a - qa["a_zp"]).astype(F32) * tirx.const(ra, F32)
                 + (bb - qa["b_zp"]).astype(F32) * tirx.const(rb, F32))
            return clamp_round(f, qa["lo"], qa["hi"], qa["y_zp"], qa["y_dtype"])
        y = out_compute((n, o, oh, ow), out_nhwc, added)
    consts = dw_constants(w1, b1, ad, cp) + list(pack_dense(w2, b2, ap, mid_dt))
    return y, [*ph1, wp, b, m], consts



# --- QGemm (passes/quant_gemm.py) ---------------------------------------------------------------
def gemm(x, x_dtype: str, a: dict, w_np, b_np, vnni: bool):
    """QGemm of x (N, K) → (y (N, O), placeholders, constants): the 1×1 dense kernel above on
    vpdpbusd, or a plain int32 dot product where VNNI is absent or the weights do not fit int8."""
    n, k = (int(v) for v in x.shape)
    o = int(w_np.shape[0])
    a = {**a, "kernel": (1, 1), "strides": (1, 1), "dilations": (1, 1), "pads": (0, 0, 0, 0), "group": 1}
    w4 = np.asarray(w_np).reshape(o, k, 1, 1)
    b = te.placeholder((o,), I32, name="pwb")
    m = te.placeholder((o,), F32, name="pwm")
    if vnni:
        pack = _pack(lambda i, ci, y, z: x[i, ci], n, k, 1, 1, a, x_dtype, "pw_pack")
        acc, wp = _dense_acc(pack, o, 1, 1, a, "pw")
        y = te.compute((n, o), lambda i, co: requant(acc[i, 0, 0, co // 16, co % 16] + b[co], m[co], a["lo"],
                                                     a["hi"], a["y_zp"], a["y_dtype"]), name="y")
        return y, [wp, b, m], list(pack_dense(w4, b_np, a, x_dtype))
    wz, bias = conv_constants(w4, b_np, a)
    wt = te.placeholder((o, k), wz.dtype.name, name="pww")
    rk = te.reduce_axis((0, k), "rk")
    acc = te.compute((n, o), lambda i, co: te.sum(x[i, rk].astype(I32) * wt[co, rk].astype(I32), axis=rk),
                     name="pw_acc")
    y = te.compute((n, o), lambda i, co: requant(acc[i, co] + b[co], m[co], a["lo"], a["hi"], a["y_zp"],
                                                 a["y_dtype"]), name="y")
    return y, [wt, b, m], [wz.reshape(o, k), bias, np.asarray(a["mult"], np.float32)]
