"""The bytes a fused block must move at least: its input rows and columns some output reads, the
weights and biases once, the residual and the output (schedules/traffic.py compares plans with it)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fusion.core.ir import C0
from schedules.isa import ACC_BYTES, itemsize
from schedules.workload import DwSepWorkload


@lru_cache(maxsize=4096)
def _needed(out_total: int, stride: int, k: int, pad_lo: int, in_total: int) -> int:
    """Input rows (or columns) some output actually reads."""
    mark = np.zeros(in_total, dtype=bool)
    for o in range(out_total):
        lo = o * stride - pad_lo
        mark[max(lo, 0):max(0, min(lo + k, in_total))] = True
    return int(mark.sum())


def fused_min_bytes(wl: DwSepWorkload) -> dict[str, int]:
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    rows = _needed(wl.out_height, wl.stride[0], kh, wl.pads[0], wl.height)
    cols = _needed(wl.out_width, wl.stride[1], kw, wl.pads[1], wl.width)
    out = wl.batch * wl.co1 * wl.out_height * wl.out_width * C0 * b
    return {
        "input": wl.batch * wl.c1 * rows * cols * C0 * b,
        "weights": (wl.c1 * kh * kw * C0 * b + wl.c1 * C0 * ACC_BYTES
                    + wl.co1 * wl.c1 * C0 * C0 * b + wl.co1 * C0 * ACC_BYTES),
        "residual": out if wl.residual else 0,
        "output": out,
    }
