"""CPU kernels for the unfused NCHW convolutions: 1×1 (GEMM), depthwise, and general (the stem).

The unfused path (`--no-fuse`, and every conv the fuser leaves alone) keeps NCHW, so the vector
is the output row (W contiguous). Register blocking as in the fused kernel: a tile of
(output channels × row vectors) accumulators stays in registers across the whole reduction,
the weights are packed once at compile time as [O/ro, C, kh, kw, ro] so the ro weights of one
reduction step are adjacent. Each schedule reads its blocking back from the PrimFunc's buffer
shapes (the packed weight's last dim is ro), so the compute and the schedule cannot disagree.
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from fusion.core.ir import C0
from schedules.cpu_epilogue import Epilogue
from schedules.dwsep_te import ACC
from schedules.op_spec import KernelSpec, blocked_bias
from schedules.workload import ceil_div

MAX_LANES = 16   # fp32 lanes of one AVX-512 register
MAX_ACC = 24     # accumulator registers in a tile (of 32 zmm; the rest hold inputs and weights)


def largest_divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def row_lanes(width: int) -> int:
    """Vector width over an output row: the largest divisor of the row up to one register."""
    return largest_divisor(width, MAX_LANES)


def dw_row_width(width: int) -> int:
    """Columns a depthwise row is computed over: whole AVX-512 vectors (half ones up to 8)."""
    return ceil_div(width, 8) * 8 if width <= 8 else ceil_div(width, MAX_LANES) * MAX_LANES


def register_tile(out_channels: int, row_vectors: int) -> tuple[int, int]:
    """(ro, rj): output channels × row vectors held as accumulators. Maximises FMAs per load
    (ro·rj / (ro + rj)) under MAX_ACC registers; both must divide their loop."""
    best = (1, 1)
    for rj in range(1, row_vectors + 1):
        if row_vectors % rj:
            continue
        for ro in range(1, min(out_channels, MAX_ACC // rj) + 1):
            if out_channels % ro:
                continue
            if ro * rj / (ro + rj) > best[0] * best[1] / (best[0] + best[1]):
                best = (ro, rj)
    return best


def pack_weights(w: np.ndarray, ro: int, dtype: str) -> np.ndarray:
    """OIHW → [O/ro, I, kh, kw, ro]."""
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // ro, ro, i, kh, kw).transpose(0, 2, 3, 4, 1)).astype(dtype)


def conv_compute(x_shape, w: np.ndarray, bias: np.ndarray, stride, pads, dtype: str, depthwise: bool,
                 epi: Epilogue = Epilogue()):
    """TE for a dense (group 1) or depthwise NCHW conv with packed weights and its epilogue (bias,
    activation, residual). Returns (placeholders + output, packed weights). Padding is a separate
    stage the schedule places."""
    n, c, h, wd = x_shape
    o, cg, kh, kw = w.shape
    sh, sw = stride
    pt, pl, pb, pr = pads
    oh, ow = (h + pt + pb - kh) // sh + 1, (wd + pl + pr - kw) // sw + 1
    X = te.placeholder((n, c, h, wd), dtype, name="x")
    B = te.placeholder((o,), ACC, name="b")
    hp, wpad = h + pt + pb, wd + pl + pr
    # a depthwise row is computed in whole vectors (56 → 64 columns, the extra ones read zero
    # padding and are never stored): LLVM splits a 14-lane vector into 8 + 4 + 2
    cw = dw_row_width(ow) if depthwise else ow
    if sw > 1 or any(pads) or cw != ow:
        # zero padding as stages of their own, one per column phase (column jj·sw + r of the
        # padded row at phase r, index jj), so that every tap of a strided conv reads its output
        # row's inputs contiguously; the schedule splits each into a zero fill and a copy without
        # bound tests (a test that depends on one index only, hence one stage per phase)
        wq = max(ceil_div(wpad, sw), cw + (kw - 1) // sw)

        def phase(r):
            return te.compute((n, c, hp, wq), lambda b, ci, i, jj: tirx.if_then_else(
                tirx.all(i >= pt, i < h + pt, jj * sw + r >= pl, jj * sw + r < wd + pl),
                X[b, ci, i - pt, jj * sw + r - pl], tirx.const(0, dtype)), name=f"pad{r}")
        phases = [phase(r) for r in range(sw)]
    else:
        phases = [X]

    def at(b, ci, row, rw: int, j):   # padded input row `row`, column j·sw + rw
        return phases[rw % sw][b, ci, row, j + rw // sw]
    # the column taps are unrolled here (each reads its own phase); rows (and channels) reduce
    rh = te.reduce_axis((0, kh), name="rh")
    if depthwise:
        wp = np.ascontiguousarray(w.reshape(o, kh, kw)).astype(dtype)
        W = te.placeholder(wp.shape, dtype, name="w")
        conv = te.compute((n, o, oh, cw), lambda b, ch, i, j: te.sum(sum(
            at(b, ch, i * sh + rh, e, j).astype(ACC) * W[ch, rh, e].astype(ACC) for e in range(kw)), axis=[rh]),
            name="conv")
    else:
        ro, _ = register_tile(o, max(1, ow // row_lanes(ow)))
        wp = pack_weights(w, ro, dtype)
        W = te.placeholder(wp.shape, dtype, name="w")
        rc = te.reduce_axis((0, cg), name="rc")
        conv = te.compute((n, o, oh, ow), lambda b, oc, i, j: te.sum(sum(
            at(b, rc, i * sh + rh, e, j).astype(ACC) * W[oc // ro, rc, rh, e, oc % ro].astype(ACC)
            for e in range(kw)), axis=[rc, rh]), name="conv")
    R = epi.placeholders((n, o, oh, ow), dtype)
    y = te.compute((n, o, oh, ow), lambda b, oc, i, j: epi.value(conv[b, oc, i, j] + B[oc], (b, oc, i, j), R)
                   .astype(dtype), name="y")
    return [X, W, B, *R, y], wp, (n, o, oh, ow)


# --- schedules ---------------------------------------------------------------------------------
def schedule_conv(sch, depthwise: bool) -> None:
    """y(b, o, i, j) = conv + bias; conv computed per register tile under y's loops."""
    y = sch.get_sblock("y")
    conv = sch.get_sblock("conv")
    w_buf = sch.get(conv).reads[1].source
    b, o, i, j = sch.get_loops(y)
    ow = int(sch.get(j).extent)
    if depthwise:
        # the conv row (whole vectors) is the producer; the epilogue stores its valid columns
        cb, co_, ci_, cj, rh = sch.get_loops(conv)
        outer = sch.fuse(cb, co_)
        sch.parallel(outer)
        cjt, cjv = sch.split(cj, [None, min(MAX_LANES, int(sch.get(cj).extent))])
        sch.reorder(cjt, rh, cjv)
        sch.unroll(rh)
        sch.vectorize(cjv)
        sch.reverse_compute_at(y, ci_, preserve_unit_loops=True)
        sch.vectorize(sch.get_loops(y)[-1])
        _place_pad(sch, outer)
        sch.decompose_reduction(conv, rh)
        return
    lanes = row_lanes(ow)
    jt, jv = sch.split(j, [None, lanes])
    ro = int(w_buf.shape[-1])
    rj = register_tile(int(sch.get(o).extent), int(sch.get(jt).extent))[1]
    oo, oi = sch.split(o, [None, ro])
    jto, jtr = sch.split(jt, [None, rj])
    if _has_pad(sch):
        # the padded rows of one output row are built once and serve every output-channel block
        sch.reorder(b, i, oo, jto, oi, jtr, jv)
        outer = sch.fuse(b, i)
    else:
        # a block of packed weights stays in cache across all rows
        sch.reorder(b, oo, i, jto, oi, jtr, jv)
        outer = sch.fuse(b, oo, i)
    sch.parallel(outer)
    sch.compute_at(conv, jto, preserve_unit_loops=True)
    *_, co, ci_, cj, rc, rh = sch.get_loops(conv)
    cjt, cjv = sch.split(cj, [None, lanes])
    sch.reorder(rc, rh, co, ci_, cjt, cjv)
    sch.unroll(co)
    sch.unroll(cjt)
    sch.vectorize(cjv)
    sch.vectorize(jv)
    _place_pad(sch, outer)
    sch.decompose_reduction(conv, rc)


def _pad_blocks(sch) -> list:
    out = []
    for r in range(8):
        try:
            out.append(sch.get_sblock(f"pad{r}"))
        except Exception:  # noqa: BLE001 - no more phases
            break
    return out


def _has_pad(sch) -> bool:
    return bool(_pad_blocks(sch))


def _place_pad(sch, loop) -> None:
    """The padded input is materialised per parallel iteration (a few rows/planes), never inlined:
    the bound test would stay in the vector loop. The phases of a strided conv are each split into
    a zero fill and an in-bound copy without a test per element; LLVM vectorises the copies (with
    shuffles: TVM's vectoriser would turn the strided reads into scalar loads). Measured, 1 thread:
    96×112² DW s2 654 → 300 µs; for stride 1 the split measured slower (32×112²: 146 → 160 µs)."""
    pads = _pad_blocks(sch)
    for pad in pads:
        sch.compute_at(pad, loop, preserve_unit_loops=True)
        loops = sch.get_loops(pad)
        outer = [k for k, lp in enumerate(loops) if sch.get(lp).same_as(sch.get(loop))][0]
        if len(pads) == 1:
            continue   # stride 1: one contiguous test per row end, LLVM does better than fill + copy
        try:
            fill = sch.decompose_padding(pad, loops[outer + 1])
        except Exception:  # noqa: BLE001 - the bound test folded away (no padding on this phase)
            continue
        sch.vectorize(sch.get_loops(fill)[-1])


# --- dispatch ----------------------------------------------------------------------------------
def conv_kernel(n, ctx) -> KernelSpec | None:
    """A scheduled kernel for an NCHW Conv node, or None when this module has no schedule for it
    (dilated or grouped non-depthwise convs keep the generic kernel)."""
    xt = ctx.ttype(n.inputs[0])
    w = np.asarray(ctx.graph.constants[n.inputs[1]], np.float32)
    o, cg, kh, kw = w.shape
    group = n.attr("group", 1)
    if tuple(n.attr("dilations", (1, 1))) != (1, 1) or len(xt.shape) != 4:
        return None
    depthwise = group > 1 and group == xt.shape[1] == o and cg == 1
    if group != 1 and not depthwise:
        return None
    has_b = len(n.inputs) > 2 and n.inputs[2]
    bias = ctx.const(n.inputs[2], ACC) if has_b else np.zeros(o, np.float32)
    epi = Epilogue.of(n)
    args, wp, out_shape = conv_compute(tuple(xt.shape), w, bias, tuple(n.attr("strides", (1, 1))),
                                       tuple(n.attr("pads", (0, 0, 0, 0))), ctx.dtype, depthwise, epi)
    return KernelSpec(n.name, te.create_prim_func(args), (n.inputs[0], wp, bias, *epi.params()), out_shape, ctx.dtype,
                      schedule="cpu_dw" if depthwise else "cpu_conv")


def schedule_conv_blocked(sch) -> None:
    """The 1×1 conv in NC1HWC0 (expansion convs between fused blocks, the head): the fused
    kernel's PW microkernel — C0 output lanes as the vector, a (Cout blocks × pixels) register
    tile accumulated across the whole (C1, C0) reduction, a Cout block's weights reused over rows."""
    y = sch.get_sblock("y")
    conv = sch.get_sblock("conv")
    b, o, i, j, k = sch.get_loops(y)
    co1, ow = int(sch.get(o).extent), int(sch.get(j).extent)
    ro = largest_divisor(co1, 2)
    rj = largest_divisor(ow, 7 if ro > 1 else 14)
    oo, oi = sch.split(o, [None, ro])
    jo, ji = sch.split(j, [None, rj])
    sch.reorder(b, oo, i, jo, oi, ji, k)
    sch.parallel(sch.fuse(b, oo, i))
    sch.vectorize(k)
    # the register tile (ro·rj·C0 fp32, under 1 KiB) sits on the stack, so LLVM keeps it in registers
    sch.compute_at(conv, jo, preserve_unit_loops=True)
    co, ci, cj, ck, rc1, rc0 = sch.get_loops(conv)[-6:]
    sch.reorder(rc1, rc0, co, ci, cj, ck)
    sch.unroll(co)
    sch.unroll(cj)
    sch.vectorize(ck)
    sch.decompose_reduction(conv, rc1)

# --- a dense conv that writes NC1HWC0 (the stem before the first fused block) --------------------
def conv_to_blocked_kernel(n, ctx) -> KernelSpec:
    """A dense (group 1) conv reading NCHW and writing NC1HWC0 (passes/stem_layout.py): the C0
    output channels of a block are the vector, so the blocked store costs nothing extra. Weights
    packed [co1, C, kh, kw, C0] with a zero channel tail; padding is a stage of its own."""
    xt = ctx.ttype(n.inputs[0])
    w = np.asarray(ctx.graph.constants[n.inputs[1]], np.float32)
    o, c, kh, kw = w.shape
    co1 = ceil_div(o, C0)
    wpad = np.zeros((co1 * C0, c, kh, kw), np.float32)
    wpad[:o] = w
    wb = np.ascontiguousarray(wpad.reshape(co1, C0, c, kh, kw).transpose(0, 2, 3, 4, 1)).astype(ctx.dtype)
    has_b = len(n.inputs) > 2 and n.inputs[2]
    bb = blocked_bias(ctx.const(n.inputs[2], ACC) if has_b else np.zeros(o, np.float32), o)
    N, _, h, wd = xt.shape
    sh, sw = n.attr("strides", (1, 1))
    pt, pl, pb, pr = n.attr("pads", (0, 0, 0, 0))
    oh, ow = (h + pt + pb - kh) // sh + 1, (wd + pl + pr - kw) // sw + 1
    X = te.placeholder((N, c, h, wd), ctx.dtype, name="x")
    W = te.placeholder(wb.shape, ctx.dtype, name="w")
    B = te.placeholder(bb.shape, ACC, name="b")
    P = X
    if any((pt, pl, pb, pr)):
        P = te.compute((N, c, h + pt + pb, wd + pl + pr), lambda b, ci, i, j: tirx.if_then_else(
            tirx.all(i >= pt, i < h + pt, j >= pl, j < wd + pl), X[b, ci, i - pt, j - pl],
            tirx.const(0, ctx.dtype)), name="pad0")
    rc, rh, rw = (te.reduce_axis((0, e), name=nm) for e, nm in ((c, "rc"), (kh, "rh"), (kw, "rw")))
    out = (N, co1, oh, ow, C0)
    conv = te.compute(out, lambda b, o1, i, j, k: te.sum(
        P[b, rc, i * sh + rh, j * sw + rw].astype(ACC) * W[o1, rc, rh, rw, k].astype(ACC), axis=[rc, rh, rw]),
        name="conv")
    epi = Epilogue.of(n)
    R = epi.placeholders(out, ctx.dtype)
    y = te.compute(out, lambda b, o1, i, j, k: epi.value(conv[b, o1, i, j, k] + B[o1, k], (b, o1, i, j, k), R)
                   .astype(ctx.dtype), name="y")
    return KernelSpec(n.name, te.create_prim_func([X, W, B, *R, y]), (n.inputs[0], wb, bb, *epi.params()), out,
                      ctx.dtype, schedule="conv_to_blocked")


def schedule_conv_to_blocked(sch) -> None:
    """Per output row (parallel): its padded input rows once, then register tiles of (2 output
    blocks x up to 8 pixels) x C0 lanes accumulated over every (channel, tap): one weight vector
    load per block and one broadcast input per pixel feed ro·rj FMAs."""
    y = sch.get_sblock("y")
    conv = sch.get_sblock("conv")
    b, o, i, j, k = sch.get_loops(y)
    co1, ow = int(sch.get(o).extent), int(sch.get(j).extent)
    ro = largest_divisor(co1, 2)
    rj = largest_divisor(ow, MAX_ACC // ro // 2 if ro > 1 else MAX_ACC // 2)
    oo, oi = sch.split(o, [None, ro])
    jo, ji = sch.split(j, [None, rj])
    sch.reorder(b, i, oo, jo, oi, ji, k)
    outer = sch.fuse(b, i)
    sch.parallel(outer)
    sch.vectorize(k)
    sch.compute_at(conv, jo, preserve_unit_loops=True)
    co, ci, cj, ck, rc, rh, rw = sch.get_loops(conv)[-7:]
    sch.reorder(rc, rh, rw, co, ci, cj, ck)
    sch.unroll(co)
    sch.unroll(cj)
    sch.vectorize(ck)
    _place_pad(sch, outer)
    sch.decompose_reduction(conv, rc)
