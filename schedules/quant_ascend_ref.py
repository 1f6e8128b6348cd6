"""The fused int8 DW->PW block with the Ascend kernel's arithmetic (schedules/quant_plan.py's module
doc), in NumPy: the exactness claims of the modeled kernel, checked against ONNX Runtime by
tests/schedules/test_quant_ascend_ref.py. The kernels that are emitted for 310P and 910B
(fusion/codegen/ascendc/emit_int8.py) use "fixpipe"'s float32 order for their epilogue: exact.

  DW      the stored integers as float32 (x and w - w_zp), one fused multiply-add per tap in tap
          order (MulAddDst), Cast -> int32, + the int32 bias with x_zp folded in (as
          schedules/quant_ops.conv_constants), requant in float32: * mult, clamp, rint, + zp
  PW      int32 accumulation (the int8 cube), + bias; the epilogue
            "fixpipe" float32 * mult, clamp, rint, + zp -- ORT's order (the emitted kernels' vector
                      epilogue; a 910B Fixpipe VREQ8 would match it only if it kept the float32
                      scale and rounded half to even, which is not published)
            "vector"  (310P): L0C -> UB dequantized to half (float32 * mult, rounded to half), + zp
                      in half, Cast half -> int8/uint8 with rint and saturation
"""

from __future__ import annotations

import numpy as np

from fusion.frontend.onnx_ops_quant import QRANGE
from schedules.quant_ops import conv_constants


def _requant_f32(acc: np.ndarray, mult: np.ndarray, lo: int, hi: int, zp: int) -> np.ndarray:
    f = acc.astype(np.float32) * mult.reshape(1, -1, 1, 1).astype(np.float32)
    f = np.clip(f, np.float32(lo - zp), np.float32(hi - zp))
    return np.rint(f).astype(np.int32) + zp


def dw_fp32(xq: np.ndarray, w: np.ndarray, b: np.ndarray, a: dict) -> np.ndarray:
    """The DW half: float32 taps (exact while |acc| < 2^24, asserted), int32 bias, float32 requant."""
    wz, bias = conv_constants(w, b, a)
    n, c, h, wd = xq.shape
    kh, kw = a["kernel"]
    sh, sw = a["strides"]
    pt, pl, pb, pr = a["pads"]
    xp = np.full((n, c, h + pt + pb, wd + pl + pr), a["x_zp"], np.float32)   # padding reads x_zp
    xp[:, :, pt:pt + h, pl:pl + wd] = xq
    oh, ow = (h + pt + pb - kh) // sh + 1, (wd + pl + pr - kw) // sw + 1
    acc = np.zeros((n, c, oh, ow), np.float32)
    wf = wz.astype(np.float32)
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            acc = (acc + tap * wf[:, 0, i, j].reshape(1, -1, 1, 1)).astype(np.float32)
    assert np.abs(acc).max(initial=0) < 2 ** 24, "DW accumulator leaves float32's exact integers"
    acc_i = acc.astype(np.int32) + bias.reshape(1, -1, 1, 1)
    return _requant_f32(acc_i, np.asarray(a["mult"]), a["lo"], a["hi"], a["y_zp"])


def pw_int8(dq: np.ndarray, w: np.ndarray, b: np.ndarray, a: dict, epilogue: str) -> np.ndarray:
    """The PW half: int32 GEMM + bias, then the SoC's epilogue."""
    wz, bias = conv_constants(w, b, a)
    acc = np.einsum("nchw,oc->nohw", dq.astype(np.int64), wz[:, :, 0, 0].astype(np.int64))
    acc = (acc + bias.reshape(1, -1, 1, 1)).astype(np.int32)
    mult = np.asarray(a["mult"], np.float32)
    if epilogue == "fixpipe":
        return _requant_f32(acc, mult, a["lo"], a["hi"], a["y_zp"])
    lo, hi = QRANGE[a["y_dtype"]]
    h = (acc.astype(np.float32) * mult.reshape(1, -1, 1, 1)).astype(np.float16)      # deq on the move
    h = (h + np.float16(a["y_zp"])).astype(np.float16)                               # Adds zp (half)
    q = np.clip(np.rint(h.astype(np.float32)), lo, hi).astype(np.int32)               # Cast RINT, saturate
    return np.clip(q, a["lo"], a["hi"])                                               # narrow clamp (Maxs/Mins)


def qdwsep_ascend(xq: np.ndarray, consts: list[np.ndarray], attrs: dict, epilogue: str) -> np.ndarray:
    """A QDwSep node (passes/quant_fuse.py form) the way the modeled Ascend kernel computes it."""
    w_dw, b_dw, w_pw, b_pw = consts
    dw = {k[3:]: v for k, v in attrs.items() if k.startswith("dw_")}
    pw = {k[3:]: v for k, v in attrs.items() if k.startswith("pw_")}
    return pw_int8(dw_fp32(xq.astype(np.int32), w_dw, b_dw, dw), w_pw, b_pw, pw, epilogue)
