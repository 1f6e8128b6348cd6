"""Shape rules for the operators megafuse imports (our own, independent of onnx.shape_inference).

Every function takes concrete shapes (tuples of ints) and returns a concrete shape or raises
ShapeError with a one-line reason. `where` is a short prefix naming the node for messages.
"""

from __future__ import annotations

from math import prod

import numpy as np

from fusion.core.errors import ShapeError
from fusion.core.ir import ceil_div


def fmt_shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def resolve_conv_pads(in_hw: tuple[int, int], kernel: tuple[int, int], strides: tuple[int, int],
                      dilations: tuple[int, int], auto_pad: str,
                      pads: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """Explicit (top, left, bottom, right) pads for ONNX auto_pad semantics.

    SAME_UPPER puts the odd extra pad at the end (bottom/right), SAME_LOWER at the beginning.
    """
    if auto_pad in ("NOTSET", ""):
        return tuple(int(p) for p in pads)  # type: ignore[return-value]
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(auto_pad)
    begin, end = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        out = ceil_div(size, s)  # ceil
        eff_k = (k - 1) * d + 1
        total = max(0, (out - 1) * s + eff_k - size)
        small = total // 2
        if auto_pad == "SAME_UPPER":
            begin.append(small)
            end.append(total - small)
        else:
            begin.append(total - small)
            end.append(small)
    return (begin[0], begin[1], end[0], end[1])


def conv_output_hw(in_hw: tuple[int, int], kernel: tuple[int, int], strides: tuple[int, int],
                   dilations: tuple[int, int], pads: tuple[int, int, int, int],
                   where: str = "") -> tuple[int, int]:
    top, left, bottom, right = pads
    out = []
    for size, k, s, d, pb, pe in zip(in_hw, kernel, strides, dilations, (top, left), (bottom, right)):
        eff_k = (k - 1) * d + 1
        span = size + pb + pe - eff_k
        if span < 0:
            raise ShapeError(f"{where}kernel {eff_k} (dilated) is larger than the padded input "
                             f"{size + pb + pe}")
        out.append(span // s + 1)
    return (out[0], out[1])


def broadcast(a: tuple[int, ...], b: tuple[int, ...], where: str = "") -> tuple[int, ...]:
    """Numpy (multidirectional) broadcasting."""
    rank = max(len(a), len(b))
    a2 = (1,) * (rank - len(a)) + tuple(a)
    b2 = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a2, b2):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ShapeError(f"{where}shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast")
    return tuple(out)


def matmul(a: tuple[int, ...], b: tuple[int, ...], where: str = "") -> tuple[int, ...]:
    """numpy.matmul shape semantics (1-D operands promoted then squeezed)."""
    if len(a) == 0 or len(b) == 0:
        raise ShapeError(f"{where}MatMul operands must have rank >= 1")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise ShapeError(f"{where}MatMul inner dimensions differ: {fmt_shape(a)} @ {fmt_shape(b)}")
    batch = broadcast(a2[:-2], b2[:-2], where)
    out = list(batch)
    if len(a) > 1:
        out.append(a2[-2])
    if len(b) > 1:
        out.append(b2[-1])
    return tuple(out)


def gemm(a: tuple[int, ...], b: tuple[int, ...], c: tuple[int, ...] | None, trans_a: int,
         trans_b: int, where: str = "") -> tuple[int, int]:
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"{where}Gemm needs 2-D A and B, got {fmt_shape(a)} and {fmt_shape(b)}")
    m, ka = (a[1], a[0]) if trans_a else a
    kb, n = (b[1], b[0]) if trans_b else b
    if ka != kb:
        raise ShapeError(f"{where}Gemm inner dimensions differ: A {fmt_shape(a)} (transA={trans_a}), "
                         f"B {fmt_shape(b)} (transB={trans_b})")
    if c is not None:
        try:
            ok = broadcast(c, (m, n)) == (m, n)
        except ShapeError:
            ok = False
        if not ok:
            raise ShapeError(f"{where}Gemm C {fmt_shape(c)} does not broadcast to {fmt_shape((m, n))}")
    return (m, n)


def flatten(shape: tuple[int, ...], axis: int) -> tuple[int, int]:
    return (prod(shape[:axis]), prod(shape[axis:]))


def reshape(in_shape: tuple[int, ...], target: tuple[int, ...], allowzero: bool = False,
            where: str = "") -> tuple[int, ...]:
    """Resolve ONNX Reshape's 0 (copy input dim, unless allowzero) and -1 (infer)."""
    out: list[int] = []
    infer = None
    for i, d in enumerate(target):
        d = int(d)
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                raise ShapeError(f"{where}Reshape shape {list(target)} copies dim {i} (0) but the "
                                 f"input {fmt_shape(in_shape)} has rank {len(in_shape)}")
            out.append(in_shape[i])
        elif d == -1:
            if infer is not None:
                raise ShapeError(f"{where}Reshape shape {list(target)} has more than one -1")
            infer = i
            out.append(1)
        elif d < -1:
            raise ShapeError(f"{where}Reshape shape {list(target)} has invalid dim {d}")
        else:
            out.append(d)
    total = prod(in_shape)
    if infer is not None:
        known = prod(out)
        if known == 0 or total % known:
            raise ShapeError(f"{where}cannot reshape {fmt_shape(in_shape)} to {list(target)}")
        out[infer] = total // known
    if prod(out) != total:
        raise ShapeError(f"{where}cannot reshape {fmt_shape(in_shape)} ({total} elements) to "
                         f"{list(target)} ({prod(out)} elements)")
    return tuple(out)


def np_dtype_name(elem_type: int) -> str | None:
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except Exception:  # UNDEFINED, STRING, custom float8 etc.
        try:
            import onnx

            return onnx.TensorProto.DataType.Name(elem_type).lower()
        except Exception:
            return f"elem_type {elem_type}"

