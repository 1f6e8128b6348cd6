"""s_tir schedule of the fused DW→PW PrimFunc from a TileConfig.

Loop nest (the same one the KernelPlan, the cost model and the Ascend C emitter describe):

  for (n, ht, wt)                      parallel over tiles (cores)
    for ci in C1 / cib                  DW streams input-channel blocks
      x_ub   ← GM  input tile with halo, cib×IH×IW×C0       [ping/pong when double-buffered]
      dw_ub  = Σ taps x_ub · w_dw                              fp32
      dwa_ub = act1(dw_ub + b_dw)                              storage dtype, all C1, whole tile
    for ob in CO1 / cob
      [res_ub ← GM residual tile]
      pw_ub  = dwa_ub · w_pw[ob]                               fp32
      y_ub   = act2(pw_ub + b_pw) [+ res_ub]
      GM     ← y_ub

On the CPU (cpu_opts) dw_ub, pw_ub, y_ub and res_ub are not materialised: the DW and PW
accumulators of one register block stay in registers and their epilogues (bias, act, residual)
write dwa_ub / GM straight from them (CPU_FOLDED; the plan still budgets them, an upper bound).
"""

from __future__ import annotations

from tvm import s_tir

from schedules.dwsep_te import dwsep_prim_func
from schedules.plan import tile_sizes
from schedules.workload import DwSepWorkload, TileConfig, ceil_div

UB = "local.UB"

# TIR buffer name → KernelPlan buffer name (the UB cross-check relies on this mapping)
TIR_TO_PLAN = {
    "pad_local.UB": "x_tile",
    "dw_local.UB": "dw_acc",
    "dw_act_local.UB": "dw_out",
    "pw_local.UB": "pw_acc",
    "out_local.UB": "y_tile",
    "res_local.UB": "res_tile",
    "ln_sum_local.UB": "ln_sum",
    "ln_sqdev_local.UB": "ln_sqdev",
}
# CPU register tiles (the DW and PW accumulators of one register block): registers, not UB buffers
REGISTER_TILES = ("pw_local.UB_local", "dw_local.UB_local")
# plan buffers the CPU schedule never materialises: the accumulators live in the register tiles
# and the PW epilogue writes the output straight from them (bias, act, residual per register tile)
CPU_FOLDED = ("dw_acc", "pw_acc", "y_tile", "res_tile")


def effective_cib(wl: DwSepWorkload, tile: TileConfig) -> int:
    return tile_sizes(wl, tile)[3]


def schedule_dwsep(wl: DwSepWorkload, tile: TileConfig, cpu_opts: bool = True) -> s_tir.Schedule:
    th, tw, cob, cib = tile_sizes(wl, tile)   # the plan's sizes (schedules/plan.py)
    tiled_out = (ceil_div(wl.out_height, th) * th, ceil_div(wl.out_width, tw) * tw)
    sch = s_tir.Schedule(dwsep_prim_func(wl, tiled_out))

    out = sch.get_sblock("out")
    if wl.residual:
        sch.cache_read(out, _read_index(sch, out, "res"), UB)
    store = sch.cache_write(out, 0, UB)  # y tile in UB, then one copy to GM
    n, o, h, w, o0 = sch.get_loops(store)
    ht, hi = sch.split(h, [None, th])
    wt, wi = sch.split(w, [None, tw])
    ob, obi = sch.split(o, [None, cob])
    sch.reorder(n, ht, wt, ob, hi, wi, obi, o0)

    sch.compute_at(out, ob, preserve_unit_loops=True)
    if wl.residual:
        sch.compute_at(sch.get_sblock("res_local.UB"), ob, preserve_unit_loops=True)
    pw = sch.get_sblock("pw")
    sch.compute_at(pw, ob, preserve_unit_loops=True)
    dwa = sch.get_sblock("dw_act")
    sch.compute_at(dwa, wt, preserve_unit_loops=True)
    norm = wl.ln_eps is not None
    if norm:   # the channel norm reads every channel of the tile's pixels: DW over all of C1 first
        stats = [sch.get_sblock("ln_sqdev"), sch.get_sblock("ln_sum")]
        for blk in stats:
            sch.compute_at(blk, wt, preserve_unit_loops=True)
        cio = wt
    else:
        stats = []
        cio, _ = sch.split(sch.get_loops(dwa)[-4], [None, cib])  # (c, h, w, c0) innermost
    dw = sch.get_sblock("dw")
    sch.compute_at(dw, cio, preserve_unit_loops=True)
    xin = sch.cache_read(dw, 0, UB)  # read 0 of dw is the padded input: a constant-size halo tile
    sch.compute_at(xin, cio, preserve_unit_loops=True)
    sch.compute_inline(sch.get_sblock("pad"))
    for blk in (dw, dwa, pw, out, *stats):
        sch.set_scope(blk, 0, UB)

    # Double buffering is a property of the plan (two copies of x/w/res/y tiles counted in the
    # UB budget, overlapped pipes in the cost model, TQue depth 2 in Ascend C). The CPU kernel
    # gains nothing from TVM's software pipeline (its copies are plain loops), and the
    # pipeline would also double the DW accumulator, so the LLVM build stays single-buffered.
    if cpu_opts:
        _cpu_loop_opts(sch, wl, xin, dw, dwa, pw, out, store)
    tile_loop = sch.fuse(n, ht, wt)
    if cpu_opts:
        sch.parallel(tile_loop)
        _decompose(sch, dw, pw)
    return sch


def _read_index(sch, block, buffer_name: str) -> int:
    reads = sch.get(block).reads
    for i, region in enumerate(reads):
        if region.source.name == buffer_name:
            return i
    raise KeyError(buffer_name)


def _largest_divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def _cpu_loop_opts(sch, wl, xin, dw, dwa, pw, out, store):
    """Register blocking for the LLVM build: C0 lanes are the vector, a register tile of (width × Cout-blocks) accumulators stays in zmm registers while
    the channel reduction runs outside it, the register tile is unrolled."""
    # DW: (c, hi, wi, c0, kh, kw) → (c, hi, wo, kh, kw, wr[unroll], c0[vec])
    c, hi, wi, c0, kh, kw = sch.get_loops(dw)[-6:]
    tw = int(sch.get(wi).extent)
    wo, wr = sch.split(wi, [None, _largest_divisor(tw, 8)])
    sch.reorder(hi, wo, kh, kw, wr, c0)
    sch.unroll(wr)
    sch.vectorize(c0)
    # PW: (o, hi, wi, k, rc1, rc0) → (hi, wo, oo, rc1, rc0, wr[unroll], orr[unroll], k[vec])
    o, phi, pwi, k, rc1, rc0 = sch.get_loops(pw)[-6:]
    cob = int(sch.get(o).extent)
    wr_n = _largest_divisor(int(sch.get(pwi).extent), 7 if cob > 1 else 14)
    pwo, pwr = sch.split(pwi, [None, wr_n])
    oo, orr = sch.split(o, [None, _largest_divisor(cob, 2)])
    sch.reorder(phi, pwo, oo, rc1, rc0, pwr, orr, k)
    # the register tile's accumulators in a buffer of their own (small enough for the stack, so
    # LLVM keeps them in registers across the Cin reduction instead of reloading them per step)
    acc = sch.cache_write(pw, 0, "local")
    sch.unroll(pwr)
    sch.unroll(orr)
    sch.vectorize(k)
    # epilogue from the registers: bias + act (+ residual) per register tile, stored once to GM
    # (a separate pass over a UB y tile costs ~3 extra L2 round trips per output vector, which
    # is 20-30 % of the work when Cin is only 32-128)
    sch.compute_inline(acc)
    if wl.residual:  # read straight from GM inside the register tile (no res tile copy)
        sch.compute_inline(sch.get_sblock("res_local.UB"))
    sch.reverse_compute_at(out, oo, preserve_unit_loops=True)
    _vec_unroll(sch, out)
    try:
        sch.reverse_compute_inline(store)
    except s_tir.ScheduleError:  # cob does not divide CO1 (a predicated copy): keep the y tile
        sch.vectorize(sch.get_loops(store)[-1])
    # the same for the DW: accumulators of a wr-wide register block across the taps, then
    # bias + act1 written once to the intermediate (a channel norm reads the whole DW result first)
    if wl.ln_eps is not None:
        sch.vectorize(sch.get_loops(xin)[-1])
        return
    dacc = sch.cache_write(dw, 0, "local")
    sch.compute_inline(dacc)
    sch.reverse_compute_at(dwa, wo, preserve_unit_loops=True)
    _vec_unroll(sch, dwa)
    sch.vectorize(sch.get_loops(xin)[-1])


def _vec_unroll(sch, blk):
    loops = sch.get_loops(blk)
    sch.vectorize(loops[-1])
    for lp in loops[-4:-1]:
        sch.unroll(lp)


def _decompose(sch, dw, pw):
    # after parallel (decomposing first breaks parallel's compact-dataflow check)
    loops = sch.get_loops(dw)
    sch.decompose_reduction(dw, loops[-4])  # before kh
    loops = sch.get_loops(pw)
    sch.decompose_reduction(pw, loops[-5])  # before rc1 (init inside the register tile)
