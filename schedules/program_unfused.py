"""The vector ops of the retired closed-form unfused DW kernel and PW epilogue (fusion/cost/unfused.py,
removed in issue 30: the unfused baseline is the vendor-like programs of schedules/baseline_program.py).
Only fusion/cost/fused.py's _dw_vector_work / _pw_epilogue_work still import them, and nothing calls
those any more; they go with this module once the branches editing fused.py are merged.
"""

from __future__ import annotations

from functools import lru_cache

from fusion.core.ir import C0
from schedules.activations import needs_slope
from schedules.isa import ACC_BYTES, ACT_OPS, VecWork, itemsize, vec_op
from schedules.loops import window_span
from schedules.dw_forms import _tap_ops
from schedules.steps import VectorOp, total_work  # noqa: F401  (total_work: re-exported)


def _act_work(soc, act: str, pixels: int, blocks: int) -> VecWork:
    """An activation over `blocks` channel blocks of `pixels` pixels: one op over them all, or for
    a per-channel one (PreluBlock of the Ascend C kernels) its ACT_OPS instructions per block and
    per MAX_REPEAT pixels, one pixel (16 fp32 lanes) a repeat, as the bias add reads its vector."""
    if not needs_slope(act):
        return vec_op(soc, blocks * pixels * C0, ACC_BYTES) * ACT_OPS[act]
    return VecWork(blocks * -(-pixels // soc.max_repeat), blocks * pixels) * ACT_OPS[act]


@lru_cache(maxsize=65536)
def dw_vector_ops(soc, dtype: str, kernel: tuple[int, int], act1: str, th: int, tw: int, cb: int,
                  pad_elems: int, epilogue: bool = True, stride: tuple[int, int] = (1, 1)) -> tuple[VectorOp, ...]:
    """The DW of cb channel blocks of a th x tw tile: padding fill, kh·kw multiply-adds per output
    row (isa.dw_taps: what the Ascend C of each arch issues), then (epilogue) bias and act1,
    and the cast to the storage dtype. The unfused DW kernel counts the same ops."""
    kh, kw = kernel
    b = itemsize(dtype)
    n = th * tw * C0
    ops = []
    if pad_elems:
        w = vec_op(soc, pad_elems, b, rows=cb)
        ops.append(VectorOp("pad", "x_tile", cb * pad_elems, w.instrs, w.repeats))
    ops += _tap_ops(soc, b, th, tw, cb, kernel, stride[0], window_span(tw, stride[1], kw))
    if epilogue:
        w = vec_op(soc, n, ACC_BYTES, rows=cb)
        ops.append(VectorOp("bias1", "dw_acc", cb * n, w.instrs, w.repeats))
        if ACT_OPS[act1]:
            w = _act_work(soc, act1, th * tw, cb)
            ops.append(VectorOp("act1", "dw_acc", cb * n, w.instrs, w.repeats))
    if b != ACC_BYTES:
        w = vec_op(soc, cb * n, ACC_BYTES)
        ops.append(VectorOp("cast", "dw_out", cb * n, w.instrs, w.repeats))
    return tuple(ops)


@lru_cache(maxsize=65536)
def epilogue_vector_ops(soc, dtype: str, act2: str, pixels: int, cbo: int, acc: str = "pw_acc",
                        bias_act: bool = True, residual: bool = False) -> tuple[VectorOp, ...]:
    """The PW epilogue of cbo output blocks of `pixels` pixels in `acc`: (bias_act) bias and act2,
    the cast to the storage dtype, (residual) + the residual. The unfused PW kernels count the same."""
    b = itemsize(dtype)
    n = pixels * C0
    ops = []
    if bias_act:
        w = vec_op(soc, n, ACC_BYTES, rows=cbo)
        ops.append(VectorOp("bias2", acc, cbo * n, w.instrs, w.repeats))
        if ACT_OPS[act2]:
            w = _act_work(soc, act2, pixels, cbo)
            ops.append(VectorOp("act2", acc, cbo * n, w.instrs, w.repeats))
    if b != ACC_BYTES:
        w = vec_op(soc, cbo * n, ACC_BYTES)
        ops.append(VectorOp("cast", "y_tile", cbo * n, w.instrs, w.repeats))
    if residual:
        w = vec_op(soc, cbo * n, b)
        ops.append(VectorOp("residual", "y_tile", cbo * n, w.instrs, w.repeats))
    return tuple(ops)
