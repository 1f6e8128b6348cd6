"""What one unfused op kernel is (KernelSpec), what its compute reads (OpContext), and the
blocked layouts of constant operands: shared by the op library's modules (schedules/ops*.py,
cpu_conv.py, cpu_dense.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import te

from fusion.core.ir import C0, Graph, TensorType, ceil_div


@dataclass(frozen=True)
class KernelSpec:
    name: str
    prim_func: object
    params: tuple            # per input parameter: tensor name (str) or np.ndarray constant
    out_shape: tuple[int, ...]
    out_dtype: str
    schedule: str = "generic"  # which CPU schedule applies


@dataclass
class OpContext:
    graph: Graph
    dtype: str  # compute/storage dtype of activations

    def ttype(self, t: str) -> TensorType:
        return self.graph.types[t]

    def const(self, t: str, dtype: str | None = None) -> np.ndarray:
        return np.asarray(self.graph.constants[t]).astype(dtype or self.dtype)


def _ph(shape, dtype, name):
    return te.placeholder(tuple(int(s) for s in shape), dtype, name=name)


def _cast(x, dt):
    return x if str(x.ty) == dt else x.astype(dt)


def blocked_pw_weights(w: np.ndarray, dtype: str) -> np.ndarray:
    """OI11 → [co1, ci1, ci0, co0] with zero-padded channel tails."""
    O, I = w.shape[:2]
    co1, ci1 = ceil_div(O, C0), ceil_div(I, C0)
    wp = np.zeros((co1 * C0, ci1 * C0), np.float32)
    wp[:O, :I] = w.reshape(O, I)
    return wp.reshape(co1, C0, ci1, C0).transpose(0, 2, 3, 1).astype(dtype).copy()


def blocked_bias(b: np.ndarray, channels: int) -> np.ndarray:
    c1 = ceil_div(channels, C0)
    out = np.zeros(c1 * C0, np.float32)
    out[:channels] = b
    return out.reshape(c1, C0)


def _reduce_over(src, shape, axes, combine, name):
    """A keep-dims reduction of `src(*index)` over `axes` (te.sum / te.max / te.min)."""
    raxes = {a: te.reduce_axis((0, int(shape[a])), name=f"r{a}") for a in axes}
    rshape = tuple(1 if a in raxes else int(d) for a, d in enumerate(shape))

    def f(*i):
        idx = [raxes[a] if a in raxes else i[a] for a in range(len(shape))]
        return combine(src(*idx), axis=list(raxes.values()))
    return te.compute(rshape, f, name=name)
