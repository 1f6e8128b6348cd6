"""Squeeze-and-excitation inside the fused DW -> PW block: its math, its operands and the CPU kernel.

  a   = act1(DW(x) + b_dw)                         (storage dtype, as the fused kernel keeps it)
  m   = mean over H, W of a                        (per image, per channel; fp32)
  h   = se_act(W1 m + b1)                          (W1: se_mid x Cin, the SE's reduce 1x1 conv)
  s   = se_gate(W2 h + b2)                         (W2: Cin x se_mid, expand conv; sigmoid / hardsigmoid)
  y   = act2(W_pw (s * a) + b_pw) [+ residual]     (s * a rounded to the storage dtype: the PW's A operand)

The mean needs every pixel of an image before any PW output: the fused kernel runs in two
passes. On the CPU (llvm, and sim's numerics) pass 1 is DW + act1 over the whole image (written
once) with the channel sums, then the tiny MLP, pass 2 scales and runs the PW. On the Ascend
side only the two-phase kernel (schedules/twophase.py) has the barrier it needs.

The SE operands follow the fused node's slopes (passes/fuse_dwsep.FUSED_SE), fp32: w_se1
(se_mid, C1, C0), b_se1 (se_mid,), w_se2 (C1, C0, se_mid), b_se2 (C1, C0), channel tails zero.
"""

from __future__ import annotations

from tvm import s_tir, te, tirx

from fusion.core.ir import C0
from schedules.activations import te_expr
from schedules.dwsep_te import ACC, dwsep_compute
from schedules.workload import DwSepWorkload

def gate_te(x, gate: str):
    """The SE gate on an fp32 TE expression."""
    if gate == "sigmoid":
        return tirx.const(1, ACC) / (tirx.const(1, ACC) + tirx.exp(-x))
    return te_expr(x, gate)


def se_compute(wl: DwSepWorkload):
    """(placeholders in call order, output) of the fused block with SE, NC1HWC0: the DW stages of
    schedules/dwsep_te, then the channel sums, the MLP, the scale and the PW."""
    if not wl.se:
        raise ValueError(f"{wl.describe()} has no squeeze-and-excitation")
    args, _ = dwsep_compute(wl)
    x, w_dw, b_dw, w_pw, b_pw, *rest = args[:-1]
    res = rest.pop() if wl.residual else None
    slopes = rest
    dw_act = _stage(args[-1], "dw_act")
    n_, c1, oh, ow, co1, dt, r = wl.batch, wl.c1, wl.out_height, wl.out_width, wl.co1, wl.dtype, wl.se_mid
    w1 = te.placeholder((r, c1, C0), ACC, name="w_se1")
    b1 = te.placeholder((r,), ACC, name="b_se1")
    w2 = te.placeholder((c1, C0, r), ACC, name="w_se2")
    b2 = te.placeholder((c1, C0), ACC, name="b_se2")
    ri, rj = te.reduce_axis((0, oh), name="ri"), te.reduce_axis((0, ow), name="rj")
    csum = te.compute((n_, c1, C0), lambda b, c, k: te.sum(dw_act[b, c, ri, rj, k].astype(ACC), axis=[ri, rj]),
                      name="se_sum")
    inv = 1.0 / (oh * ow)
    rc1, rc0 = te.reduce_axis((0, c1), name="sc1"), te.reduce_axis((0, C0), name="sc0")
    pre1 = te.compute((n_, r), lambda b, q: te.sum(csum[b, rc1, rc0] * w1[q, rc1, rc0], axis=[rc1, rc0]),
                      name="se_fc1")
    hid = te.compute((n_, r), lambda b, q: te_expr(pre1[b, q] * tirx.const(inv, ACC) + b1[q], wl.se_act),
                     name="se_hid")
    rq = te.reduce_axis((0, r), name="sq")
    pre2 = te.compute((n_, c1, C0), lambda b, c, k: te.sum(hid[b, rq] * w2[c, k, rq], axis=[rq]), name="se_fc2")
    scale = te.compute((n_, c1, C0), lambda b, c, k: gate_te(pre2[b, c, k] + b2[c, k], wl.se_gate),
                       name="se_scale")
    scaled = te.compute((n_, c1, oh, ow, C0), lambda b, c, i, j, k: (
        dw_act[b, c, i, j, k].astype(ACC) * scale[b, c, k]).astype(dt), name="se_apply")
    rk1, rk0 = te.reduce_axis((0, c1), name="rc1"), te.reduce_axis((0, C0), name="rc0")
    pw = te.compute((n_, co1, oh, ow, C0), lambda b, o, i, j, k: te.sum(
        scaled[b, rk1, i, j, rk0].astype(ACC) * w_pw[o, rk1, rk0, k].astype(ACC), axis=[rk1, rk0]), name="pw")
    s_pw = slopes[-1] if slopes and slopes[-1].op.name == "s_pw" else None

    def epilogue(b, o, i, j, k):
        y = te_expr(pw[b, o, i, j, k] + b_pw[o, k], wl.act2, s_pw[o, k] if s_pw is not None else None)
        if res is not None:
            y = y + res[b, o, i, j, k].astype(ACC)
        return y.astype(dt)

    out = te.compute((n_, co1, oh, ow, C0), epilogue, name="out")
    params = [x, w_dw, b_dw, w_pw, b_pw, *slopes, w1, b1, w2, b2] + ([res] if res is not None else []) + [out]
    return params, out


def _stage(t, name: str):
    """The stage called `name` that `t` reads, directly or not."""
    seen, todo = set(), [t]
    while todo:
        cur = todo.pop()
        if cur.op.name == name:
            return cur
        for u in cur.op.input_tensors:
            if u.op.name not in seen:
                seen.add(u.op.name)
                todo.append(u)
    raise KeyError(name)


def schedule_se(wl: DwSepWorkload) -> s_tir.Schedule:
    """The CPU kernel in two passes: pass 1 DW + act1 per (image, channel block) row in parallel,
    written once; the sums and the MLP (tiny); pass 2 the scale and the PW per (image, output
    block, row) in parallel, C0 lanes vectorized."""
    params, _ = se_compute(wl)
    sch = s_tir.Schedule(te.create_prim_func(params))
    sch.compute_inline(sch.get_sblock("pad"))
    dwa = sch.get_sblock("dw_act")
    b, c, i, j, k = sch.get_loops(dwa)
    sch.parallel(sch.fuse(b, c, i))
    sch.vectorize(k)
    dw = sch.get_sblock("dw")
    sch.compute_at(dw, j, preserve_unit_loops=True)
    sch.vectorize(sch.get_loops(dw)[-3])   # c0, before the taps (kh, kw)
    out = sch.get_sblock("out")
    b, o, i, j, k = sch.get_loops(out)
    sch.parallel(sch.fuse(b, o, i))
    sch.vectorize(k)
    sch.compute_at(sch.get_sblock("pw"), j, preserve_unit_loops=True)
    app = sch.get_sblock("se_apply")
    b, c, i, j, k = sch.get_loops(app)
    sch.parallel(sch.fuse(b, c, i))
    sch.vectorize(k)
    return sch
