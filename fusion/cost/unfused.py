"""The unfused baseline: one kernel per op (DW, PW, element-wise), intermediates through GM. MODELED."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from fusion.cost.fused import _dw_vector_work, _pw_epilogue_work
from schedules.l2 import _L2, _l2_policy
from fusion.cost.pipes import _sim, _st
from fusion.cost.primitives import (
    ACC_BYTES,
    ACT_OPS,
    cube_fractals,
    cycles_to_us,
    itemsize,
    vec_op,
)
from fusion.cost.results import KernelCost, UnfusedCost, _Acc, _assemble, _launch_us
from fusion.core.errors import UBOverflowError
from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.traffic import _input_bytes
from schedules.footprint import fused_min_bytes
from schedules.plan import align
from schedules.program import rows_bursts as _rows_bursts
from schedules.loops import split, window_span
from schedules.program import tile_axes as _tile_axes
from schedules.workload import DwSepWorkload, ceil_div


def _desc(n: int) -> list[int]:
    vals = {n, 1}
    v = 1
    while v < n:
        vals.add(v)
        v *= 2
    return sorted(vals, reverse=True)


def _sizes(extent: int, max_tiles: int) -> list[int]:
    return sorted({ceil_div(extent, k) for k in range(1, min(extent, max_tiles) + 1)})



# work units per core and per image an unfused kernel's tiling may have (fewer, larger tiles are the
# vendor's choice; the cap bounds the search). Per image: a batch-N tiling has N times the units of
# a batch-1 one, so a cap on the total would leave no tile at batch 32 (MobileNetV2 on 310P3)
UNITS_PER_CORE_PER_IMAGE = 64


def _max_units(cores: int, batch: int) -> int:
    return UNITS_PER_CORE_PER_IMAGE * cores * max(1, batch)


def _ub_fits(soc: SocSpec, buffers: list[tuple[int, int]]) -> bool:
    """buffers: (bytes per copy, copies)."""
    return sum(align(nb, soc.ub_align) * cp for nb, cp in buffers) <= soc.ub_usable_bytes


def _pw_resident_loads(soc: SocSpec, cores: int, hit, w_pw: int, w_bias: int):
    """first_extra of the unfused PW kernels: a core's first tile (or block) loads the resident
    PW weights and the bias first (a 0-byte size means that tensor is not resident)."""
    def first_extra(acc):
        pre = [acc.dma(soc, "weights", nbytes, 1, "in", cores, 1, hit) for nbytes in (w_pw, w_bias) if nbytes]
        return tuple(pre), ()
    return first_extra


def _run_units(units: list, n_cores: int, build, db: bool = True,
               first_extra=None) -> tuple[dict[str, CoreRun], _Acc]:
    """Work units go round-robin to `n_cores` cores. build(acc, unit) -> (steps, comps): the
    compiled steps of a unit, and the durations whose sum (from 0.0, in this order) is its first
    stage's. first_extra(acc) -> (pre, post): durations a core's first unit adds to that sum
    before / after comps (the resident operands it loads). Each distinct unit is built once, each
    distinct core sequence simulated once."""
    cache: dict = {}
    firsts: dict = {}

    def blk(u):
        hit = cache.get(u)
        if hit is None:
            sub = _Acc()
            hit = cache[u] = (*build(sub, u), sub)
        return hit

    if first_extra is not None:
        extra_acc = _Acc()
        pre, post = first_extra(extra_acc)

    def first_blk(u):
        if first_extra is None:
            return blk(u)[0]
        hit = firsts.get(u)
        if hit is None:
            steps, comps, _sub = blk(u)
            us = 0.0
            for dt in (*pre, *comps, *post):
                us += dt
            s0 = steps[0][0]
            hit = firsts[u] = (((s0[0], us) + s0[2:],) + steps[0][1:],) + steps[1:]
        return hit

    groups: dict[tuple, list[int]] = {}
    for ci in range(n_cores):
        groups.setdefault(tuple(units[ci::n_cores]), []).append(ci)
    total: dict = {}
    n_first = 0
    by_core: dict[int, CoreRun] = {}
    for key, ids in groups.items():
        if not key:
            continue
        steps = {u: blk(u)[0] for u in set(key[1:])}
        seq = [(k, 0.0, steps[u]) for k, u in enumerate(key) if k]
        seq.insert(0, (0, 0.0, first_blk(key[0])))
        run = _sim(seq, db)
        for ci in ids:
            by_core[ci] = run
        for u, n in Counter(key).items():
            total[u] = total.get(u, 0) + n * len(ids)
        n_first += len(ids)
    acc = _Acc()
    for u, n in total.items():
        acc.merge(cache[u][2], n)
    if first_extra is not None:
        acc.merge(extra_acc, n_first)
    return {f"core{ci}": by_core[ci] for ci in range(n_cores) if ci in by_core}, acc


def _fold(durations) -> float:
    t = 0.0
    for dt in durations:
        t += dt
    return t


def _hit(l2: "_L2", kind: str, direction: str) -> float:
    return (l2.hit_in if direction == "in" else l2.hit_out).get(kind, 0.0)


@lru_cache(maxsize=512)
def _eltwise_kernel(name: str, soc: SocSpec, shape: tuple[int, int, int, int], dtype: str,
                    n_ops: int, n_inputs: int = 1) -> KernelCost:
    """Streaming elementwise kernel over an NC1HWC0 tensor (N, C1, H·W·C0 planes), in and out
    double-buffered in UB, chunks within one channel-block plane (per-channel operands broadcast)."""
    n, c1, h, w = shape
    b = itemsize(dtype)
    plane = h * w * C0
    total = n * c1 * plane
    cap = (soc.ub_usable_bytes - 2 * c1 * C0 * ACC_BYTES) // ((n_inputs + 1) * 2 * b)
    cap = max(C0, cap // 128 * 128)
    cands = {min(plane, cap)}
    for k in (1, 2, 4):
        cands.add(min(plane, cap, max(C0, align(ceil_div(total, soc.vector_cores * k), 128))))
    best = None
    for chunk in sorted(cands):
        cost = _eltwise_eval(name, soc, n, c1, plane, chunk, dtype, n_ops, n_inputs, timeline=False)
        if best is None or cost.time_us < best[0]:
            best = (cost.time_us, chunk)
    return _eltwise_eval(name, soc, n, c1, plane, best[1], dtype, n_ops, n_inputs)


def _eltwise_eval(name, soc, n, c1, plane, chunk, dtype, n_ops, n_inputs, timeline=True) -> KernelCost:
    b = itemsize(dtype)
    chunks = split(plane, chunk)
    units = [ch for _ in range(n * c1) for ch in chunks]
    cores = max(1, min(soc.vector_cores, len(units)))
    total = n * c1 * plane
    # every element is read once and written once: no re-reads, nothing for L2 to serve
    l2 = _l2_policy(soc, total * b * (n_inputs + 1), {})

    h_in, h_out = _hit(l2, "intermediate", "in"), _hit(l2, "intermediate", "out")

    def build(acc, ch):
        t_in = acc.dma(soc, "intermediate", ch * b, 1, "in", cores, n_inputs, h_in) * n_inputs
        t_v = acc.vec(soc, vec_op(soc, ch, b) * n_ops)
        t_out = acc.dma(soc, "intermediate", ch * b, 1, "out", cores, 1, h_out)
        return ((_st("MTE2", t_in, f"{name} in {ch * b}B", "x"),
                 _st("vector", t_v, f"{name} x{n_ops} ops", "y"),
                 _st("MTE3", t_out, f"{name} out")),), (t_in,)

    runs, acc = _run_units(units, cores, build)
    min_bytes = total * b * (n_inputs + 1)
    return _assemble(name, soc, runs, acc, cores, min_bytes, total * max(1, n_ops), 0, b, dtype,
                     {name: "vector"}, f"chunk {chunk} elems", timeline=timeline, l2=l2)


@lru_cache(maxsize=256)
def _dw_kernel(name: str, wl: DwSepWorkload, soc: SocSpec, epilogue: bool) -> KernelCost:
    """Standalone DW conv (optionally + bias + act1): work units are (tile, channel-block group).

    The tile space is searched exactly (the result is the first fastest tile in the order below),
    but tiles are modeled cheapest-bound first and a tile is skipped when a lower bound of its time
    (launch + the vector work averaged over its cores) already exceeds the best time found."""
    # at most 16 x 8 tiles per image; at a high resolution (an OCR detector at 960 x 960) none of
    # those fits UB, and the grid is refined (twice the tiles per axis) until one does
    mh, mw, cands = 16, 8, []
    while not cands:
        for th in _sizes(wl.out_height, mh):
            for tw in _sizes(wl.out_width, mw):
                tried_large = False
                for cib in _desc(wl.c1):  # the largest cib that fits, and cib = 1
                    if tried_large and cib != 1:
                        continue
                    if not _dw_fits(wl, soc, th, tw, cib):
                        continue
                    tried_large = True
                    cands.append((th, tw, cib))
        if mh >= wl.out_height and mw >= wl.out_width:
            break
        mh, mw = 2 * mh, 2 * mw
    if not cands:
        raise UBOverflowError(f"no tile of the unfused DW kernel fits {soc.name}")
    bounds = [_dw_bound(wl, soc, *c, epilogue) for c in cands]
    best = None   # (time, index)
    for i in sorted(range(len(cands)), key=lambda i: (bounds[i], i)):
        if best is not None and (bounds[i] > best[0] or (bounds[i] == best[0] and i > best[1])):
            continue
        t = _dw_eval(name, wl, soc, *cands[i], epilogue, timeline=False).time_us
        if best is None or (t, i) < best:
            best = (t, i)
    return _dw_eval(name, wl, soc, *cands[best[1]], epilogue)


def _dw_fits(wl, soc, th, tw, cib) -> bool:
    """The unfused DW kernel's buffers fit UB and the tiling has at most 64 units per core and image."""
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    sh, sw = wl.stride
    ih, iw = window_span(th, sh, kh), window_span(tw, sw, kw)
    c1 = wl.c1
    bufs = [(cib * ih * iw * C0 * b, 2), (cib * th * tw * C0 * ACC_BYTES, 1), (cib * th * tw * C0 * b, 2),
            (c1 * kh * kw * C0 * b, 1), (c1 * C0 * ACC_BYTES, 1)]
    if not _ub_fits(soc, bufs):
        return False
    units = wl.batch * ceil_div(c1, cib) * ceil_div(wl.out_height, th) * ceil_div(wl.out_width, tw)
    return units <= _max_units(soc.vector_cores, wl.batch)


def _dw_bound(wl, soc, th, tw, cib, epilogue) -> float:
    """A lower bound of _dw_eval(...).time_us: launch + the vector busy time averaged over the
    cores (the busiest core's vector pipe has at least the average); 1e-9 below it for rounding."""
    ih, iw = window_span(th, wl.stride[0], wl.kernel[0]), window_span(tw, wl.stride[1], wl.kernel[1])
    rows, cols = _tile_axes(wl, th, tw)
    n_rows, n_cols, n_cb = Counter(r[1] for r in rows), Counter(c[1] for c in cols), Counter(split(wl.c1, cib))
    n_units = wl.batch * len(rows) * len(cols) * ceil_div(wl.c1, cib)
    cores = max(1, min(soc.vector_cores, n_units))
    cyc = 0.0
    for cb, a in n_cb.items():
        for ihv, r in n_rows.items():
            for iwv, c in n_cols.items():
                work = _dw_vector_work(soc, wl, th, tw, cb, (ih * iw - ihv * iwv) * C0, epilogue)
                cyc += a * r * c * wl.batch * work.cycles(soc)
    return (_launch_us(soc, cores) + cycles_to_us(soc, cyc) / cores) * (1 - 1e-9)


def _dw_eval(name, wl, soc, th, tw, cib, epilogue, timeline=True) -> KernelCost | None:
    if not _dw_fits(wl, soc, th, tw, cib):
        return None
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    ih, iw = window_span(th, wl.stride[0], kh), window_span(tw, wl.stride[1], kw)
    c1 = wl.c1
    oh_, ow_ = wl.out_height, wl.out_width
    rows, cols = _tile_axes(wl, th, tw)
    units = [(cb, r, c) for _ in range(wl.batch) for cb in split(c1, cib) for r in rows for c in cols]
    cores = max(1, min(soc.vector_cores, len(units)))
    w_taps, w_bias = c1 * kh * kw * C0 * b, (c1 * C0 * ACC_BYTES if epilogue else 0)
    inter = wl.batch * c1 * oh_ * ow_ * C0 * b
    # L2: the input is read once per tile with its halo (re-reads: the halos), the taps and the
    # bias once per core (re-reads: all but the first); see _l2_policy
    u_in, d_in = _input_bytes(wl, th, tw)
    l2 = _l2_policy(soc, u_in + w_taps + w_bias + inter, {"input": u_in, "weights": w_taps + w_bias},
                    {"input": d_in, "weights": cores * (w_taps + w_bias)})
    h_in, h_w, h_out = _hit(l2, "input", "in"), _hit(l2, "weights", "in"), _hit(l2, "intermediate", "out")
    lab = "dw taps" + ("+bias+act" if epilogue else "")

    def build(acc, unit):
        cb, (ohv, ihv), (owv, iwv) = unit
        t_in = acc.dma(soc, "input", cb * ihv * iwv * C0 * b, _rows_bursts(cb, ihv, iwv == wl.width), "in", cores,
                       1, h_in)
        pad = (ih * iw - ihv * iwv) * C0
        t_v = acc.vec(soc, _dw_vector_work(soc, wl, th, tw, cb, pad, epilogue))
        t_out = acc.dma(soc, "intermediate", cb * ohv * owv * C0 * b, _rows_bursts(cb, ohv, owv == ow_),
                        "out", cores, 1, h_out)
        return ((_st("MTE2", t_in, "x tile", "x"), _st("vector", t_v, lab, "y"),
                 _st("MTE3", t_out, "dw out")),), (t_in,)

    def first_extra(acc):   # a core's first tile also loads the taps (and the bias): resident
        dts = [acc.dma(soc, "weights", w_taps, 1, "in", cores, 1, h_w)]
        if epilogue:
            dts.append(acc.dma(soc, "weights", w_bias, 1, "in", cores, 1, h_w))
        return (), tuple(dts)

    runs, acc = _run_units(units, cores, build, first_extra=first_extra)
    mins = fused_min_bytes(wl)
    min_bytes = mins["input"] + w_taps + w_bias + inter
    flops = 2 * wl.batch * oh_ * ow_ * wl.cin * kh * kw
    return _assemble(name, soc, runs, acc, cores, min_bytes, flops, 0, ACC_BYTES, wl.dtype,
                     {"dw": "vector"}, f"{th}x{tw} cib{cib}", timeline=timeline, l2=l2)


def _pw_weight_l2(soc, px_bytes_in, out_bytes, w_pw, w_bias, cores, units, resident, res_bytes):
    """L2 policy of a PW kernel: its input and the residual are read once; the weight matrix is
    read once per core (resident) or once per work unit (streamed), the bias once per core."""
    d_w = cores * (w_pw + w_bias) if resident else units * w_pw + cores * w_bias
    return _l2_policy(soc, px_bytes_in + w_pw + w_bias + out_bytes + res_bytes,
                      {"weights": w_pw + w_bias}, {"weights": d_w})


def _pw_vector_fits(wl, soc, th, tw, cob, residual) -> bool:
    b = itemsize(wl.dtype)
    c1, co1 = wl.c1, wl.co1
    bufs = [(c1 * th * tw * C0 * b, 2), (c1 * C0 * cob * C0 * b, 2), (cob * th * tw * C0 * ACC_BYTES, 1),
            (cob * th * tw * C0 * b, 2), (co1 * C0 * ACC_BYTES, 1)]
    if residual:
        bufs.append((cob * th * tw * C0 * b, 2))
    if not _ub_fits(soc, bufs):
        return False
    return wl.batch * ceil_div(wl.out_height, th) * ceil_div(wl.out_width, tw) <= _max_units(soc.vector_cores, wl.batch)


def _pw_vector_bound(wl, soc, th, tw, cob, bias_act, residual) -> float:
    """A lower bound of _pw_vector_eval(...).time_us: launch + the vector work (the same for every
    tile: MACs over the full tile) averaged over the cores; 1e-9 below it for rounding."""
    n_units = wl.batch * ceil_div(wl.out_height, th) * ceil_div(wl.out_width, tw)
    cores = max(1, min(soc.vector_cores, n_units))
    us = 0.0
    for cbo in split(wl.co1, cob):
        mac = vec_op(soc, th * tw * C0, ACC_BYTES, rows=wl.c1 * C0 * cbo)
        us += cycles_to_us(soc, (mac + _pw_epilogue_work(soc, wl, th, tw, cbo, bias_act, residual)).cycles(soc))
    return (_launch_us(soc, cores) + n_units * us / cores) * (1 - 1e-9)


def _pw_vector_eval(name, wl, soc, th, tw, cob, bias_act, residual, timeline=True) -> KernelCost | None:
    if not _pw_vector_fits(wl, soc, th, tw, cob, residual):
        return None
    b = itemsize(wl.dtype)
    c1, co1 = wl.c1, wl.co1
    oh_, ow_ = wl.out_height, wl.out_width
    rows = [min(th, oh_ - i * th) for i in range(ceil_div(oh_, th))]
    cols = [min(tw, ow_ - j * tw) for j in range(ceil_div(ow_, tw))]
    units = [(r, c) for _ in range(wl.batch) for r in rows for c in cols]
    cores = max(1, min(soc.vector_cores, len(units)))
    co_blocks = split(co1, cob)
    resident = len(co_blocks) == 1
    px = wl.batch * oh_ * ow_
    w_pw, w_bias = co1 * c1 * C0 * C0 * b, (co1 * C0 * ACC_BYTES if bias_act else 0)
    out_bytes = px * co1 * C0 * b
    l2 = _pw_weight_l2(soc, px * c1 * C0 * b, out_bytes, w_pw, w_bias, cores, len(units), resident,
                       out_bytes if residual else 0)
    h = {k: _hit(l2, k, "in") for k in ("weights", "intermediate", "residual")}
    h_out = _hit(l2, "output", "out")

    def build(acc, unit):
        ohv, owv = unit
        steps, comps0 = [], ()
        for q, cbo in enumerate(co_blocks):
            comps = []
            if q == 0:
                comps.append(acc.dma(soc, "intermediate", c1 * ohv * owv * C0 * b,
                                     _rows_bursts(c1, ohv, owv == ow_), "in", cores, 1, h["intermediate"]))
            if not resident:
                comps.append(acc.dma(soc, "weights", c1 * C0 * cbo * C0 * b, 1, "in", cores, 1, h["weights"]))
            io = (cbo * ohv * owv * C0 * b, _rows_bursts(cbo, ohv, owv == ow_))
            if residual:
                comps.append(acc.dma(soc, "residual", *io, "in", cores, 1, h["residual"]))
            mac = vec_op(soc, th * tw * C0, ACC_BYTES, rows=c1 * C0 * cbo)
            t_v = acc.vec(soc, mac + _pw_epilogue_work(soc, wl, th, tw, cbo, bias_act, residual))
            t_out = acc.dma(soc, "output", *io, "out", cores, 1, h_out)
            steps.append((_st("MTE2", _fold(comps), f"x/w co{q}", "w"), _st("vector", t_v, f"pw MACs co{q}", "y"),
                          _st("MTE3", t_out, f"y co{q}")))
            if q == 0:
                comps0 = tuple(comps)
        return tuple(steps), comps0

    first_extra = _pw_resident_loads(soc, cores, h["weights"], w_pw if resident else 0,
                                     w_bias if bias_act else 0)
    runs, acc = _run_units(units, cores, build, first_extra=first_extra)
    return _assemble(name, soc, runs, acc, cores, _pw_min_bytes(wl, bias_act, residual),
                     2 * wl.batch * oh_ * ow_ * wl.cin * wl.cout, 0, ACC_BYTES, wl.dtype,
                     {"pw": "vector"}, f"{th}x{tw} cob{cob}", timeline=timeline, l2=l2)


def _pw_min_bytes(wl, bias_act, residual) -> int:
    b = itemsize(wl.dtype)
    px = wl.batch * wl.out_height * wl.out_width
    return (px * wl.c1 * C0 * b + wl.co1 * wl.c1 * C0 * C0 * b + (wl.co1 * C0 * ACC_BYTES if bias_act else 0)
            + px * wl.co1 * C0 * b * (2 if residual else 1))


def _pw_cube_eval(name, wl, soc, m, nb, bias_act, residual, timeline=True) -> KernelCost | None:
    """GEMM on the cube cores: A (m pixels × C1·C0) stays in L1 while B blocks of nb·C0 output
    channels stream; 910B cube cores read GM directly (no hand-off)."""
    b = itemsize(wl.dtype)
    c1, co1 = wl.c1, wl.co1
    m_al = align(m, soc.cube_fractal[0])
    if (2 * c1 * m_al * C0 * b + 2 * c1 * C0 * nb * C0 * b > soc.l1_bytes
            or 2 * nb * m_al * C0 * ACC_BYTES > soc.l0c_bytes):
        return None
    vec_epi = soc.coupled
    if vec_epi:
        bufs = [(nb * m_al * C0 * ACC_BYTES, 1), (nb * m * C0 * b, 2), (co1 * C0 * ACC_BYTES, 1)]
        if residual:
            bufs.append((nb * m * C0 * b, 2))
        if not _ub_fits(soc, bufs):
            return None
    px_img = wl.out_height * wl.out_width
    units = [mm for _ in range(wl.batch) for mm in split(px_img, m)]
    if len(units) > _max_units(soc.cube_cores, wl.batch):
        return None
    cores = max(1, min(soc.cube_cores, len(units)))
    co_blocks = split(co1, nb)
    resident = len(co_blocks) == 1
    px = wl.batch * px_img
    w_pw, w_bias = co1 * c1 * C0 * C0 * b, (co1 * C0 * ACC_BYTES if bias_act else 0)
    out_bytes = px * co1 * C0 * b
    l2 = _pw_weight_l2(soc, px * c1 * C0 * b, out_bytes, w_pw, w_bias, cores, len(units), resident,
                       out_bytes if (residual and vec_epi) else 0)
    h = {k: _hit(l2, k, "in") for k in ("weights", "intermediate", "residual")}
    h_out = _hit(l2, "output", "out")

    def build(acc, mv):
        steps, comps0 = [], ()
        for q, cbo in enumerate(co_blocks):
            comps = []
            if q == 0:
                comps.append(acc.dma(soc, "intermediate", c1 * mv * C0 * b, c1, "in", cores, 1, h["intermediate"]))
            if not resident:
                comps.append(acc.dma(soc, "weights", c1 * C0 * cbo * C0 * b, 1, "in", cores, 1, h["weights"]))
            if residual and vec_epi:
                comps.append(acc.dma(soc, "residual", cbo * mv * C0 * b, cbo, "in", cores, 1, h["residual"]))
            cyc = c1 * C0 * cbo * C0 * b / soc.l1_to_l0b_bytes_per_cycle
            if q == 0:
                cyc += c1 * align(mv, 16) * C0 * b / soc.l1_to_l0a_bytes_per_cycle
            t_c = cycles_to_us(soc, cyc) + acc.cube(soc, cube_fractals(soc, mv, c1, cbo), wl.dtype)
            t_out = acc.dma(soc, "output", cbo * mv * C0 * b, cbo, "out", cores, 1, h_out)
            stages = [_st("MTE2", _fold(comps), f"A/B co{q}", "l1"), _st("cube", t_c, f"mmad co{q}", "l0c")]
            if vec_epi:
                t_v = cycles_to_us(soc, cbo * align(mv, 16) * C0 * ACC_BYTES / soc.l0c_to_ub_bytes_per_cycle)
                t_v += acc.vec(soc, _pw_epilogue_work(soc, wl, mv, 1, cbo, bias_act, residual))
                stages.append(_st("vector", t_v, f"L0C->UB + epilogue co{q}", "y"))
            stages.append(_st("MTE3", t_out, f"y co{q}" + (" (Fixpipe)" if not vec_epi else "")))
            steps.append(tuple(stages))
            if q == 0:
                comps0 = tuple(comps)
        return tuple(steps), comps0

    first_extra = _pw_resident_loads(soc, cores, h["weights"], w_pw if resident else 0,
                                     w_bias if bias_act else 0)
    runs, acc = _run_units(units, cores, build, first_extra=first_extra)
    return _assemble(name, soc, runs, acc, cores,
                     _pw_min_bytes(wl, bias_act, residual and vec_epi),
                     0, 2 * wl.batch * px_img * wl.cin * wl.cout, ACC_BYTES, wl.dtype,
                     {"pw": "cube"}, f"m{m} nb{nb}", timeline=timeline, l2=l2)


@lru_cache(maxsize=256)
def _pw_kernels_cached(name: str, wl: DwSepWorkload, soc: SocSpec, bias_act: bool,
                       residual: bool) -> tuple[KernelCost, ...]:
    # vector PW: per (th, tw) the largest cob that fits; searched exactly, cheapest bound first
    # (as _dw_kernel)
    cands = []
    for th in _sizes(wl.out_height, 16):
        for tw in _sizes(wl.out_width, 8):
            for cob in _desc(wl.co1):
                if _pw_vector_fits(wl, soc, th, tw, cob, residual):
                    cands.append((th, tw, cob))
                    break
    bounds = [_pw_vector_bound(wl, soc, *c, bias_act, residual) for c in cands]
    best_v = None   # (time, index)
    for i in sorted(range(len(cands)), key=lambda i: (bounds[i], i)):
        if best_v is not None and (bounds[i] > best_v[0] or (bounds[i] == best_v[0] and i > best_v[1])):
            continue
        t = _pw_vector_eval(name, wl, soc, *cands[i], bias_act, residual, timeline=False).time_us
        if best_v is None or (t, i) < best_v:
            best_v = (t, i)
    options: list[list[KernelCost]] = []
    if best_v is not None:
        options.append([_pw_vector_eval(name, wl, soc, *cands[best_v[1]], bias_act, residual)])
    fix_epi = (not soc.coupled) and (not bias_act or wl.act2 in soc.fixpipe_acts) and not residual
    best_c = None
    px = wl.out_height * wl.out_width
    for m in sorted({min(px, v) for v in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)}):
        for nb in _desc(wl.co1):
            c = _pw_cube_eval(name, wl, soc, m, nb, bias_act, residual, timeline=False)
            if c is None:
                continue
            if best_c is None or c.time_us < best_c[0]:
                best_c = (c.time_us, m, nb)
            break
    if best_c is not None:
        chain = [_pw_cube_eval(name, wl, soc, *best_c[1:], bias_act, residual)]
        if not soc.coupled and not fix_epi:
            shape = (wl.batch, wl.co1, wl.out_height, wl.out_width)
            ops = (ACT_OPS[wl.act2] if bias_act else 0) + (1 if residual else 0)
            chain.append(_eltwise_kernel(f"{name}_epilogue", soc, shape, wl.dtype, max(1, ops),
                                         2 if residual else 1))
        options.append(chain)
    return tuple(min(options, key=lambda ks: sum(k.time_us for k in ks)))


def _pw_kernels(name: str, wl: DwSepWorkload, soc: SocSpec, bias_act: bool, residual: bool) -> list[KernelCost]:
    """The faster of a vector PW kernel and a cube GEMM kernel (plus, on a decoupled chip, a vector
    kernel for an epilogue Fixpipe cannot do)."""
    return list(_pw_kernels_cached(name, wl, soc, bias_act, residual))


def model_unfused(wl: DwSepWorkload, soc: SocSpec, variant: str = "framework") -> UnfusedCost:
    """One kernel per op with every intermediate written to and read back from GM.

    framework: DW conv, BN, act, PW conv, BN, act (+ Add) as separate launches;
    folded:    DW+bias+act, PW+bias+act(+residual) as two kernels.
    Every op kernel is modeled with the same DMA / vector / cube formulas, UB-sized streaming
    tiles and double buffering; each picks its fastest tile from a small space.

    L2: each kernel is modeled on its own. A kernel boundary flushes L2 (modeling assumption):
    the intermediate a kernel writes reaches HBM and the next kernel's first read of it comes from
    HBM; only re-reads inside one kernel (halos, weights read by every core) hit L2.

    Results are memoized per (workload, SoC, variant) (both are frozen dataclasses); the returned
    costs are shared between calls and must be treated as read-only."""
    if variant not in ("framework", "folded"):
        raise ValueError(f"unknown unfused variant {variant!r}")
    return _model_unfused(wl, soc, variant)


@lru_cache(maxsize=256)
def _model_unfused(wl: DwSepWorkload, soc: SocSpec, variant: str) -> UnfusedCost:
    inter = (wl.batch, wl.c1, wl.out_height, wl.out_width)
    out = (wl.batch, wl.co1, wl.out_height, wl.out_width)
    ks: list[KernelCost] = []
    if variant == "framework":
        ks.append(_dw_kernel("dw_conv", wl, soc, epilogue=False))
        ks.append(_eltwise_kernel("bn1", soc, inter, wl.dtype, 2))
        if wl.act1 != "none":
            ks.append(_eltwise_kernel(f"{wl.act1}1", soc, inter, wl.dtype, ACT_OPS[wl.act1]))
        ks += _pw_kernels("pw_conv", wl, soc, bias_act=False, residual=False)
        ks.append(_eltwise_kernel("bn2", soc, out, wl.dtype, 2))
        if wl.act2 != "none":
            ks.append(_eltwise_kernel(f"{wl.act2}2", soc, out, wl.dtype, ACT_OPS[wl.act2]))
        if wl.residual:
            ks.append(_eltwise_kernel("add", soc, out, wl.dtype, 1, n_inputs=2))
    else:
        ks.append(_dw_kernel("dw_bias_act", wl, soc, epilogue=True))
        ks += _pw_kernels("pw_bias_act" + ("_res" if wl.residual else ""), wl, soc, True, wl.residual)
    return UnfusedCost(variant, sum(k.time_us for k in ks), sum(k.gm_bytes for k in ks), tuple(ks))
