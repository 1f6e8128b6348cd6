"""ONNX converters for the vision operators outside the fused chains: pooling, Resize,
ConvTranspose, Pad, Softmax, reductions and element-wise math.

Each converter has the importer's signature `(imp, n, name, ins, a)` and emits one normalized
node (attributes resolved to concrete ints/floats; shapes computed here):

    MaxPool / AveragePool  input (x), 4-D; kernel=(kh, kw) strides pads=(t, l, b, r) dilations
                           ceil_mode=0|1; AveragePool: count_include_pad=0|1
    GlobalMaxPool          input (x), 4-D
    Resize                 input (x), 4-D, N and C unchanged; mode=nearest|linear
                           coord=<coordinate_transformation_mode> nearest_mode=<...|simple>
                           scales=(sh, sw) (the ones the coordinate transform divides by)
    ConvTranspose          inputs (x, w) or (x, w, b) constants; kernel strides pads dilations
                           group (output_padding / output_shape resolved into the output shape)
    Pad                    input (x); pads=(begin..., end...) over every dim, mode, value
    Softmax / LogSoftmax   input (x); axes=(...) normalized over the opset's semantics
    ReduceMax / ReduceMin / ReduceSum   input (x); axes=(...) keepdims=0|1 general=1
    ReduceMean (other than over H, W of a 4-D tensor)   the same form (general=1 tells it
                           from the importer's spatial ReduceMean)
    LayerNormalization     inputs (x, scale) or (x, scale, bias); axes=(axis..rank-1) epsilon
    Div with a run-time divisor   inputs (a, b), numpy broadcasting
    Exp Log Sqrt Tanh Erf Abs Neg Reciprocal Floor Ceil Softplus   input (x)
    LeakyRelu / Elu        input (x); alpha=float
    Gelu                   input (x); approximate=none|tanh
    Pow / Min / Max / PRelu   inputs (a, b), numpy broadcasting
"""

from __future__ import annotations

import math
from typing import Any

from fusion.frontend import onnx_shapes as S
from fusion.core.errors import ModelLoadError, ShapeError, UnsupportedModelError
from fusion.core.ir import ceil_div


def _rank4(imp, name: str, op: str, x: str):
    xt = imp._data(x)
    if len(xt.shape) != 4:
        raise UnsupportedModelError(f"node '{name}': {op} is supported on 4-D tensors only "
                                    f"(input '{x}' has rank {len(xt.shape)})")
    return xt


def _norm_axes(name: str, op: str, axes, rank: int) -> tuple[int, ...]:
    out = set()
    for ax in axes:
        ax = int(ax)
        if not -rank <= ax < rank:
            raise ShapeError(f"node '{name}': {op} axis {ax} out of range for rank {rank}")
        out.add(ax % rank)
    return tuple(sorted(out))


def add_const(imp, base: str, arr) -> str:
    """A new constant (a converted copy of a model constant) under an unused name."""
    name, k = base, 1
    while name in imp.all_consts or name in imp.types or name in imp.read:
        name, k = f"{base}_{k}", k + 1
    imp.all_consts[name] = arr
    imp.available.add(name)
    return name


# --- pooling ----------------------------------------------------------------------------------
def pool_output(size: int, k: int, s: int, d: int, pb: int, pe: int, ceil_mode: bool) -> int:
    eff = (k - 1) * d + 1
    span = size + pb + pe - eff
    if span < 0:
        raise ShapeError(f"pooling window {eff} is larger than the padded input {size + pb + pe}")
    out = (ceil_div(span, s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + pb:  # the last window must start inside the input
        out -= 1
    return out


def pool(imp, n, name, ins, a):
    op = n.op_type
    imp._arity(n, name, ins, 1, 1)
    xt = _rank4(imp, name, op, ins[0])
    if "kernel_shape" not in a:
        raise UnsupportedModelError(f"node '{name}': {op} has no kernel_shape")
    kernel = imp._ints(name, op, "kernel_shape", a["kernel_shape"], 2, (1, 1), 1)
    strides = imp._ints(name, op, "strides", a.get("strides"), 2, (1, 1), 1)
    dilations = imp._ints(name, op, "dilations", a.get("dilations"), 2, (1, 1), 1)
    pads = imp._ints(name, op, "pads", a.get("pads"), 4, (0, 0, 0, 0), 0)
    if op == "MaxPool" and int(a.get("storage_order", 0)):
        raise UnsupportedModelError(f"node '{name}': MaxPool storage_order=1 is not supported")
    auto_pad = str(a.get("auto_pad", "NOTSET")) or "NOTSET"
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedModelError(f"node '{name}': {op} auto_pad '{auto_pad}' is not supported")
    nb, c, h, w = xt.shape
    pads = S.resolve_conv_pads((h, w), kernel, strides, dilations, auto_pad, pads)
    ceil_mode = 1 if int(a.get("ceil_mode", 0)) else 0
    try:
        oh = pool_output(h, kernel[0], strides[0], dilations[0], pads[0], pads[2], bool(ceil_mode))
        ow = pool_output(w, kernel[1], strides[1], dilations[1], pads[1], pads[3], bool(ceil_mode))
    except ShapeError as e:
        raise ShapeError(f"node '{name}': {e}") from None
    attrs: dict[str, Any] = dict(kernel=kernel, strides=strides, pads=pads, dilations=dilations,
                                 ceil_mode=ceil_mode)
    if op == "AveragePool":
        attrs["count_include_pad"] = 1 if int(a.get("count_include_pad", 0)) else 0
    imp._emit(name, op, ins, imp._single_output(n, name), (nb, c, oh, ow), xt.dtype, **attrs)


def global_max_pool(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 1)
    xt = _rank4(imp, name, "GlobalMaxPool", ins[0])
    imp._emit(name, "GlobalMaxPool", ins, imp._single_output(n, name), (*xt.shape[:2], 1, 1), xt.dtype)


# --- Resize -----------------------------------------------------------------------------------
_COORD = ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize(imp, n, name, ins, a):
    op = n.op_type
    imp._arity(n, name, ins, 1, 4)
    xt = _rank4(imp, name, op, ins[0])
    rank = 4
    mode = str(a.get("mode", "nearest"))
    if mode not in ("nearest", "linear", "bilinear"):
        raise UnsupportedModelError(f"node '{name}': {op} mode '{mode}' is not supported "
                                    f"(nearest, linear)")
    mode = "linear" if mode == "bilinear" else mode
    legacy = op == "Upsample" or imp.opset < 11
    coord = "asymmetric" if legacy else str(a.get("coordinate_transformation_mode", "half_pixel"))
    nearest = "simple" if legacy else str(a.get("nearest_mode", "round_prefer_floor"))
    if coord not in _COORD:
        raise UnsupportedModelError(f"node '{name}': {op} coordinate_transformation_mode "
                                    f"'{coord}' is not supported ({', '.join(_COORD)})")
    if nearest not in _NEAREST + ("simple",):
        raise UnsupportedModelError(f"node '{name}': {op} nearest_mode '{nearest}' is not supported")
    if int(a.get("antialias", 0)):
        raise UnsupportedModelError(f"node '{name}': {op} with antialias=1 is not supported")
    if str(a.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
        raise UnsupportedModelError(f"node '{name}': {op} keep_aspect_ratio_policy "
                                    f"'{a['keep_aspect_ratio_policy']}' is not supported")
    axes = _norm_axes(name, op, a.get("axes", range(rank)), rank)
    if legacy:  # Upsample / Resize-10: (x, scales) or the scales attribute
        scales_t, sizes_t = (ins[1] if len(ins) > 1 else None), None
    else:
        scales_t = ins[2] if len(ins) > 2 and ins[2] else None
        sizes_t = ins[3] if len(ins) > 3 and ins[3] else None
    full = list(xt.shape)
    scales = [1.0] * rank
    given = imp._const(scales_t, name, f"{op} scales").reshape(-1) if scales_t else None
    if given is not None and given.size == 0:
        given = None
    if given is None and legacy and "scales" in a:
        given = [float(v) for v in a["scales"]]
    if given is not None:
        if len(given) != len(axes):
            raise ShapeError(f"node '{name}': {op} has {len(given)} scales for {len(axes)} axes")
        for ax, sc in zip(axes, given):
            if not float(sc) > 0:
                raise ShapeError(f"node '{name}': {op} scale {float(sc)} must be > 0")
            scales[ax] = float(sc)
            full[ax] = int(math.floor(xt.shape[ax] * float(sc)))
    elif sizes_t is not None:
        sizes = imp._const(sizes_t, name, f"{op} sizes").reshape(-1)
        if len(sizes) != len(axes):
            raise ShapeError(f"node '{name}': {op} has {len(sizes)} sizes for {len(axes)} axes")
        for ax, sz in zip(axes, sizes):
            full[ax] = int(sz)
            scales[ax] = int(sz) / xt.shape[ax]
    else:
        raise ModelLoadError(f"cannot load ONNX model '{imp.label}': node '{name}' ({op}) has "
                             f"neither scales nor sizes")
    if any(d <= 0 for d in full):
        raise ShapeError(f"node '{name}': {op} output shape {S.fmt_shape(full)} has an empty dim")
    if tuple(full[:2]) != tuple(xt.shape[:2]):
        raise UnsupportedModelError(f"node '{name}': {op} resizes the batch or channel dim "
                                    f"({S.fmt_shape(xt.shape)} -> {S.fmt_shape(full)}); only H, W")
    imp._emit(name, "Resize", ins[:1], imp._single_output(n, name), tuple(full), xt.dtype,
              mode=mode, coord=coord, nearest_mode=nearest, scales=(scales[2], scales[3]))


# --- ConvTranspose ----------------------------------------------------------------------------
def conv_transpose(imp, n, name, ins, a):
    imp._arity(n, name, ins, 2, 3)
    x, w = ins[0], ins[1]
    xt = _rank4(imp, name, "ConvTranspose", x)
    wa = imp._const(w, name, "ConvTranspose weight")
    if wa.ndim != 4:
        raise UnsupportedModelError(f"node '{name}': only 2-D ConvTranspose is supported")
    imp._data(w)
    group = int(a.get("group", 1))
    nb, c, h, wd = xt.shape
    if group < 1 or wa.shape[0] != c or c % group:
        raise ShapeError(f"node '{name}': ConvTranspose weight '{w}' shape {S.fmt_shape(wa.shape)} "
                         f"does not fit {c} input channels with group={group}")
    m = int(wa.shape[1]) * group
    kernel = (int(wa.shape[2]), int(wa.shape[3]))
    op = "ConvTranspose"
    strides = imp._ints(name, op, "strides", a.get("strides"), 2, (1, 1), 1)
    dilations = imp._ints(name, op, "dilations", a.get("dilations"), 2, (1, 1), 1)
    pads = imp._ints(name, op, "pads", a.get("pads"), 4, (0, 0, 0, 0), 0)
    out_pad = imp._ints(name, op, "output_padding", a.get("output_padding"), 2, (0, 0), 0)
    auto_pad = str(a.get("auto_pad", "NOTSET")) or "NOTSET"
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedModelError(f"node '{name}': ConvTranspose auto_pad '{auto_pad}' is not "
                                    f"supported")
    out_shape = a.get("output_shape")
    if out_shape is not None:
        out_shape = [int(v) for v in out_shape][-2:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = [h * strides[0], wd * strides[1]]
    if auto_pad == "VALID":
        pads = (0, 0, 0, 0)
    if out_shape is not None:
        begin, end = [], []
        for size, k, s, d, op_, o in zip((h, wd), kernel, strides, dilations, out_pad, out_shape):
            total = s * (size - 1) + op_ + (k - 1) * d + 1 - o
            if total < 0:
                raise ShapeError(f"node '{name}': ConvTranspose output_shape {out_shape} is larger "
                                 f"than the full output")
            small = total // 2
            # the ONNX rule (ONNX Runtime agrees): the odd pixel is cropped at the end only
            # for SAME_UPPER, at the start otherwise
            lo, hi = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
            begin.append(lo)
            end.append(hi)
        pads = (begin[0], begin[1], end[0], end[1])
    oh, ow = (s * (size - 1) + op_ + (k - 1) * d + 1 - pb - pe
              for size, k, s, d, op_, pb, pe in zip((h, wd), kernel, strides, dilations, out_pad,
                                                    pads[:2], pads[2:]))
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"node '{name}': ConvTranspose output {oh}x{ow} is empty")
    inputs = [x, w]
    if len(ins) == 3 and ins[2]:
        ba = imp._const(ins[2], name, "ConvTranspose bias")
        if tuple(ba.shape) != (m,):
            raise ShapeError(f"node '{name}': ConvTranspose bias '{ins[2]}' has shape "
                             f"{S.fmt_shape(ba.shape)}, expected [{m}]")
        imp._data(ins[2])
        inputs.append(ins[2])
    dtype = imp._same_dtype(name, inputs)
    imp._emit(name, op, inputs, imp._single_output(n, name), (nb, m, oh, ow), dtype,
              kernel=kernel, strides=strides, pads=pads, dilations=dilations, group=group)


# --- Pad --------------------------------------------------------------------------------------
def pad(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 4)
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    mode = str(a.get("mode", "constant"))
    if mode not in ("constant", "reflect", "edge"):
        raise UnsupportedModelError(f"node '{name}': Pad mode '{mode}' is not supported")
    if imp.opset < 11:
        raw = [int(v) for v in a.get("pads", [])]
        value = float(a.get("value", 0.0))
    else:
        if len(ins) < 2 or not ins[1]:
            raise ShapeError(f"node '{name}': Pad has no pads input")
        raw = [int(v) for v in imp._const(ins[1], name, "Pad pads").reshape(-1)]
        value = 0.0
        if len(ins) > 2 and ins[2]:
            cv = imp._const(ins[2], name, "Pad constant_value").reshape(-1)
            value = float(cv[0]) if cv.size else 0.0
    axes = list(range(rank))
    if len(ins) > 3 and ins[3]:  # in the given order: pads follow it
        axes = [_norm_axes(name, "Pad", [ax], rank)[0]
                for ax in imp._const(ins[3], name, "Pad axes").reshape(-1)]
    if len(raw) != 2 * len(axes):
        raise ShapeError(f"node '{name}': Pad has {len(raw)} pads for {len(axes)} axes")
    begin, end = [0] * rank, [0] * rank
    for i, ax in enumerate(axes):
        begin[ax], end[ax] = raw[i], raw[len(axes) + i]
    if any(p < 0 for p in begin + end):
        raise UnsupportedModelError(f"node '{name}': Pad with negative pads {raw} is not supported")
    if mode == "reflect" and any(max(b, e) >= d for b, e, d in zip(begin, end, xt.shape) if b or e):
        raise ShapeError(f"node '{name}': reflect pads {raw} must be smaller than the input dims "
                         f"{S.fmt_shape(xt.shape)}")
    shape = tuple(d + b + e for d, b, e in zip(xt.shape, begin, end))
    imp._emit(name, "Pad", ins[:1], imp._single_output(n, name), shape, xt.dtype,
              pads=tuple(begin + end), mode=mode, value=value)


# --- Softmax / reductions ---------------------------------------------------------------------
def softmax(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 1)
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    if imp.opset < 13:  # coerced to 2-D at `axis`: normalize over every dim from axis on
        axis = _norm_axes(name, n.op_type, [int(a.get("axis", 1))], rank)[0] if rank else 0
        axes = tuple(range(axis, rank))
    else:
        axes = _norm_axes(name, n.op_type, [int(a.get("axis", -1))], rank)
    imp._emit(name, n.op_type, ins, imp._single_output(n, name), xt.shape, xt.dtype, axes=axes)


def reduce(imp, n, name, ins, a):
    op = n.op_type
    imp._arity(n, name, ins, 1, 2)
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    if len(ins) == 2 and ins[1]:
        axes = [int(v) for v in imp._const(ins[1], name, f"{op} axes").reshape(-1)]
    else:
        axes = [int(v) for v in a.get("axes", [])]
    keep = 1 if int(a.get("keepdims", 1)) else 0
    if not axes:
        if int(a.get("noop_with_empty_axes", 0)):
            imp._emit(name, "Identity", ins[:1], imp._single_output(n, name), xt.shape, xt.dtype)
            return
        axes = list(range(rank))
    norm = _norm_axes(name, op, axes, rank)
    shape = tuple(1 if i in norm else d for i, d in enumerate(xt.shape) if keep or i not in norm)
    imp._emit(name, op, ins[:1], imp._single_output(n, name), shape, xt.dtype, axes=norm, keepdims=keep,
              general=1)


def reduce_mean(base):
    """ReduceMean over H, W of a 4-D tensor keeps the importer's own form (the GAP kernel, the
    classifier head patterns); any other axes take the general reduction."""
    def convert(imp, n, name, ins, a):
        xt = imp._data(ins[0]) if ins else None
        if xt is not None and len(xt.shape) == 4:
            if len(ins) == 2 and ins[1]:
                axes = [int(v) for v in imp._const(ins[1], name, "ReduceMean axes").reshape(-1)]
            else:
                axes = [int(v) for v in a.get("axes", [])]
            if axes and sorted(ax % 4 for ax in axes) == [2, 3]:
                return base(imp, n, name, ins, a)
        return reduce(imp, n, name, ins, a)
    return convert


def layer_norm(imp, n, name, ins, a):
    imp._arity(n, name, ins, 2, 3)
    outs = list(n.output)
    if any(t and t in imp.read for t in outs[1:]):
        raise UnsupportedModelError(f"node '{name}': LayerNormalization mean/inv_std outputs are "
                                    f"not supported")
    xt = imp._data(ins[0])
    rank = len(xt.shape)
    axis = _norm_axes(name, "LayerNormalization", [int(a.get("axis", -1))], rank)[0]
    if int(a.get("stash_type", 1)) != 1:
        raise UnsupportedModelError(f"node '{name}': LayerNormalization stash_type "
                                    f"{a['stash_type']} is not supported")
    for t in ins[1:]:
        if t:
            imp._const(t, name, "LayerNormalization scale/bias")
            S.broadcast(xt.shape[axis:], imp._data(t).shape, f"node '{name}': ")
    dtype = imp._same_dtype(name, [t for t in ins if t])
    imp._emit(name, "LayerNormalization", [t for t in ins if t], imp._single_output(n, name),
              xt.shape, dtype, axes=tuple(range(axis, rank)), epsilon=float(a.get("epsilon", 1e-5)))


def div(base):
    """Div by a constant keeps the importer's form; a run-time divisor (a normalization's
    x / sqrt(var + eps), a softmax written out) is an element-wise kernel of its own."""
    def convert(imp, n, name, ins, a):
        if len(ins) == 2 and ins[1] and ins[1] not in imp.all_consts:
            return binary_math(imp, n, name, ins, a)
        return base(imp, n, name, ins, a)
    return convert


# --- element-wise -----------------------------------------------------------------------------
def unary_math(imp, n, name, ins, a):
    imp._arity(n, name, ins, 1, 1)
    xt = imp._data(ins[0])
    attrs: dict[str, Any] = {}
    if n.op_type == "LeakyRelu":
        attrs["alpha"] = float(a.get("alpha", 0.01))
    elif n.op_type == "Elu":
        attrs["alpha"] = float(a.get("alpha", 1.0))
    elif n.op_type == "Gelu":
        attrs["approximate"] = str(a.get("approximate", "none"))
        if attrs["approximate"] not in ("none", "tanh"):
            raise UnsupportedModelError(f"node '{name}': Gelu approximate='{attrs['approximate']}' "
                                        f"is not supported")
    imp._emit(name, n.op_type, ins, imp._single_output(n, name), xt.shape, xt.dtype, **attrs)


def binary_math(imp, n, name, ins, a):
    op = n.op_type
    if op in ("Min", "Max") and len(ins) != 2:
        raise UnsupportedModelError(f"node '{name}': {op} with {len(ins)} inputs is not supported "
                                    f"(2 only)")
    imp._arity(n, name, ins, 2, 2)
    at = imp._data(ins[0])
    if op == "Pow" and ins[1] in imp.all_consts and imp.all_consts[ins[1]].dtype.kind != "f":
        ins = [ins[0], add_const(imp, f"{ins[1]}__{at.dtype}", imp.all_consts[ins[1]].astype(at.dtype))]
    bt = imp._data(ins[1])
    if op == "Pow":  # the exponent may be any float type; it is computed in fp32
        dtype = at.dtype
    else:
        dtype = imp._same_dtype(name, ins)
    shape = S.broadcast(at.shape, bt.shape, f"node '{name}': ")
    if op == "PRelu" and shape != tuple(at.shape):
        raise ShapeError(f"node '{name}': PRelu slope '{ins[1]}' {S.fmt_shape(bt.shape)} does not "
                         f"broadcast to the input {S.fmt_shape(at.shape)}")
    imp._emit(name, op, ins, imp._single_output(n, name), shape, dtype)


CONVERTERS = {
    "MaxPool": pool,
    "AveragePool": pool,
    "GlobalMaxPool": global_max_pool,
    "Resize": resize,
    "Upsample": resize,
    "ConvTranspose": conv_transpose,
    "Pad": pad,
    "Softmax": softmax,
    "LogSoftmax": softmax,
    "ReduceMax": reduce,
    "ReduceMin": reduce,
    "ReduceSum": reduce,
    "LayerNormalization": layer_norm,
    **{op: unary_math for op in ("Exp", "Log", "Sqrt", "Tanh", "Erf", "Abs", "Neg", "Reciprocal",
                                 "Floor", "Ceil", "Softplus", "LeakyRelu", "Elu", "Gelu")},
    **{op: binary_math for op in ("Pow", "Min", "Max", "PRelu")},
}
