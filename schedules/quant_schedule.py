"""CPU schedules of the int8 kernels (schedules/quant_ops.py), chosen by KernelSpec.schedule.

quant_conv   output channels × batch in parallel; per output row, an int32 accumulator row with
             the reduction outside the row (vectorised over W), requantized on store
quant_dwsep  the fused block: per tile of output rows (in parallel), the DW rows it needs are
             computed and requantized into an int8 tile (the on-chip intermediate), then every
             output channel's 1×1 accumulation reads that tile; the DW result never exists whole
quant_ew     elementwise: outer loops in parallel, the row vectorised
"""

from __future__ import annotations

from tvm import s_tir

from schedules.quant_vnni import schedule_pw

PARALLEL_TILES = 4   # row tiles per fused block at least (2 threads, and some balance)


def _inline(sch, *names: str) -> None:
    for name in names:
        try:
            sch.compute_inline(sch.get_sblock(name))
        except Exception:  # noqa: BLE001 - the block is absent (no padding in this kernel)
            pass


def _row_reduction(sch, block, row_loop) -> None:
    """Accumulator of one output row under row_loop: reduction loops outside W, W vectorised.
    (compute_at keeps only the loops of extent > 1: W first, then the reductions.)"""
    sch.compute_at(block, row_loop)
    loops = sch.get_loops(block)
    row = sch.get(row_loop)
    inner = loops[[i for i, lp in enumerate(loops) if sch.get(lp).same_as(row)][0] + 1:]
    if len(inner) < 2:
        return
    w, *red = inner
    sch.reorder(*red, w)
    sch.decompose_reduction(block, red[0])
    try:   # W innermost; TVM refuses an explicit vectorize under a partial row tile's predicate
        sch.vectorize(sch.get_loops(block)[-1])
    except Exception:  # noqa: BLE001 - LLVM's loop vectoriser still sees the contiguous row
        pass


def _row_tiles(sch):
    """Output rows in PARALLEL_TILES tiles (in parallel), output channels inside a tile."""
    y = sch.get_sblock("y")
    n, o, h, w = sch.get_loops(y)
    oh = sch.get(h).extent.value
    th = max(d for d in range(1, -(-oh // PARALLEL_TILES) + 1) if oh % d == 0)  # whole tiles: no predicate
    ho, hi = sch.split(h, [None, th])
    sch.reorder(n, ho, o, hi, w)
    tile = sch.fuse(n, ho)
    sch.parallel(tile)
    return tile


def schedule_quant(sch: s_tir.Schedule, kind: str):
    if kind == "quant_ew":
        loops = sch.get_loops(sch.get_sblock("y"))
        if len(loops) >= 3:
            sch.parallel(sch.fuse(*loops[:-1]))
        return sch.mod
    if kind == "quant_conv":
        _inline(sch, "conv_pad", "conv_bias")
        y = sch.get_sblock("y")
        n, o, h, w = sch.get_loops(y)
        sch.parallel(sch.fuse(n, o))
        _row_reduction(sch, sch.get_sblock("conv_acc"), h)
        sch.vectorize(sch.get_loops(y)[-1])
        return sch.mod
    if kind in ("quant_conv_vnni", "quant_dwsep_vnni"):
        _inline(sch, "dwconv_pad", "dwconv_bias")
        tile = _row_tiles(sch)
        pack = schedule_pw(sch, tile, "pw_vacc", "pw_pack")
        if kind == "quant_dwsep_vnni":   # the DW rows each packed row needs, computed under it
            dw = sch.get_sblock("dwconv_acc")
            sch.compute_at(dw, sch.get_loops(pack)[-3], preserve_unit_loops=True)
            c, yv, w, rc, ry, rx = sch.get_loops(dw)[-6:]
            sch.reorder(c, rc, ry, rx, yv, w)
            sch.decompose_reduction(dw, rc)
        return sch.mod
    if kind == "quant_dwsep":
        _inline(sch, "dwconv_pad", "dwconv_bias", "pwconv_bias")
        y = sch.get_sblock("y")
        n, o, h, w = sch.get_loops(y)
        oh = sch.get(h).extent.value
        th = -(-oh // PARALLEL_TILES)
        ho, hi = sch.split(h, [None, th])
        sch.reorder(n, ho, o, hi, w)
        tile = sch.fuse(n, ho)
        sch.parallel(tile)
        # consumers first: the 1x1 accumulator under the output row, then the int8 DW tile
        _row_reduction(sch, sch.get_sblock("pwconv_acc"), hi)
        sch.vectorize(sch.get_loops(y)[-1])
        mid = sch.get_sblock("mid")
        sch.compute_at(mid, tile)
        _row_reduction(sch, sch.get_sblock("dwconv_acc"), sch.get_loops(mid)[-2])
        sch.vectorize(sch.get_loops(mid)[-1])
        return sch.mod
    raise ValueError(kind)

