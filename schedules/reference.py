"""The NumPy reference of one fused block (tests and the tuner's measured check compare with it).

Logical NCHW arrays: x, w_dw (Cin, 1, kh, kw), b_dw (Cin), w_pw (Cout, Cin, 1, 1), b_pw (Cout)
[, s_dw (Cin) / s_pw (Cout): per-channel slopes of a prelu act1 / act2] [, w_se1, b_se1, w_se2,
b_se2: the SE weights, schedules/se.py] [, the residual is x]; fp64 accumulation, the DW result rounded to the storage dtype as the kernel
keeps it. `kernel_layout_reference` takes the Ascend C kernel's layouts instead.
"""

from __future__ import annotations

import numpy as np

from fusion.core.ir import C0
from schedules.activations import numpy_ref as _act
from schedules.se_math import se_scale_numpy
from schedules.workload import DwSepWorkload, ceil_div


def reference_block(wl: DwSepWorkload, d: dict[str, np.ndarray]) -> np.ndarray:
    """NumPy reference of the fused block in NCHW (fp32 accumulation, storage-dtype intermediate)."""
    x = d["x"].astype(np.float64)
    kh, kw = wl.kernel
    sh, sw = wl.stride
    pt, pl, pb, pr = wl.pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = wl.out_height, wl.out_width
    acc = np.zeros((wl.batch, wl.cin, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i: i + (oh - 1) * sh + 1: sh, j: j + (ow - 1) * sw + 1: sw]
            acc += win * d["w_dw"][:, 0, i, j][None, :, None, None]
    mid = _act(acc + d["b_dw"][None, :, None, None], wl.act1, _slope(d, "s_dw"))
    if wl.ln_eps is not None:   # channel LayerNorm, its scale and shift folded into w_pw / b_pw
        mid = (mid - mid.mean(axis=1, keepdims=True)) / np.sqrt(mid.var(axis=1, keepdims=True) + wl.ln_eps)
    mid = mid.astype(wl.dtype).astype(np.float64)
    if wl.se:   # squeeze-and-excitation: the scaled DW result is the PW's operand, in the storage dtype
        mid = (mid * se_scale_numpy(wl, mid, d)[:, :, None, None]).astype(wl.dtype).astype(np.float64)
    y = np.einsum("nchw,oc->nohw", mid, d["w_pw"][:, :, 0, 0].astype(np.float64))
    y = _act(y + d["b_pw"][None, :, None, None], wl.act2, _slope(d, "s_pw"))
    if wl.residual:
        y = y + x
    return y


def _slope(d: dict, key: str):
    return np.asarray(d[key], np.float64)[None, :, None, None] if key in d else None


def to_blocked(a: np.ndarray, dtype: str) -> np.ndarray:
    """NCHW → NC1HWC0 with the channel tail zero-padded."""
    n, c, h, w = a.shape
    c1 = ceil_div(c, C0)
    out = np.zeros((n, c1 * C0, h, w), np.float32)
    out[:, :c] = a
    return out.reshape(n, c1, C0, h, w).transpose(0, 1, 3, 4, 2).astype(dtype).copy()


def from_blocked(a: np.ndarray, channels: int) -> np.ndarray:
    n, c1, h, w, c0 = a.shape
    return a.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :channels]



def kernel_layout_reference(wl: DwSepWorkload, x, w_dw, b_dw, w_pw, b_pw, res=None) -> np.ndarray:
    """reference_block on the kernel's layouts: x / res / y NC1HWC0, w_dw (C1, kh, kw, C0), biases
    (C1, C0), w_pw FRACTAL_Z (Co1, C1, C0in, C0out); padded channels must be zero."""
    d = {"x": from_blocked(np.asarray(x, np.float64), wl.cin),
         "w_dw": np.asarray(w_dw, np.float64).transpose(0, 3, 1, 2).reshape(-1, 1, *wl.kernel)[:wl.cin],
         "b_dw": np.asarray(b_dw, np.float64).reshape(-1)[:wl.cin],
         "w_pw": np.asarray(w_pw, np.float64).transpose(0, 3, 1, 2).reshape(wl.co1 * C0, wl.c1 * C0)
         [:wl.cout, :wl.cin, None, None],
         "b_pw": np.asarray(b_pw, np.float64).reshape(-1)[:wl.cout]}
    y = reference_block(wl, d) if res is None else _with_residual(wl, d, res)
    return to_blocked(y, "float64")


def _with_residual(wl: DwSepWorkload, d: dict, res) -> np.ndarray:
    """reference_block adds x as the residual (the fused pattern); a separate residual tensor
    (the emulator tests feed random ones) is added the same way, after act2."""
    y = reference_block(DwSepWorkload(wl.batch, wl.cin, wl.cout, wl.height, wl.width, wl.kernel, wl.stride,
                                      wl.pads, wl.act1, wl.act2, False, wl.dtype, wl.ln_eps), d)
    return y + from_blocked(np.asarray(res, np.float64), wl.cout)
