"""The NumPy side of squeeze-and-excitation inside the fused block (schedules/se.py has the math
in full and the TE kernel): the gate, the reference scale and the kernel's blocked operands."""

from __future__ import annotations

import numpy as np

from fusion.core.ir import C0
from schedules.activations import numpy_ref, parse
from schedules.se_plan import se_pad
from schedules.workload import DwSepWorkload, ceil_div

def gate_numpy(x, gate: str):
    if gate == "sigmoid":   # from e^-|x|: no overflow in either tail
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1, e) / (1 + e)
    return numpy_ref(x, gate)


def gate_kind(gate: str) -> str:
    return "sigmoid" if gate == "sigmoid" else parse(gate).kind


def se_scale_numpy(wl: DwSepWorkload, mid: np.ndarray, d: dict) -> np.ndarray:
    """The per-(image, channel) scale (N, C) of `mid` (N, C, H, W, fp64) from the logical SE
    weights in `d`: w_se1 (R, C, 1, 1), b_se1 (R,), w_se2 (C, R, 1, 1), b_se2 (C,)."""
    m = mid.mean(axis=(2, 3))
    h = numpy_ref(m @ np.asarray(d["w_se1"], np.float64).reshape(wl.se_mid, -1).T + d["b_se1"], wl.se_act)
    return gate_numpy(h @ np.asarray(d["w_se2"], np.float64).reshape(-1, wl.se_mid).T + d["b_se2"], wl.se_gate)


def blocked_se(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> list[np.ndarray]:
    """Logical SE weights (R, C, 1, 1), (R,), (C, R, 1, 1), (C,) -> the kernel's fp32 operands."""
    r, c = w1.shape[:2]
    c1 = ceil_div(c, C0)
    w1b = np.zeros((r, c1 * C0), np.float32)
    w1b[:, :c] = np.asarray(w1, np.float32).reshape(r, c)
    w2b = np.zeros((c1 * C0, r), np.float32)
    w2b[:c] = np.asarray(w2, np.float32).reshape(c, r)
    b2b = np.zeros(c1 * C0, np.float32)
    b2b[:c] = b2
    return [w1b.reshape(r, c1, C0), np.asarray(b1, np.float32).reshape(r).copy(),
            w2b.reshape(c1, C0, r), b2b.reshape(c1, C0)]


def ascend_se_operands(wl: DwSepWorkload, w1b: np.ndarray, b1: np.ndarray, w2b: np.ndarray,
                       b2b: np.ndarray) -> dict[str, np.ndarray]:
    """The CPU kernel's blocked SE operands (blocked_se) -> the Ascend C kernel's (emit_se.se_args):
    W1 transposed (C1 x C0 channels, se_pad) and b1 padded with zeros to se_pad (the per-channel
    Axpys of phase 1 read a row per channel), W2 transposed (se_mid, C1 x C0) (the SE phase's
    Axpys read a row per hidden channel); b2 as it is."""
    r, rp = wl.se_mid, se_pad(wl)
    ch = wl.c1 * C0
    w1 = np.zeros((ch, rp), np.float32)
    w1[:, :r] = np.asarray(w1b, np.float32).reshape(r, ch).T
    b1p = np.zeros(rp, np.float32)
    b1p[:r] = np.asarray(b1, np.float32).reshape(r)
    w2 = np.ascontiguousarray(np.asarray(w2b, np.float32).reshape(ch, r).T)
    return {"w_se1": w1, "b_se1": b1p, "w_se2": w2, "b_se2": np.asarray(b2b, np.float32).reshape(wl.c1, C0)}
