"""One fused DW→PW block as an MLIR module at the HIVM level (AscendNPU IR), from its KernelPlan.

The kernel is the plan's vector-PW variant, written with the vendor dialect's buffer ops:

  resident in UB   w_dw, b_dw, b_pw (loaded once per core)
  per core         scf.for tile = block_idx .. n_tiles step cores
    per ci-step      x_tile  GM -> UB (halo included; ping/pong slot by step parity)
                     DW: per channel block and tap, acc += cast(x_shift) * w_tap (vector unit)
                     + b_dw, act1, cast into dw_out (the fused intermediate: it never leaves UB)
    per co-step      w_pw block GM -> UB (ping/pong), PW MACs: per input channel and pixel,
                     acc[:, p] += dw_out[p, k] * w[k] (scalar x vector, as the Ascend C kernel),
                     + b_pw, act2, [+ residual tile], cast into y_tile (ping/pong), UB -> GM

GM operands keep NC1HWC0 with batch and C1 merged into the first dimension; the input is the
zero-padded activation (the pads of the DW conv), the PW weight is (Co1, Cin1*C0, 1, C0).
Names in the module are derived from the block index only.
"""

from __future__ import annotations

from fusion.core.errors import MegafuseError
from fusion.codegen.npuir.loops import LoopNest, loop_nest
from fusion.codegen.npuir.mlir_text import ELEM, MemRef, Value, Writer
from fusion.codegen.npuir.vendor import vendor_target
from schedules.activations import PER_CHANNEL, SCRATCH_PARTS, kind_steps
from schedules.activations import parse as parse_act

C0 = 16
CAST = "round_mode = #hivm.round_mode<rint>"
# Why there is no cube variant: what bishengir-compile 1.2.0 did with the forms tried (buffer
# ops as in the dialect tests): memref-level nd2nz -> mmadL1 [-> fixpipe] crashes, with or
# without vector ops beside it; a tensor-level mmadL1 compiles AIC-only, but fed from a UB
# buffer (the DW result, the MIX hand-off) it aborts right after PlanMemory. Separate AIV and AIC
# entry functions in one module do compile: the way in for a cube variant.
CUBE_REFUSAL = ("target npuir emits PW on the vector unit only (--pw-engine vector): bishengir-compile "
                "1.2.0 crashes on memref-level cube modules (SIGSEGV in hivm-inline-fixpipe) and "
                "aborts on a cube matmul fed from a vector-core buffer")


def kernel_name(index: int) -> str:
    return f"dwsep_block{index}"


def gm_operands(ln: LoopNest) -> list[tuple[str, MemRef]]:
    """The kernel's GM arguments, in call order."""
    dt = ELEM[ln.dtype]
    args = [
        ("x", MemRef((ln.batch * ln.c1, ln.padded_h, ln.padded_w, C0), dt, "gm")),
        ("w_dw", MemRef((ln.c1, ln.kh, ln.kw, C0), dt, "gm")),
        ("b_dw", MemRef((ln.c1, 1, 1, C0), "f32", "gm")),
        ("w_pw", MemRef((ln.co1, ln.c1 * C0, 1, C0), dt, "gm")),
        ("b_pw", MemRef((ln.co1, 1, 1, C0), "f32", "gm")),
    ]
    if ln.residual:
        args.append(("res", MemRef((ln.batch * ln.c1, ln.height, ln.width, C0), dt, "gm")))
    args.append(("y", MemRef((ln.batch * ln.co1, ln.out_h, ln.out_w, C0), dt, "gm")))
    return args


def emit_module(plan, index: int, soc_name: str) -> str:
    """The whole module text for block `index` (0-based order of the compiled model)."""
    if plan.pw_on_cube:
        raise MegafuseError(CUBE_REFUSAL)
    for act in (plan.workload.act1, plan.workload.act2):   # fuse_dwsep refuses these blocks first
        why = act_refusal(act)
        if why:
            raise MegafuseError(why)
    ln = loop_nest(plan)
    w = Writer()
    gm = {name: Value(f"%{name}", t) for name, t in gm_operands(ln)}
    _emit_kernel(w, ln, gm)
    sig = ", ".join(f"{v.name}: {v.type}" for v in gm.values())
    target = vendor_target(soc_name)
    head = [f"// megafuse: fused DW->PW block {index}, {plan.workload.describe()}",
            f"// tile {plan.tile.describe()}; {ln.n_tiles} tiles on {ln.cores} cores; "
            f"plan UB {plan.ub_bytes} B",
            f'module attributes {{hacc.target = #hacc.target<"{target}">}} {{',
            f"  func.func @{kernel_name(index)}({sig}) attributes {{hacc.entry}} {{"]
    return "\n".join(head + w.body() + ["    return", "  }", "}", ""])


def ub_layouts(ln: LoopNest) -> dict[str, MemRef]:
    """Each plan buffer as the module allocates it (ping/pong copies stacked on dim 0): same bytes
    as the plan's BufferPlan, shaped for the ops that use it."""
    dt = ELEM[ln.dtype]
    out = {
        "x_tile": MemRef((ln.x_slots * ln.cib, ln.in_th, ln.in_tw, C0), dt, "ub"),
        "w_dw": MemRef((ln.c1, ln.kh, ln.kw, C0), dt, "ub"),
        "b_dw": MemRef((ln.c1, 1, 1, C0), "f32", "ub"),
        "dw_acc": MemRef((ln.cib, ln.th, ln.tw, C0), "f32", "ub"),
        "dw_out": MemRef((ln.c1, ln.th, ln.tw, C0), dt, "ub"),
        "w_pw": MemRef((ln.w_slots * ln.cob, ln.c1 * C0, 1, C0), dt, "ub"),
        "pw_acc": MemRef((ln.cob, ln.th, ln.tw, C0), "f32", "ub"),
        "b_pw": MemRef((ln.co1, 1, 1, C0), "f32", "ub"),
        "y_tile": MemRef((ln.y_slots * ln.cob, ln.th, ln.tw, C0), dt, "ub"),
    }
    if ln.residual:
        out["res_tile"] = MemRef((ln.y_slots * ln.cob, ln.th, ln.tw, C0), dt, "ub")
    return out


# Scratch the HIVM ops need besides the plan's buffers (the dialect has no fused multiply-add),
# always laid over a plan buffer that is idle at that point, so the module needs no UB the plan
# did not budget:
#   DW product (th, tw, C0) fp32     -> pw_acc block 0 (idle during the DW)
#   fp16 tap weight widened, C0      -> pw_acc block 1; with cob = 1 the product goes row by row
#                                       (pixel by pixel when th = 1) and the weight follows it in
#                                       block 0; a 1-pixel tile with cob = 1 multiplies lane by
#                                       lane with scalar weights instead
#   PW product rows, fp16 weight row -> dw_acc (idle during the PW); see pw_mac()
#   epilogue scratch (th, tw, C0)    -> dw_acc block 0


def dw_lane_weights(ln: LoopNest) -> bool:
    """No room for a widened fp16 tap weight: multiply each lane by its weight as a scalar."""
    return ln.dtype != "float32" and ln.cob == 1 and ln.pixels == 1


def pw_mac(ln: LoopNest) -> tuple[int, bool]:
    """(output blocks one PW MAC covers, whether the fp16 weight row is widened once per input
    channel into its own scratch) such that the scratch fits in dw_acc (cib * th * tw rows)."""
    rows = ln.cib * ln.pixels
    fp16 = ln.dtype != "float32"
    for blocks in (ln.cob, 1):
        if fp16 and 2 * blocks <= rows:
            return blocks, True
        if blocks <= rows:
            return blocks, False
    raise AssertionError("dw_acc always holds one row")


def dw_chunk(ln: LoopNest) -> tuple[int, int]:
    """Pixels (rows, cols) one DW product covers: the whole tile unless w_tap must share pw_acc
    block 0 with it (fp16, cob = 1)."""
    if ln.dtype == "float32" or ln.cob >= 2 or ln.pixels == 1:
        return ln.th, ln.tw
    return (1, ln.tw) if ln.th > 1 else (1, 1)


def _emit_kernel(w: Writer, ln: LoopNest, gm: dict[str, Value]) -> None:
    ub = {name: w.alloc(name, t) for name, t in ub_layouts(ln).items()}
    for name in ("w_dw", "b_dw", "b_pw"):   # resident, loaded once per core
        w.op("load", [gm[name]], ub[name])
    bid = w.fresh("bid")
    w.emit(f"{bid} = hivm.hir.get_block_idx -> i64")
    core = w.fresh("core")
    w.emit(f"{core} = arith.index_cast {bid} : i64 to index")
    t = w.open_for(core, w.index(ln.n_tiles), w.index(ln.cores), "t")
    it = w.arith("divui", w.arith("subi", t, core), w.index(ln.cores), "it")   # this core's count
    per_img = ln.tiles_h * ln.tiles_w
    n = w.arith("divui", t, w.index(per_img), "n")
    r = w.arith("remui", t, w.index(per_img), "r")
    oh0 = _origin(w, w.arith("divui", r, w.index(ln.tiles_w)), ln.th, ln.out_h)
    ow0 = _origin(w, w.arith("remui", r, w.index(ln.tiles_w)), ln.tw, ln.out_w)
    _emit_dw(w, ln, gm, ub, it, n, oh0, ow0)
    _emit_pw(w, ln, gm, ub, it, n, oh0, ow0)
    w.close()


def _scratch(w: Writer, ln: LoopNest, ub: dict[str, Value], name: str) -> Value:
    c = w.index
    th, tw = ln.th, ln.tw
    if name == "tap":
        return w.subview(ub["pw_acc"], [c(0)] * 4, (1, th, tw, C0), hint=name)
    if name == "w_tap":
        rows, cols = dw_chunk(ln)
        # just past the product: the next block, else the next row, else the next pixel
        after = (1, 0, 0) if (rows, cols) == (th, tw) else (0, 1, 0) if cols == tw else (0, 0, 1)
        return w.subview(ub["pw_acc"], [c(i) for i in after] + [c(0)], (1, 1, 1, C0), hint=name)
    if name == "ep_tmp":
        return w.subview(ub["dw_acc"], [c(0)] * 4, (1, th, tw, C0), hint=name)
    # mac / w_row: rows of C0 fp32 laid over dw_acc, viewed as (cib * th * tw) pixel rows
    blocks, _ = pw_mac(ln)
    flat = Value(ub["dw_acc"].name, ub["dw_acc"].type)
    rows = w.fresh("rows")
    w.emit(f"{rows} = memref.collapse_shape {flat.name} [[0, 1, 2], [3]] : {flat.type} into "
           f"memref<{ln.cib * th * tw}x{C0}xf32, #hivm.address_space<ub>>")
    first = 0 if name == "mac" else blocks
    view = w.fresh(name)
    t = MemRef((blocks, 1, 1, C0), "f32", "ub", (C0, C0, C0, 1))
    w.emit(f"{view} = memref.expand_shape {rows}[[0, 1, 2], [3]] output_shape [{ln.cib * th * tw}, 1, 1, {C0}] "
           f": memref<{ln.cib * th * tw}x{C0}xf32, #hivm.address_space<ub>> into "
           f"memref<{ln.cib * th * tw}x1x1x{C0}xf32, #hivm.address_space<ub>>")
    whole = Value(view, MemRef((ln.cib * th * tw, 1, 1, C0), "f32", "ub"))
    return w.subview(whole, [c(first), c(0), c(0), c(0)], t.shape, hint=name)


def _origin(w: Writer, i: str, size: int, extent: int) -> str:
    """min(i * size, extent - size): full-size blocks, the last one moved back inside."""
    return w.arith("minsi", w.arith("muli", i, w.index(size)), w.index(extent - size), "o")


def _slot(w: Writer, it: str, steps: int, step: str, slots: int, rows: int) -> str:
    """First row of the ping/pong slot used by step `step` of iteration `it`."""
    count = w.arith("addi", w.arith("muli", it, w.index(steps)), step)
    return w.arith("muli", w.arith("remui", count, w.index(slots)), w.index(rows), "slot")


def _emit_dw(w: Writer, ln: LoopNest, gm, ub, it, n, oh0, ow0) -> None:
    c, dt = w.index, ELEM[ln.dtype]
    sh, sw = ln.stride
    ci = w.open_for(c(0), c(ln.ci_steps), c(1), "ci")
    cb0 = _origin(w, ci, ln.cib, ln.c1)
    xs = _slot(w, it, ln.ci_steps, ci, ln.x_slots, ln.cib)
    x_tile = w.subview(ub["x_tile"], [xs, c(0), c(0), c(0)], (ln.cib, ln.in_th, ln.in_tw, C0), hint="xt")
    src = w.subview(gm["x"], [w.arith("addi", w.arith("muli", n, c(ln.c1)), cb0),
                              w.arith("muli", oh0, c(sh)), w.arith("muli", ow0, c(sw)), c(0)],
                    (ln.cib, ln.in_th, ln.in_tw, C0), hint="xg")
    w.op("load", [src], x_tile)
    acc = ub["dw_acc"]
    w.op("vbrc", [(w.scalar(0.0, "f32"), "f32")], acc)
    prod = _scratch(w, ln, ub, "tap")
    lanes = dw_lane_weights(ln)
    w32 = _scratch(w, ln, ub, "w_tap") if dt != "f32" and not lanes else None
    cb = w.open_for(c(0), c(ln.cib), c(1), "cb")
    ch = w.arith("addi", cb0, cb, "ch")
    acc_c = w.subview(acc, [cb, c(0), c(0), c(0)], (1, ln.th, ln.tw, C0), hint="accc")
    kh = w.open_for(c(0), c(ln.kh), c(1), "kh")
    kw = w.open_for(c(0), c(ln.kw), c(1), "kw")
    wt = w.subview(ub["w_dw"], [ch, kh, kw, c(0)], (1, 1, 1, C0), hint="w")
    if w32 is not None:   # fp16 storage, fp32 accumulation: widen the tap weight once
        w.op("vcast", [wt], w32, CAST)
        wt = w32
    rows, cols = dw_chunk(ln)
    r = w.open_for(c(0), c(ln.th // rows), c(1), "r") if rows < ln.th else c(0)
    q = w.open_for(c(0), c(ln.tw // cols), c(1), "q") if cols < ln.tw else c(0)
    tap = w.subview(x_tile, [cb, w.arith("addi", kh, w.arith("muli", r, c(rows * sh))),
                             w.arith("addi", kw, w.arith("muli", q, c(cols * sw))), c(0)],
                    (1, rows, cols, C0), (1, sh, sw, 1), hint="x")
    part = w.subview(acc_c, [c(0), r, q, c(0)], (1, rows, cols, C0), hint="accr")
    chunk = w.subview(prod, [c(0)] * 4, (1, rows, cols, C0), hint="pr")
    if lanes:   # 1-pixel tile, cob = 1: lane l times its weight as a scalar
        w.op("vcast", [tap], chunk, CAST)
        lane = w.open_for(c(0), c(C0), c(1), "l")
        wv, wf = w.fresh("wv"), w.fresh("wf")
        w.emit(f"{wv} = memref.load {ub['w_dw'].name}[{ch}, {kh}, {kw}, {lane}] : {ub['w_dw'].type}")
        w.emit(f"{wf} = arith.extf {wv} : {dt} to f32")
        one = w.subview(chunk, [c(0), c(0), c(0), lane], (1, 1, 1, 1), hint="ln")
        w.op("vmul", [one, (wf, "f32")], one)
        w.close()
    elif w32 is not None:
        w.op("vcast", [tap], chunk, CAST)
        w.op("vmul", [chunk, wt], chunk, "broadcast = [1, 2]")
    else:
        w.op("vmul", [tap, wt], chunk, "broadcast = [1, 2]")
    w.op("vadd", [part, chunk], part)
    w.close_n(2 + (rows < ln.th) + (cols < ln.tw))
    bias = w.subview(ub["b_dw"], [ch, c(0), c(0), c(0)], (1, 1, 1, C0), hint="b")
    w.op("vadd", [acc_c, bias], acc_c, "broadcast = [1, 2]")
    _act(w, ln.act1, acc_c, prod)
    dst = w.subview(ub["dw_out"], [ch, c(0), c(0), c(0)], (1, ln.th, ln.tw, C0), hint="dwo")
    _store_cast(w, acc_c, dst)
    w.close()   # cb
    w.close()   # ci


def _emit_pw(w: Writer, ln: LoopNest, gm, ub, it, n, oh0, ow0) -> None:
    c, dt = w.index, ELEM[ln.dtype]
    co = w.open_for(c(0), c(ln.co_steps), c(1), "co")
    ob0 = _origin(w, co, ln.cob, ln.co1)
    ws = _slot(w, it, ln.co_steps, co, ln.w_slots, ln.cob)
    w_blk = w.subview(ub["w_pw"], [ws, c(0), c(0), c(0)], (ln.cob, ln.c1 * C0, 1, C0), hint="wb")
    w_src = w.subview(gm["w_pw"], [ob0, c(0), c(0), c(0)], (ln.cob, ln.c1 * C0, 1, C0), hint="wg")
    w.op("load", [w_src], w_blk)
    acc = ub["pw_acc"]
    w.op("vbrc", [(w.scalar(0.0, "f32"), "f32")], acc)
    blocks, widen = pw_mac(ln)
    prod = _scratch(w, ln, ub, "mac")
    w32 = _scratch(w, ln, ub, "w_row") if dt != "f32" and widen else None
    k1 = w.open_for(c(0), c(ln.c1), c(1), "k1")
    lane = w.open_for(c(0), c(C0), c(1), "l")
    k = w.arith("addi", w.arith("muli", k1, c(C0)), lane, "k")
    ob = w.open_for(c(0), c(ln.cob), c(blocks), "ob") if blocks < ln.cob else c(0)
    w_row = w.subview(w_blk, [ob, k, c(0), c(0)], (blocks, 1, 1, C0), hint="wr")
    if w32 is not None:
        w.op("vcast", [w_row], w32, CAST)
        w_row = w32
    ph = w.open_for(c(0), c(ln.th), c(1), "ph")
    pw = w.open_for(c(0), c(ln.tw), c(1), "pw")
    xv = w.fresh("xv")
    dw_out = ub["dw_out"]
    w.emit(f"{xv} = memref.load {dw_out.name}[{k1}, {ph}, {pw}, {lane}] : {dw_out.type}")
    if dt != "f32":
        xf = w.fresh("xf")
        w.emit(f"{xf} = arith.extf {xv} : {dt} to f32")
        xv = xf
    if dt != "f32" and not widen:   # no room for a widened row: widen into the product
        w.op("vcast", [w_row], prod, CAST)
        w.op("vmul", [prod, (xv, "f32")], prod)
    else:
        w.op("vmul", [w_row, (xv, "f32")], prod)
    acc_p = w.subview(acc, [ob, ph, pw, c(0)], (blocks, 1, 1, C0), hint="accp")
    w.op("vadd", [acc_p, prod], acc_p)
    w.close_n(4 + (blocks < ln.cob))
    # epilogue: bias, act2, residual, cast, store
    bias = w.subview(ub["b_pw"], [ob0, c(0), c(0), c(0)], (ln.cob, 1, 1, C0), hint="b")
    w.op("vadd", [acc, bias], acc, "broadcast = [1, 2]")
    ys = _slot(w, it, ln.co_steps, co, ln.y_slots, ln.cob)
    y_tile = w.subview(ub["y_tile"], [ys, c(0), c(0), c(0)], (ln.cob, ln.th, ln.tw, C0), hint="yt")
    row = w.arith("addi", w.arith("muli", n, c(ln.co1)), ob0, "row")
    tmp = _scratch(w, ln, ub, "ep_tmp") if act_needs_scratch(ln.act2) or ln.residual else None
    if ln.residual:
        r_tile = w.subview(ub["res_tile"], [ys, c(0), c(0), c(0)], (ln.cob, ln.th, ln.tw, C0), hint="rt")
        r_src = w.subview(gm["res"], [row, oh0, ow0, c(0)], (ln.cob, ln.th, ln.tw, C0), hint="rg")
        w.op("load", [r_src], r_tile)
    if ln.act2 != "none" or ln.residual:   # per output block: the scratch is one block
        ob = w.open_for(c(0), c(ln.cob), c(1), "ob")
        acc_o = w.subview(acc, [ob, c(0), c(0), c(0)], (1, ln.th, ln.tw, C0), hint="acco")
        _act(w, ln.act2, acc_o, tmp)
        if ln.residual:
            r_o = w.subview(r_tile, [ob, c(0), c(0), c(0)], (1, ln.th, ln.tw, C0), hint="ro")
            if dt != "f32":
                w.op("vcast", [r_o], tmp, CAST)
                r_o = tmp
            w.op("vadd", [acc_o, r_o], acc_o)
        w.close()
    _store_cast(w, acc, y_tile)
    dst = w.subview(gm["y"], [row, oh0, ow0, c(0)], (ln.cob, ln.th, ln.tw, C0), hint="yg")
    w.op("store", [y_tile], dst)
    w.close()   # co


def act_refusal(act: str) -> str | None:
    """Why the emitter cannot apply `act` (None when it can): every activation of the table but
    the per-channel ones, whose slope operand this kernel does not carry."""
    a = parse_act(act)
    if a.kind in PER_CHANNEL:
        return (f"activation {act!r} is not emitted in AscendNPU IR: the kernel has no per-channel "
                "slope operand (a broadcast vector per C0 block)")
    if a.kind in SCRATCH_PARTS:
        return (f"activation {act!r} is not emitted in AscendNPU IR: its body needs {SCRATCH_PARTS[a.kind]} "
                "fp32 scratch operands and this kernel's epilogue carries one")
    if a.kind not in _ACT_SCRATCH:
        return f"activation {act!r} has no AscendNPU IR lowering"
    return None


# activations whose HIVM ops need an fp32 scratch the size of the operand (the dialect's vector
# ops are unary/binary in place: x * gate needs the gate beside x)
_ACT_SCRATCH = {"none": False, "relu": False, "relu6": False, "clip": False, "hardsigmoid": False,
                "hardswish": True, "hardswishab": True, "leakyrelu": True, "silu": True,
                "gelutanh": True}
_HIVM = {"Mul": "vmul", "Muls": "vmul", "Adds": "vadd", "Div": "vdiv", "Exp": "vexp", "Maxs": "vmax",
         "Mins": "vmin"}


def act_needs_scratch(act: str) -> bool:
    return _ACT_SCRATCH[parse_act(act).kind]


def _act(w: Writer, act: str, x: Value, tmp: Value | None) -> None:
    """`act` on x (fp32, in place) with scalar-operand HIVM ops; tmp: a scratch shaped as x."""
    why = act_refusal(act)
    if why:
        raise MegafuseError(why)
    a = parse_act(act)

    def s(v):
        return (w.scalar(v, "f32"), "f32")

    if a.kind == "none":
        return
    if a.kind in ("relu", "relu6", "clip"):
        lo, hi = {"relu": (0.0, None), "relu6": (0.0, 6.0)}.get(a.kind, a.params)
        w.op("vmax", [x, s(lo)], x)
        if hi is not None:
            w.op("vmin", [x, s(hi)], x)
    elif a.kind == "hardsigmoid":   # min(max(alpha * x + beta, 0), 1)
        w.op("vmul", [x, s(a.params[0])], x)
        w.op("vadd", [x, s(a.params[1])], x)
        w.op("vmax", [x, s(0.0)], x)
        w.op("vmin", [x, s(1.0)], x)
    elif a.kind == "silu":         # x / (1 + exp(-x))
        w.op("vmul", [x, s(-1.0)], tmp)
        w.op("vexp", [tmp], tmp)
        w.op("vadd", [tmp, s(1.0)], tmp)
        w.op("vdiv", [x, tmp], x)
    elif a.kind == "gelutanh":     # schedules/activations.kind_steps, A = tmp
        env = {"v": x, "A": tmp}
        for op, dst, src, *rest in kind_steps(a.kind):
            operands = [env[src]] + ([env[rest[0]]] if op in ("Mul", "Div") else [s(rest[0])] if rest else [])
            w.op(_HIVM[op], operands, env[dst])
    elif a.kind == "leakyrelu":    # x >= 0 ? x : a x  ==  max(x, a x) for a <= 1, min(x, a x) above
        w.op("vmul", [x, s(a.params[0])], tmp)
        w.op("vmax" if a.params[0] <= 1 else "vmin", [x, tmp], x)
    else:   # hardswish: x * min(max(x + 3, 0), 6) / 6; hardswishab: x * min(max(alpha x + beta, 0), 1)
        if a.kind == "hardswish":
            w.op("vadd", [x, s(3.0)], tmp)
            w.op("vmax", [tmp, s(0.0)], tmp)
            w.op("vmin", [tmp, s(6.0)], tmp)
            w.op("vmul", [tmp, s(1.0 / 6.0)], tmp)
        else:
            w.op("vmul", [x, s(a.params[0])], tmp)
            w.op("vadd", [tmp, s(a.params[1])], tmp)
            w.op("vmax", [tmp, s(0.0)], tmp)
            w.op("vmin", [tmp, s(1.0)], tmp)
        w.op("vmul", [x, tmp], x)


def _store_cast(w: Writer, src: Value, dst: Value) -> None:
    if src.type.elem == dst.type.elem:
        w.op("copy", [src], dst)
    else:
        w.op("vcast", [src], dst, CAST)
