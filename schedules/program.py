"""The lowered kernel program of a KernelPlan: the fused kernel's loop nest as data.

The plan decides (tile sizes, buffers, engine); the program describes what the kernel does with
them. Per core: a prologue (the resident loads that ride on the first tile) and its tiles; per
tile, by role, loops over channel blocks whose iterations are tuples of typed steps:

  core (vector PW, 310P cube)  ci loop: load x block, DW ops        co loop: PW, epilogue, store y
  aiv  (910B MIX, DW side)     ci loop: load x block, DW ops, DW result -> GM slot (+ flag)
                               epi loop (no Fixpipe epilogue): pre-activation <- GM, epilogue, y
  aic  (910B MIX, PW side)     co loop: DW result <- GM (first step), weights, GEMM, Fixpipe out

Every step names the plan buffer it reads or writes and carries its bytes / bursts / instruction
counts, so counting the program (KernelProgram.counts) gives the GM traffic, vector instructions and
repeats and cube fractals of the whole kernel. The cost model times these very steps on its pipes.
The fused kernel's vector ops are counted as its Ascend C templates issue them (dw_ops,
vector_pw_ops, block_epilogue_ops), so the emulator's counters equal KernelProgram.counts; the unfused
(vendor-like) kernels' programs are in schedules/baseline_program.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property, lru_cache

from fusion.core.ir import C0
from schedules.activations import needs_scratch, needs_slope, scratch_chunk
from schedules.channel_norm import ln_ops
from schedules.dw_forms import _tap_ops, block_form_ops, dw_form_work, grouped_dw_ops  # noqa: F401
from schedules.loops import (block_len, block_start, group_member, round_robin, split, tile_col,
                             tile_row, window_span, window_start, window_valid)
from schedules.isa import ACC_BYTES, ACT_OPS, VecWork, bias_block16, bias_halves, count_form, cube_fractals, itemsize
from schedules.plan import KernelPlan
from schedules.twophase import act2_vector_ops
from schedules.steps import Copy, CubeOp, Handoff, Iteration, Move, Refill, Step, VectorOp, count_steps, total_work  # noqa: F401
from schedules.workload import DwSepWorkload, ceil_div


# ---------------------------------------------------------------------------------------------
# steps
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Loop:
    var: str                          # ci | co
    blocks: tuple[int, ...]           # channel blocks (of C0) of each iteration
    iters: tuple[Iteration, ...]


@dataclass(frozen=True)
class CoreProgram:
    name: str                         # core0 | aiv3 | aic1
    role: str                         # core | aiv | aic
    prologue: tuple                   # resident loads (Copy), issued with the first tile; bias Casts (VectorOp)
    tiles: tuple[int, ...]            # indices into KernelProgram.tiles
    serves: tuple[str, ...] = ()      # aic: the AIVs whose tiles it runs (in the order they are ready)


# ---------------------------------------------------------------------------------------------
# geometry
# ---------------------------------------------------------------------------------------------
def axis(i: int, t: int, out_total: int, stride: int, k: int, pad_lo: int, in_total: int):
    """(valid outputs, valid input rows read, touches padding) of tile i (of t outputs) along one
    axis, as the kernel's SetTile computes them. The kernel computes the full tile; the input
    window is clipped to the image."""
    lo, span = window_start(block_start(i, t), stride, pad_lo), window_span(t, stride, k)
    return (block_len(i, t, out_total), window_valid(lo, span, in_total),
            lo < 0 or lo + span > in_total)


@lru_cache(maxsize=1024)
def tile_axes(wl: DwSepWorkload, th: int, tw: int) -> tuple[tuple, tuple]:
    """(valid outputs, valid input rows) of every tile row and tile column (touches-padding is
    dropped: tiles with the same steps share one key)."""
    kh, kw = wl.kernel
    rows = tuple(axis(i, th, wl.out_height, wl.stride[0], kh, wl.pads[0], wl.height)[:2]
                 for i in range(ceil_div(wl.out_height, th)))
    cols = tuple(axis(j, tw, wl.out_width, wl.stride[1], kw, wl.pads[1], wl.width)[:2]
                 for j in range(ceil_div(wl.out_width, tw)))
    return rows, cols


def rows_bursts(blocks: int, rows: int, full_width: bool) -> int:
    """NC1HWC0: one burst per row, or one per channel block when rows span the full width."""
    return blocks if full_width else blocks * rows


# ---------------------------------------------------------------------------------------------
# per-iteration builders (the one description of the loop body)
# ---------------------------------------------------------------------------------------------
def _b(plan: KernelPlan) -> int:
    return itemsize(plan.workload.dtype)


def out_io(plan: KernelPlan, cbo: int, r, c) -> tuple[int, int]:
    """(bytes, bursts) of one output block of a tile (y, or the residual read like it)."""
    ohv, owv = r[0], c[0]
    return (cbo * ohv * owv * C0 * _b(plan),
            rows_bursts(cbo, ohv, owv == plan.workload.out_width))


# the fp32 scratch each activation stage of the fused kernel chunks through (needs_scratch):
# the vector-PW kernel borrows its other accumulator, the two-phase epilogue holds act2_tmp (one
# GEMM tile block), the others act_tmp (one tile block). The emitters pass the buffer named here.
_ACT_SCRATCH = {"vector-pw": {"act1": "pw_acc", "act2": "dw_acc"}, "two-phase": {"act2": "act2_tmp"}}


def act_scratch(variant: str, stage: str) -> str:
    """The plan buffer an activation stage (act1 | act2) of `variant` uses as scratch."""
    return _ACT_SCRATCH.get(variant, {}).get(stage, "act_tmp")


def act_ops(plan: KernelPlan, stage: str, elems: int, calls: int = 1) -> VecWork:
    """`calls` activation calls (stage act1 | act2, the Act1 / Act2 body of
    schedules/activations.ascendc_body) over `elems` fp32 elements each."""
    act = getattr(plan.workload, stage)
    if not ACT_OPS[act]:
        return VecWork()
    if needs_slope(act):   # PreluBlock per channel block of th·tw pixels, one pixel a repeat
        thw = plan.th * plan.tw
        blocks = calls * elems // (thw * C0)
        return VecWork(blocks * ceil_div(thw, plan.soc.max_repeat), blocks * thw) * ACT_OPS[act]
    if not needs_scratch(act):
        return count_form(plan.soc, elems, ACC_BYTES, calls) * ACT_OPS[act]
    tmp = scratch_chunk(act, plan.buffer(act_scratch(plan.variant, stage)).bytes_per_copy // ACC_BYTES)
    full, rem = divmod(elems, tmp)
    return (count_form(plan.soc, tmp, ACC_BYTES, full * calls) + count_form(plan.soc, rem, ACC_BYTES, calls)) \
        * ACT_OPS[act]


@lru_cache(maxsize=4096)
def dw_ops(plan: KernelPlan, cb: int, pad_elems: int) -> tuple[VectorOp, ...]:
    """The DW of one ci-block of the fused kernel's tile, as templates/dw.h issues it: (padded
    tile) one Duplicate zeroing the whole x tile; (plan.x_max) one Mins over it; then the
    grouped form (plan.dw_grouped, two-phase only) or the per-block form (schedules/dw_forms.py;
    fp16 post-ops where plan.dw_post16, its taps over wide rows where plan.dw_wide), act1 of the
    latter in chunks of act_tmp, one block, when it needs scratch.""" 
    soc, wl = plan.soc, plan.workload
    b = itemsize(wl.dtype)
    x_elems = cb * plan.in_tile_h * plan.in_tile_w * C0
    ops = []
    if pad_elems:
        w = count_form(soc, x_elems, b)
        ops.append(VectorOp("pad", "x_tile", cb * pad_elems, w.instrs, w.repeats))
    if plan.x_max is not None:   # the producer's deferred clip, over the whole x tile
        w = count_form(soc, x_elems, b)
        ops.append(VectorOp("clip_x", "x_tile", x_elems, w.instrs, w.repeats))
    if plan.dw_grouped:
        ops += grouped_dw_ops(soc, wl, plan.th, plan.tw, cb)
    else:
        ops += block_form_ops(soc, wl, plan.th, plan.tw, cb, plan.in_tile_w,
                              lambda elems: act_ops(plan, "act1", elems), plan.dw_post16, plan.dw_wide)
    return tuple(ops)


def _slots(plan: KernelPlan) -> int:
    return plan.tile.copies


def ci_iters(plan: KernelPlan, r, c) -> tuple[Iteration, ...]:
    """The ci-loop of one tile: per input-channel block the x load and the DW; on 910B also the
    DW result to the tile's GM slot, and after the last block the flag to the AIC; on 310P (cube)
    after the last block the DW result UB -> L1."""
    wl, b = plan.workload, _b(plan)
    ihv, iwv = r[1], c[1]
    pad = (plan.in_tile_h * plan.in_tile_w - ihv * iwv) * C0
    mix = plan.handoff_via_gm
    blocks = split(wl.c1, plan.cib)
    out = []
    for j, cb in enumerate(blocks):
        it = [Copy("input", "in", "x_tile", "x", cb * ihv * iwv * C0 * b,
                   rows_bursts(cb, ihv, iwv == wl.width), _slots(plan)),
              *dw_ops(plan, cb, pad)]
        if wl.ln_eps is not None and j == len(blocks) - 1:   # MODELED (schedules/channel_norm.py)
            it += ln_ops(plan)
        if mix:
            it.append(Copy("handoff", "out", "dw_out", "dw_slot", cb * plan.th * plan.tw * C0 * b, cb))
            if j == len(blocks) - 1:
                it.append(Handoff("dw_ready", "dw_slot"))
        elif plan.pw_on_cube and j == len(blocks) - 1:   # 310P: the tile's DW result UB -> L1 (MTE3)
            it.append(Move("UB->L1", "dw_out", "dw_out_l1", wl.c1 * plan.th * plan.tw * C0 * b))
        out.append(tuple(it))
    return tuple(out)


def _weights_block(plan: KernelPlan, cbo: int, buffer: str) -> Copy:
    wl = plan.workload
    return Copy("weights", "in", buffer, "w_pw", wl.c1 * C0 * cbo * C0 * _b(plan), 1, _slots(plan))


def co_iters(plan: KernelPlan, r, c) -> tuple[Iteration, ...]:
    """The co-loop of one tile on a core that runs the whole block (vector PW, or the cube of a
    coupled chip): weights (unless resident), residual, PW, epilogue, y."""
    wl, soc, b = plan.workload, plan.soc, _b(plan)
    thw, thw_al = plan.th * plan.tw, plan.thw_al
    cube = plan.pw_on_cube
    out = []
    for q, cbo in enumerate(split(wl.co1, plan.cob)):
        it: list = []
        if not plan.pw_weights_resident:
            it.append(_weights_block(plan, cbo, "w_pw_l1" if cube else "w_pw"))
        if wl.residual:
            it.append(Copy("residual", "in", "res_tile", "res", *out_io(plan, cbo, r, c), _slots(plan)))
        if cube:
            it.append(Move("L1->L0B", "w_pw_l1", "b_l0b", wl.c1 * C0 * cbo * C0 * b))
            if q == 0:   # L1 -> L0A once per tile (the ci loop staged A in L1); A stays in L0A
                it.append(Move("L1->L0A", "dw_out_l1", "a_l0a", wl.c1 * thw_al * C0 * b))
            it.append(CubeOp(cube_fractals(soc, thw, wl.c1, cbo), "a_l0a", "b_l0b", "pw_acc"))
            it += l0c_epilogue(plan, cbo, thw, thw_al, "dw_acc")
        else:
            it += vector_pw_ops(plan, cbo)
        it.append(Copy("output", "out", "y_tile", "y", *out_io(plan, cbo, r, c), _slots(plan)))
        out.append(tuple(it))
    return tuple(out)


@lru_cache(maxsize=4096)
def vector_pw_ops(plan: KernelPlan, cbo: int) -> tuple[VectorOp, ...]:
    """The PW of cbo output blocks on the vector unit, as templates/vector_class.h ComputePw issues
    it on the pixel-major accumulator: zero it, one Axpy of cbo·C0 lanes per input channel and
    pixel, + b_pw (up to 4 blocks a repeat, one pixel a repeat), act2 (chunks of dw_acc),
    [+ residual, one pixel a repeat per block], the cast per block (fp16; fp32 is a DataCopy)."""
    soc, wl = plan.soc, plan.workload
    thw = plan.th * plan.tw
    n = thw * cbo * C0
    per_px = VecWork(ceil_div(thw, soc.max_repeat), thw)   # one repeat-form op, one pixel a repeat
    w = count_form(soc, n, ACC_BYTES)
    ops = [VectorOp("zero", "pw_acc", n, w.instrs, w.repeats)]
    w = count_form(soc, cbo * C0, ACC_BYTES, wl.cin * thw)
    ops.append(VectorOp("pw_mac", "pw_acc", wl.cin * n, w.instrs, w.repeats))
    w = per_px * ceil_div(cbo, 4)
    ops.append(VectorOp("bias2", "pw_acc", n, w.instrs, w.repeats))
    if ACT_OPS[wl.act2]:
        w = act_ops(plan, "act2", n)
        ops.append(VectorOp("act2", "pw_acc", n, w.instrs, w.repeats))
    if wl.residual:
        w = per_px * cbo
        ops.append(VectorOp("residual", "pw_acc", n, w.instrs, w.repeats))
    if itemsize(wl.dtype) != ACC_BYTES:
        w = per_px * cbo
        ops.append(VectorOp("cast", "y_tile", n, w.instrs, w.repeats))
    return tuple(ops)


def aic_iters(plan: KernelPlan, r, c) -> tuple[Iteration, ...]:
    """910B: the AIC's co-loop of one tile: the DW result from its GM slot (first co-step),
    weights (unless resident), the GEMM, and Fixpipe out of L0C (y, or the pre-activation)."""
    wl, soc, b = plan.workload, plan.soc, _b(plan)
    thw, thw_al = plan.th * plan.tw, plan.thw_al
    out = []
    for q, cbo in enumerate(split(wl.co1, plan.cob)):
        it: list = []
        if q == 0:
            it.append(Copy("handoff", "in", "dw_in_l1", "dw_slot", wl.c1 * thw * C0 * b, wl.c1, _slots(plan)))
        if not plan.pw_weights_resident:
            it.append(_weights_block(plan, cbo, "w_pw_l1"))
        it.append(Move("L1->L0B", "w_pw_l1", "b_l0b", wl.c1 * C0 * cbo * C0 * b))
        if q == 0:
            it.append(Move("L1->L0A", "dw_in_l1", "a_l0a", wl.c1 * thw_al * C0 * b))
        it.append(CubeOp(cube_fractals(soc, thw, wl.c1, cbo), "a_l0a", "b_l0b", "pw_acc"))
        if plan.fixpipe_epilogue:
            it.append(Copy("output", "out", "pw_acc", "y", *out_io(plan, cbo, r, c)))
        else:
            it.append(Copy("handoff", "out", "pw_acc", "pre_slot", cbo * thw * C0 * b, cbo))
            it.append(Handoff("pre_ready", "pre_slot"))
        out.append(tuple(it))
    return tuple(out)


def epi_iters(plan: KernelPlan, r, c) -> tuple[Iteration, ...]:
    """910B without a Fixpipe epilogue: the AIV's co-loop of one tile after the AIC's flag."""
    wl, b = plan.workload, _b(plan)
    thw = plan.th * plan.tw
    out = []
    for cbo in split(wl.co1, plan.cob):
        it: list = [Copy("handoff", "in", "pre_tile", "pre_slot", cbo * thw * C0 * b, cbo, _slots(plan))]
        if wl.residual:
            it.append(Copy("residual", "in", "res_tile", "res", *out_io(plan, cbo, r, c), _slots(plan)))
        it += block_epilogue_ops(plan, cbo, True)
        it.append(Copy("output", "out", "y_tile", "y", *out_io(plan, cbo, r, c), _slots(plan)))
        out.append(tuple(it))
    return tuple(out)


@lru_cache(maxsize=4096)
def block_epilogue_ops(plan: KernelPlan, cbo: int, widen: bool, pixels: int = 0) -> tuple[VectorOp, ...]:
    """The PW epilogue of cbo output blocks landed from the cube, block by block as
    templates/epilogue_block.h issues it: (widen: the 910B AIV reads the fp16 pre-activation
    back, aiv_epilogue.h) a Cast to fp32, + b_pw in two channel halves (8 pixels a repeat, a
    ragged group apart), act2 (act_tmp holds one block: one chunk), [+ residual (Axpy)], the
    cast to the storage dtype. `pixels`: the block's pixels when not the tile's (the two-phase
    GEMM tile's rows)."""
    soc, wl = plan.soc, plan.workload
    pixels = pixels or plan.th * plan.tw
    n = pixels * C0
    whole = count_form(soc, n, ACC_BYTES, cbo)
    bias = bias_halves(soc, pixels) * cbo
    ops = [VectorOp("cast", "dw_acc", cbo * n, whole.instrs, whole.repeats)] if widen else []
    ops.append(VectorOp("bias2", "dw_acc", cbo * n, bias.instrs, bias.repeats))
    if ACT_OPS[wl.act2]:
        w = act_ops(plan, "act2", n, cbo)
        ops.append(VectorOp("act2", "dw_acc", cbo * n, w.instrs, w.repeats))
    if wl.residual:
        ops.append(VectorOp("residual", "dw_acc", cbo * n, whole.instrs, whole.repeats))
    ops.append(VectorOp("cast", "y_tile", cbo * n, whole.instrs, whole.repeats))
    return tuple(ops)


def epilogue16_ops(plan: KernelPlan, cbo: int, rows: int) -> tuple[VectorOp, ...]:
    """The epilogue of cbo output blocks of `rows` pixels in the storage dtype (plan.epi_post16:
    310P after the casting L0C -> UB move, templates/cube_epi16.h and twophase_epi_ub16.h; 910B
    phase 3 on the fp16 pre-activation, snippet EPI_TILE_16): per output block + b_pw16
    (isa.bias_block16) into y_tile, act2's ops and the residual Add in count form over the blocks."""
    soc, wl = plan.soc, plan.workload
    b = itemsize(wl.dtype)
    n = cbo * rows * C0
    ops = []
    if not plan.bias_in_cube:   # (else the cube added it and the move applied relu: bias_gemm)
        w = bias_block16(soc, rows) * cbo
        ops.append(VectorOp("bias2", "y_tile", n, w.instrs, w.repeats))
    acts = act2_vector_ops(wl.act2, plan.bias_in_cube)
    if acts:
        w = count_form(soc, n, b) * acts
        ops.append(VectorOp("act2", "y_tile", n, w.instrs, w.repeats))
    if wl.residual:
        w = count_form(soc, n, b)
        ops.append(VectorOp("residual", "y_tile", n, w.instrs, w.repeats))
    return tuple(ops)


def l0c_epilogue(plan: KernelPlan, cbo: int, rows: int, landed_rows: int, acc: str) -> tuple:
    """After an output tile's GEMM on a coupled core (310P: the cube kernel's co-step, the
    two-phase GEMM tile): the bias GEMM (plan.bias_in_cube), the cbo blocks of landed_rows rows
    L0C -> UB -- cast into y_tile (plan.epi_post16) or into the fp32 `acc` -- and the epilogue of
    `rows` pixels."""
    move = cbo * landed_rows * C0 * ACC_BYTES
    if plan.epi_post16:   # cast to the storage dtype in the move, into y_tile
        return (*bias_gemm(plan, rows, cbo), Move("L0C->UB", "pw_acc", "y_tile", move),
                *epilogue16_ops(plan, cbo, rows))
    return (*bias_gemm(plan, rows, cbo), Move("L0C->UB", "pw_acc", acc, move),
            *block_epilogue_ops(plan, cbo, False, rows))


def bias_gemm(plan: KernelPlan, rows: int, cbo: int) -> tuple[Move | CubeOp, ...]:
    """(plan.bias_in_cube) The PW bias into L0C after an output tile's GEMM: the co-step's cbo
    bias fractals L1 -> L0B and one Mmad of K = 16 (A: ones_l0a) accumulating onto C."""
    if not plan.bias_in_cube:
        return ()
    return (Move("L1->L0B", "bias_l1", "bias_l0b", cbo * C0 * C0 * _b(plan)),
            CubeOp(cube_fractals(plan.soc, rows, 1, cbo), "ones_l0a", "bias_l0b", "pw_acc"))


def bias_setup(plan: KernelPlan, rows: int) -> tuple[Move, ...]:
    """(plan.bias_in_cube) Once per core, after b_pw16: the bias fractals zeroed in L1
    (InitConstValue), row 0 of each the fp16 bias (one UB -> L1 copy), and the ones A operand
    of `rows` rows in L0A (InitConstValue)."""
    if not plan.bias_in_cube:
        return ()
    wl, b = plan.workload, _b(plan)
    return (Move("init->L1", "", "bias_l1", wl.co1 * C0 * C0 * b),
            Move("UB->L1", "b_pw16", "bias_l1", wl.co1 * C0 * b),
            Move("init->L0A", "", "ones_l0a", rows * C0 * b))


def bias_cast(soc, buffer: str, blocks: int) -> VectorOp:
    """The fp32 bias of `blocks` channel blocks cast once to the storage dtype into `buffer`
    (one count-form Cast: snippets DW_BIAS16, B_PW16)."""
    w = count_form(soc, blocks * C0, ACC_BYTES)
    return VectorOp("bias_cast", buffer, blocks * C0, w.instrs, w.repeats)


def resident_loads(plan: KernelPlan, role: str) -> tuple[Copy | VectorOp, ...]:
    """Loads a core of `role` issues once, with its first tile: DW taps and bias (core, aiv), the
    PW bias where the epilogue runs, the PW weights where the GEMM runs when they are resident;
    and the Casts of the biases to the storage dtype where the 16-bit forms use them."""
    wl, b = plan.workload, _b(plan)
    kh, kw = wl.kernel
    fix = plan.fixpipe_epilogue
    dw = role in ("core", "aiv")
    b_pw = role == "core" or (role == "aiv" and not fix) or (role == "aic" and fix)
    w_pw = plan.pw_weights_resident and role in ("core", "aic")
    out = []
    if dw:
        out.append(Copy("weights", "in", "w_dw", "w_dw", wl.c1 * kh * kw * C0 * b, 1))
        out.append(Copy("weights", "in", "b_dw", "b_dw", wl.c1 * C0 * ACC_BYTES, 1))
        if plan.dw_post16:   # (310P cube kernel) the bias added in the storage dtype: one Cast
            out.append(bias_cast(plan.soc, "b_dw16", wl.c1))
        if needs_slope(wl.act1):   # act1's per-channel slopes, resident beside the bias
            out.append(Copy("weights", "in", "s_dw", "s_dw", wl.c1 * C0 * ACC_BYTES, 1))
    if b_pw:
        out.append(Copy("weights", "in", "b_pw_l1" if role == "aic" else "b_pw", "b_pw",
                        wl.co1 * C0 * ACC_BYTES, 1))
        if needs_slope(wl.act2) and role != "aic":   # read by the vector epilogue
            out.append(Copy("weights", "in", "s_pw", "s_pw", wl.co1 * C0 * ACC_BYTES, 1))
        if plan.epi_post16 and role == "core":
            out.append(bias_cast(plan.soc, "b_pw16", wl.co1))
            out += bias_setup(plan, plan.thw_al)
    if w_pw:
        out.append(Copy("weights", "in", "w_pw_l1" if plan.pw_on_cube else "w_pw", "w_pw",
                        wl.co1 * wl.c1 * C0 * C0 * b, 1))
    return tuple(out)


def tile_loops(plan: KernelPlan, role: str, r, c) -> tuple[Loop, ...]:
    """The loops of one tile on a core of `role`."""
    wl = plan.workload
    ci, co = split(wl.c1, plan.cib), split(wl.co1, plan.cob)
    if role == "aic":
        return (Loop("co", co, aic_iters(plan, r, c)),)
    if role == "aiv":
        loops = (Loop("ci", ci, ci_iters(plan, r, c)),)
        return loops if plan.fixpipe_epilogue else loops + (Loop("co", co, epi_iters(plan, r, c)),)
    return (Loop("ci", ci, ci_iters(plan, r, c)), Loop("co", co, co_iters(plan, r, c)))


# ---------------------------------------------------------------------------------------------
# the program
# ---------------------------------------------------------------------------------------------
COUNT_KEYS = ("dma_transfers", "dma_bursts", "vector_instrs", "vector_repeats", "cube_fractals")


@dataclass(frozen=True)
class KernelProgram:
    plan: KernelPlan
    tiles: tuple[tuple[tuple[int, int], tuple[int, int]], ...]   # (rows, cols) geometry per tile
    cores: tuple[CoreProgram, ...]

    # facts of the plan, decided once there
    @property
    def variant(self) -> str:
        return self.plan.variant

    @property
    def resident_weights(self) -> bool:
        return self.plan.pw_weights_resident

    @property
    def fixpipe_epilogue(self) -> bool:
        return self.plan.fixpipe_epilogue

    @property
    def aic_ratio(self) -> int:
        return self.plan.aic_ratio

    def loops(self, role: str, tile: int) -> tuple[Loop, ...]:
        r, c = self.tiles[tile]
        return _tile_loops_cached(self.plan, role, r, c)

    def steps(self, role: str, tile: int):
        """Every step of one tile of a core of `role`, in program order."""
        for loop in self.loops(role, tile):
            for it in loop.iters:
                yield from it

    @cached_property
    def counts(self) -> Counter:
        """Totals over every core: GM bytes read / written (and per traffic kind), DMA transfers
        and bursts, vector instructions and repeats, cube fractals."""
        soc = self.plan.soc
        out: Counter = Counter()
        for core in self.cores:
            count_steps(soc, core.prologue, 1, out)
            for geo, n in Counter(self.tiles[t] for t in core.tiles).items():
                for loop in _tile_loops_cached(self.plan, core.role, *geo):
                    for it in loop.iters:
                        count_steps(soc, it, n, out)
        return out

    def describe(self) -> str:
        """A readable listing: the plan's facts, the cores and the first tile's steps per role."""
        p = self.plan
        lines = [f"program {p.workload.describe()} tile {p.tile.describe()}: {self.variant}, "
                 f"{'resident' if self.resident_weights else 'streamed'} PW weights"
                 + (f", AIC:AIV 1:{self.aic_ratio}" if p.handoff_via_gm else "")
                 + (", Fixpipe epilogue" if self.fixpipe_epilogue else "")]
        for role in dict.fromkeys(c.role for c in self.cores):
            cores = [c for c in self.cores if c.role == role]
            lines.append(f"{role} x{len(cores)} ({cores[0].name}: {len(cores[0].tiles)} tiles)")
            for s in cores[0].prologue:
                lines.append(f"  prologue {_fmt(s)}")
            if cores[0].tiles:
                for loop in self.loops(role, cores[0].tiles[0]):
                    for j, it in enumerate(loop.iters):
                        lines.append(f"  {loop.var}{j} (block {loop.blocks[j]})")
                        lines += [f"    {_fmt(s)}" for s in it]
        return "\n".join(lines)


def _fmt(s) -> str:
    if isinstance(s, Copy):
        arrow = f"{s.gm} -> {s.buffer}" if s.direction == "in" else f"{s.buffer} -> {s.gm}"
        return f"copy {arrow} {s.nbytes}B {s.bursts} bursts" + (" x2" if s.slots == 2 else "")
    if isinstance(s, VectorOp):
        return f"vector {s.op} -> {s.buffer} {s.elements} el {s.instrs} instr {s.repeats} rep"
    if isinstance(s, Move):
        return f"move {s.path} {s.src} -> {s.dst} {s.nbytes}B"
    if isinstance(s, CubeOp):
        return f"cube mmad {s.a} x {s.b} -> {s.c} {s.fractals} fractals"
    if isinstance(s, Refill):
        return f"refill {s.buffer} (after the core's step {s.back} back)"
    return f"flag {s.flag} ({s.slot})"


@lru_cache(maxsize=4096)
def _tile_loops_cached(plan: KernelPlan, role: str, r, c) -> tuple[Loop, ...]:
    return tile_loops(plan, role, r, c)


def build_onephase(plan: KernelPlan) -> KernelProgram:
    """Lower a one-phase plan: tiles round-robin over plan.cores (batch, tile row, tile column
    order); on 910B MIX each AIC serves aic_ratio consecutive AIVs."""
    rows, cols = tile_axes(plan.workload, plan.th, plan.tw)
    th_, tw_ = plan.tiles_h, plan.tiles_w
    tiles = tuple((rows[tile_row(t, th_, tw_)], cols[tile_col(t, tw_)]) for t in range(plan.n_tiles))
    n = plan.cores
    mine = round_robin(len(tiles), n)
    if not plan.handoff_via_gm:
        cores = tuple(CoreProgram(f"core{ci}", "core", resident_loads(plan, "core"), mine[ci])
                      for ci in range(n))
    else:
        aiv = tuple(CoreProgram(f"aiv{ci}", "aiv", resident_loads(plan, "aiv"), mine[ci]) for ci in range(n))
        ratio = plan.aic_ratio
        aic = []
        for a in range(plan.aic_cores):   # round k: tile k of each AIV it serves
            served = [v for s in range(ratio) if (v := group_member(a, s, ratio)) < n]
            rounds = max(len(mine[v]) for v in served)
            aic.append(CoreProgram(f"aic{a}", "aic", resident_loads(plan, "aic"),
                                   tuple(mine[v][k] for k in range(rounds) for v in served if k < len(mine[v])),
                                   tuple(f"aiv{v}" for v in served)))
        cores = aiv + tuple(aic)
    return KernelProgram(plan, tiles, cores)
