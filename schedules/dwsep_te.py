"""TE compute of the whole fused chain in NC1HWC0 (C0 = 16), one PrimFunc.

Stages (sblock names are part of the schedule contract):
  pad     zero padding of the input (inlined into the per-tile input copy)
  dw      depthwise k×k, fp32 accumulation
  dw_act  + bias1, act1, cast to the storage dtype (the on-chip intermediate)
  pw      1×1 pointwise GEMM over (C1, C0), fp32 accumulation
  out     + bias2, act2, [+ residual], cast
"""

from __future__ import annotations

from tvm import te, tirx

from fusion.core.ir import C0
from schedules.activations import needs_slope, te_expr
from schedules.workload import DwSepWorkload

ACC = "float32"


def activation(x, act: str, slope=None):
    """Elementwise activation on a TE expression (the same formulas as ONNX; schedules/activations)."""
    return te_expr(x, act, slope)


def dwsep_compute(wl: DwSepWorkload, tiled_out: tuple[int, int] | None = None):
    """Returns (placeholders in call order, output tensor).

    `tiled_out` = output extents rounded up to whole tiles: the padded input then covers every
    tile's halo, so the per-tile input copy has a constant size even when tiles do not divide
    the image (otherwise TVM cannot compact the UB tile and copies the whole tensor)."""
    n_, c1, h, w = wl.batch, wl.c1, wl.height, wl.width
    kh, kw = wl.kernel
    sh, sw = wl.stride
    pt, pl, pb, pr = wl.pads
    oh, ow, co1 = wl.out_height, wl.out_width, wl.co1
    dt = wl.dtype

    x = te.placeholder((n_, c1, h, w, C0), dt, name="x")
    w_dw = te.placeholder((c1, kh, kw, C0), dt, name="w_dw")
    b_dw = te.placeholder((c1, C0), ACC, name="b_dw")
    w_pw = te.placeholder((co1, c1, C0, C0), dt, name="w_pw")  # [co1, ci1, ci0, co0]
    b_pw = te.placeholder((co1, C0), ACC, name="b_pw")
    # per-channel slopes (prelu), blocked like the biases; in the argument order of FUSED_SLOPES
    s_dw = te.placeholder((c1, C0), ACC, name="s_dw") if needs_slope(wl.act1) else None
    s_pw = te.placeholder((co1, C0), ACC, name="s_pw") if needs_slope(wl.act2) else None
    res = te.placeholder((n_, co1, oh, ow, C0), dt, name="res") if wl.residual else None

    ph, pw_ = h + pt + pb, w + pl + pr
    if tiled_out is not None:
        ph = max(ph, (tiled_out[0] - 1) * sh + kh)
        pw_ = max(pw_, (tiled_out[1] - 1) * sw + kw)
    pad = te.compute(
        (n_, c1, ph, pw_, C0),
        lambda b, c, i, j, k: tirx.if_then_else(
            tirx.all(i >= pt, i < h + pt, j >= pl, j < w + pl),
            x[b, c, i - pt, j - pl, k], tirx.const(0, dt)),
        name="pad")
    rkh = te.reduce_axis((0, kh), name="rkh")
    rkw = te.reduce_axis((0, kw), name="rkw")
    dw = te.compute(
        (n_, c1, oh, ow, C0),
        lambda b, c, i, j, k: te.sum(
            pad[b, c, i * sh + rkh, j * sw + rkw, k].astype(ACC) * w_dw[c, rkh, rkw, k].astype(ACC),
            axis=[rkh, rkw]),
        name="dw")
    if wl.ln_eps is None:
        dw_act = te.compute(
            (n_, c1, oh, ow, C0),
            lambda b, c, i, j, k: activation(dw[b, c, i, j, k] + b_dw[c, k], wl.act1,
                                             s_dw[c, k] if s_dw is not None else None).astype(dt),
            name="dw_act")
    else:
        dw_act = channel_norm(wl, dw, b_dw)
    rc1 = te.reduce_axis((0, c1), name="rc1")
    rc0 = te.reduce_axis((0, C0), name="rc0")
    pw = te.compute(
        (n_, co1, oh, ow, C0),
        lambda b, o, i, j, k: te.sum(
            dw_act[b, rc1, i, j, rc0].astype(ACC) * w_pw[o, rc1, rc0, k].astype(ACC), axis=[rc1, rc0]),
        name="pw")

    def epilogue(b, o, i, j, k):
        y = activation(pw[b, o, i, j, k] + b_pw[o, k], wl.act2, s_pw[o, k] if s_pw is not None else None)
        if res is not None:
            y = y + res[b, o, i, j, k].astype(ACC)
        return y.astype(dt)

    out = te.compute((n_, co1, oh, ow, C0), epilogue, name="out")
    args = [x, w_dw, b_dw, w_pw, b_pw] + [s for s in (s_dw, s_pw) if s is not None] + \
        ([res] if res is not None else []) + [out]
    return args, out


def channel_norm(wl: DwSepWorkload, dw, b_dw):
    """dw_act of a ConvNeXt block: (dw + b_dw - mean) / sqrt(var + eps) over the Cin channels of each
    pixel (two passes, the padded lanes masked out of both sums and zero in the result)."""
    n_, c1, oh, ow = wl.batch, wl.c1, wl.out_height, wl.out_width
    inv_c = tirx.const(1.0 / wl.cin, ACC)
    zero = tirx.const(0.0, ACC)

    def valid(c, k):
        return c * C0 + k < wl.cin

    r1, r0 = te.reduce_axis((0, c1), name="ln_c1"), te.reduce_axis((0, C0), name="ln_c0")
    ln_sum = te.compute((n_, oh, ow), lambda b, i, j: te.sum(
        tirx.if_then_else(valid(r1, r0), dw[b, r1, i, j, r0] + b_dw[r1, r0], zero), axis=[r1, r0]), name="ln_sum")
    s1, s0 = te.reduce_axis((0, c1), name="ln_s1"), te.reduce_axis((0, C0), name="ln_s0")

    def dev(b, c, i, j, k):
        return dw[b, c, i, j, k] + b_dw[c, k] - ln_sum[b, i, j] * inv_c

    ln_sqdev = te.compute((n_, oh, ow), lambda b, i, j: te.sum(
        tirx.if_then_else(valid(s1, s0), dev(b, s1, i, j, s0) * dev(b, s1, i, j, s0), zero), axis=[s1, s0]),
        name="ln_sqdev")
    eps = tirx.const(wl.ln_eps, ACC)
    return te.compute(
        (n_, c1, oh, ow, C0),
        lambda b, c, i, j, k: tirx.if_then_else(
            valid(c, k), dev(b, c, i, j, k) / tirx.sqrt(ln_sqdev[b, i, j] * inv_c + eps), zero).astype(wl.dtype),
        name="dw_act")


def dwsep_prim_func(wl: DwSepWorkload, tiled_out: tuple[int, int] | None = None):
    args, _ = dwsep_compute(wl, tiled_out)
    return te.create_prim_func(args)
