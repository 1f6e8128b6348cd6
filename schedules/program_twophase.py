"""The lowered program of a two-phase plan (schedules/twophase.py): its phases as data.

  dw    (aiv on 910B, core on 310P)  per (tile, ci-block) unit: x block in, DW ops, DW result out
                                     to the GM workspace (kind handoff); absent for a gemm_only plan
                                     (an identity DW whose x is already the A layout: A reads x)
  norm  (aiv / core, a norm phase)   per unit of pixels x all C1 blocks: the channel LayerNorm of
                                     the workspace's DW result in place (schedules/norm_phase.py)
  gemm  (aic on 910B, core on 310P)  per (M, N) tile, per K block: A block from the workspace
                                     (twophase.a_keep: the core's A panel, all of K, loaded once
                                     per M tile it touches, tiles in contiguous ranges),
                                     B block of PW weights, L1 -> L0 moves, Mmad; after the last K
                                     block the epilogue: Fixpipe y (910B; a linear projection's
                                     residual first, as one more K block per output block with an
                                     identity B: twophase.res_in_cube), the pre-activation to its
                                     workspace (910B, vector epilogue), or L0C -> UB + bias, act2,
                                     residual, y (310P)
  epi   (aiv, 910B without Fixpipe)  per (M, N) tile and AIV of the producing AIC's group: its part
                                     of the tile's rows -- pre-activation in, epilogue, y out

A SyncAll barrier separates consecutive phases, except before a `gemm` phase gated "local"
(plan.local_dw, 310P: each core's GEMM tiles read only DW rows it wrote; a pipe barrier on the core)
and before `epi` (gate "flags"): there each
AIC g signals every tile it has written (cross-core flag EPI_PRE, mode 2), the AIVs g x ratio + s
wait for it and finish their part of that tile while the AIC runs the next; the AIVs answer each
tile (EPI_FREE) so the AIC runs at most EPI_LAG tiles ahead (the flag counters stop at 15). Every
step is a schedules/program.py step type, so KernelProgram.counts-style totals and the cost
model's timing read the same steps.
"""

from __future__ import annotations

from collections import Counter
from math import gcd
from dataclasses import dataclass
from functools import cached_property

from fusion.core.ir import C0
from schedules.isa import ACC_BYTES, count_form, cube_fractals, itemsize
from schedules.plan import KernelPlan
from schedules.channel_norm import ln_ops
from schedules.program import (
    Copy,
    CubeOp,
    Move,
    Refill,
    VectorOp,
    _fmt,
    bias_cast,
    bias_setup,
    block_epilogue_ops,
    count_steps,
    dw_ops,
    epilogue16_ops,
    l0c_epilogue,
    rows_bursts,
    tile_axes,
)
from schedules.loops import (block_len, block_start, by_band, by_m_tile, contiguous, part_rows, round_robin, row_image, split,
                             tile_col, tile_row, unit_inner, unit_outer, window_valid)
from schedules.norm_phase import norm_phase
from schedules.prefetch import prefetch_steps
from schedules.se_program import se_dw_steps, se_phase
from schedules.steps import L0_RING, Phase, stages
from schedules.twophase import (EPI_LAG, EYE_BYTES, VARIANT, fixpipe, gemm_k, gemm_m, panel_starts,
                                phase2_cores, res_in_cube)
from schedules.workload import ceil_div

@dataclass(frozen=True)
class TwoPhaseProgram:
    plan: KernelPlan
    phases: tuple[Phase, ...]          # a SyncAll between consecutive phases
    bm: int                            # GEMM tile rows
    kb: int                            # channel blocks of K per GEMM step
    m_tiles: int
    n_tiles: int

    variant = VARIANT
    resident_weights = False

    @property
    def fixpipe_epilogue(self) -> bool:
        return fixpipe(self.plan.workload, self.plan.soc)

    @property
    def barriers(self) -> int:
        """SyncAlls between the phases (an `epi` phase gated by cross-core flags has none before it)."""
        return sum(1 for ph in self.phases[1:] if ph.gate == "sync")

    def core_names(self, phase: Phase) -> list[str]:
        return [f"{phase.role}{i}" for i in range(len(phase.assignment))]

    @cached_property
    def counts(self) -> Counter:
        """Totals over every core and phase (program.count_steps keys: GM bytes per kind, DMA
        transfers and bursts, vector instructions and repeats, cube fractals)."""
        soc = self.plan.soc
        out: Counter = Counter()
        for ph in self.phases:
            for it, n in ph.iterations.items():   # each distinct iteration once, times its runs
                count_steps(soc, it, n, out)
            count_steps(soc, ph.prologue, sum(1 for core in ph.assignment if core), out)
            for pre in ph.preload:
                count_steps(soc, pre, 1, out)
            for core in ph.prefetch:
                for reads in core:
                    count_steps(soc, reads, 1, out)
        return out

    @cached_property
    def weight_reads(self) -> Counter:
        """GM weight tensor (w_dw, b_dw, w_pw, ...) -> the bytes its copies read over every core and
        phase, counted as `counts` counts them (fusion/cost/block_l2.py: the per-tensor L2 hit)."""
        out: Counter = Counter()

        def add(steps, times: int) -> None:
            for s in steps:
                if isinstance(s, Copy) and s.kind == "weights" and s.direction == "in":
                    out[s.gm] += s.nbytes * times

        for ph in self.phases:
            for it, n in ph.iterations.items():
                add(it, n)
            add(ph.prologue, sum(1 for core in ph.assignment if core))
            for pre in ph.preload:
                add(pre, 1)
        return out

    def describe(self) -> str:
        p = self.plan
        lines = [f"program {p.workload.describe()} tile {p.tile.describe()}: {self.variant}, GEMM tiles "
                 f"{self.m_tiles} x {self.n_tiles} of {self.bm} rows x {p.cob} Cout blocks, K in blocks of "
                 f"{self.kb}, {self.barriers} SyncAll" + (", Fixpipe epilogue" if self.fixpipe_epilogue else "")
                 + (", grouped DW form" if p.dw_grouped else ", DW post-ops in fp16" if p.dw_post16 else "")
                 + (f", tiles in contiguous ranges, A panel kept in L1 ({p.a_keep} copies)" if p.a_keep else "")]
        for k, ph in enumerate(self.phases):
            if k:
                lines.append("  SyncAll" if ph.gate == "sync" else
                             "  pipe barrier on each core (it reads only what it wrote)" if ph.gate == "local" else
                             f"  per tile: cross-core flags from the producing core (at most {EPI_LAG} ahead)")
            busy = [c for c in ph.assignment if c]
            lines.append(f"{ph.name} on {ph.role} x{len(busy)} ({len(ph.units)} units, "
                         f"{ph.role}0: {len(ph.assignment[0])})")
            lines += [f"  prologue {_fmt(s)}" for s in ph.prologue]
            if ph.preload:
                when = "before its first unit" if k == 0 else "during the phase before"
                lines += [f"  preload ({ph.role}0, {when}) {_fmt(s)}" for s in ph.preload[0]]
            if ph.prefetch:
                n = sum(len(r) for core in ph.prefetch for r in core)
                lines.append(f"  read ahead into L2: {self.plan.prefetch} B of a later member's PW weights in {n} "
                             f"reads after the units")
            if ph.units:
                for j, it in enumerate(ph.units[0]):
                    lines.append(f"  unit0 step{j}")
                    lines += [f"    {_fmt(s)}" for s in it]
        return "\n".join(lines)


def _segments(m0: int, m1: int, per_image: int) -> int:
    """Images a row range [m0, m1) of the GEMM touches (one burst per channel block each)."""
    return row_image(m1 - 1, per_image) - row_image(m0, per_image) + 1


def tile_m_tile(plan: KernelPlan, u: int) -> tuple[int, int, int, int, int]:
    """plan.tile_m: (DW tile, rows, real rows, output blocks, runs per block) of GEMM tile u = t x
    coSteps + j, as SetGemmTile decodes it: the tile's ohv x owv pixels (one run per tile row, or
    one where the tile spans the row), rows the fractal-aligned count."""
    wl = plan.workload
    t, j = unit_outer(u, plan.co_steps), unit_inner(u, plan.co_steps)
    rows, cols = tile_axes(wl, plan.th, plan.tw)
    r, c = rows[tile_row(t, plan.tiles_h, plan.tiles_w)][0], cols[tile_col(t, plan.tiles_w)][0]
    frac = plan.soc.cube_fractal[0]
    return t, ceil_div(r * c, frac) * frac, r * c, block_len(j, plan.cob, wl.co1), 1 if c == wl.out_width else r


def gemm_tile(plan: KernelPlan, u: int, bm: int, m_al: int, m: int) -> tuple[int, int, int, int]:
    """(first row, rows, real rows, output blocks) of GEMM tile u = mi x coSteps + j, as the kernel's
    SetGemmTile decodes it: rows past the real m are fractal padding."""
    mi, j = unit_outer(u, plan.co_steps), unit_inner(u, plan.co_steps)
    m0, rows = block_start(mi, bm), block_len(mi, bm, m_al)
    return m0, rows, window_valid(m0, rows, m), block_len(j, plan.cob, plan.workload.co1)


def dw_phase(plan: KernelPlan, role: str) -> Phase:
    wl, soc = plan.workload, plan.soc
    b = itemsize(wl.dtype)
    rows, cols = tile_axes(wl, plan.th, plan.tw)
    full_tile = plan.in_tile_h * plan.in_tile_w
    ci_steps, tiles_h, tiles_w, cib, c1 = plan.ci_steps, plan.tiles_h, plan.tiles_w, plan.cib, wl.c1
    units, made = [], {}   # made: the unit of each (rows, columns, ci-block length), built once
    for u in range(plan.n_tiles * ci_steps):   # unit u: tile x ciSteps + q, as DwPhase decodes it
        t, q = unit_outer(u, ci_steps), unit_inner(u, ci_steps)
        r, c = rows[tile_row(t, tiles_h, tiles_w)], cols[tile_col(t, tiles_w)]
        cb = block_len(q, cib, c1)
        key = (r, c, cb)
        unit = made.get(key)
        if unit is not None:
            units.append(unit)
            continue
        pad = (full_tile - r[1] * c[1]) * C0
        units.append(made.setdefault(key, ((
            Copy("input", "in", "x_tile", "x", cb * r[1] * c[1] * C0 * b,
                 rows_bursts(cb, r[1], c[1] == wl.width), plan.tile.copies),
            *dw_ops(plan, cb, pad),
            *(ln_ops(plan) if wl.ln_eps is not None and not plan.norm_phase else ()),   # MODELED (channel_norm.py)
            *(se_dw_steps(plan, cb, r[0], c[0]) if wl.se else ()),
            Copy("handoff", "out", "dw_out", "dw_ws", cb * r[0] * c[0] * C0 * b,
                 rows_bursts(cb, r[0], c[0] == wl.out_width)),
        ),)))
    kh, kw = wl.kernel
    pro = (Copy("weights", "in", "b_dw", "b_dw", wl.c1 * C0 * ACC_BYTES, 1),)
    if plan.dw_post16:   # the bias added in the storage dtype: one Cast per core
        pro += (bias_cast(soc, "b_dw16", wl.c1),)
    # local_dw: a row of tiles (every column and ci-block) on one core: the GEMM's M tiles of the
    # same rows then read only what their core wrote (schedules/local_handoff.dw_local_ok)
    # (tile_m: a tile per M tile, so a tile's every ci-block on one core is enough)
    assignment = (by_m_tile(plan.n_tiles, plan.ci_steps, plan.cores) if plan.tile_m else
                  by_m_tile(plan.n_tiles // plan.tiles_w, plan.tiles_w * plan.ci_steps, plan.cores) if plan.local_dw
                  else round_robin(len(units), plan.cores))
    # the taps of the channel blocks a core's units touch, each once, before its first unit (at
    # their places in the resident w_dw): its units' ci-blocks repeat with period dw_tap_loads
    n_loads = dw_tap_loads(plan)
    preload = tuple(tuple(Copy("weights", "in", "w_dw", "w_dw", block_len(unit_inner(u, plan.ci_steps), plan.cib,
                                                                            wl.c1) * kh * kw * C0 * b, 1)
                          for u in core[:n_loads]) for core in assignment)
    if res_in_cube(wl, soc) and preload:   # core 0 makes the residual GEMM's identity first (_eye_steps)
        preload = (_eye_steps(plan) + preload[0],) + preload[1:]
    pipeline = stages(plan, ("MTE2", "x block", "x_tile"), ("vector", "dw taps+bias+act1", "dw_out"),
                      ("MTE3", "dw result -> GM workspace"))
    return Phase("dw", role, tuple(units), assignment, pro, preload, pipeline=pipeline,
                 prefetch=prefetch_steps(plan, assignment))


def _eye_steps(plan: KernelPlan) -> tuple:
    """res_in_cube: DW core 0 writes the identity fractal to the workspace before its units (zeros,
    then the diagonal by two bit-masked Duplicates of 8 rows each: twophase_eye.h), which the
    SyncAll makes visible to every AIC. Its ~4 vector repeats and 512 B are counted; the
    simulator times a preload's MTE2 only, so their few cycles on core 0 are left out."""
    b = itemsize(plan.workload.dtype)
    zero = count_form(plan.soc, C0 * C0, b)
    return (VectorOp("eye", "eye_ub", C0 * C0, zero.instrs + 2, zero.repeats + 2),
            Copy("handoff", "out", "eye_ub", "eye_ws", EYE_BYTES, 1))


def dw_tap_loads(plan: KernelPlan) -> int:
    """P: DW units of a core whose ci-blocks are distinct -- unit k of core c is c + k x cores, its
    ci-block (c + k x cores) mod ciSteps, periodic in k with period ciSteps / gcd(cores, ciSteps).
    A core loads the taps of its first min(its units, P) units' blocks only (the tiling's dwLoads);
    none in the pool form, which reads no taps (schedules/dw_forms.pool_form)."""
    if plan.dw_pool:
        return 0
    if plan.local_dw:   # dealt by row of tiles: unit k's ci-block is k mod ciSteps
        return plan.ci_steps
    return plan.ci_steps // gcd(plan.cores, plan.ci_steps)


def gemm_band(plan: KernelPlan, bm: int) -> int:
    """M tiles per band (plan.local_dw: the GEMM rows of one row of DW tiles, th x OW, are
    whole M tiles dealt to the core that wrote them; a local_in stage: its producer's, m_band;
    loops.by_band), else 1."""
    if plan.local_in:
        return plan.m_band or 1
    if plan.tile_m:
        return 1
    band = plan.th * plan.workload.out_width
    return band // bm if plan.local_dw and band % bm == 0 else 1


def gemm_phase(plan: KernelPlan, role: str, bm: int, kb: int) -> tuple[Phase, int, int]:
    wl, soc = plan.workload, plan.soc
    b = itemsize(wl.dtype)
    frac = soc.cube_fractal[0]
    m = gemm_m(wl)
    m_al = ceil_div(m, frac) * frac
    per_image = wl.out_height * wl.out_width
    fix, coupled = fixpipe(wl, soc), soc.coupled
    res_k = res_in_cube(wl, soc)
    slots = plan.tile.copies

    def a_copy(nbytes: int, blocks: int, segs: int, copies: int) -> Copy:
        """A block: the DW result from the workspace (a burst per channel block), or (gemm_only) x
        itself, whose NC1HWC0 layout is the workspace's within one image: a burst per channel
        block and image run of the tile's rows."""
        if plan.gemm_only:
            return Copy("input", "in", "a_l1", "x", nbytes, blocks * segs, copies)
        return Copy("handoff", "in", "a_l1", "dw_ws", nbytes, blocks, copies)

    m_tiles, co_steps = (plan.n_tiles if plan.tile_m else ceil_div(m_al, bm)), plan.co_steps
    k_blocks = split(wl.c1, kb)
    resident, keep = plan.b_resident, plan.a_keep
    n_units = m_tiles * co_steps
    # (tile_m: the cores one 16-row M tile per core would take, at most one per GEMM tile)
    cores = min(phase2_cores(wl, soc, plan.cob, frac, plan.gemm_cap), n_units) if plan.tile_m else \
        phase2_cores(wl, soc, plan.cob, bm, plan.gemm_cap)
    by_m = plan.local_in or plan.local_dw
    if by_m and co_steps > 1 and resident:
        raise ValueError(f"{wl.describe()}: GEMM tiles dealt by M tile cannot hold one N tile of B resident")
    assignment = (contiguous(n_units, cores) if keep else by_band(m_tiles, gemm_band(plan, bm), co_steps, cores)
                  if by_m else round_robin(n_units, cores))
    # a_keep: the tiles whose core loads an A panel (its first tile of each M tile), and for those
    # refilling a copy (the keep-th panel on, keep = the copies) how many steps back on the core
    # the last tile that read that copy ended
    panel: dict[int, int] = {}
    for core in assignment if keep else ():
        pos, ends = 0, []   # the core's step count; per panel the index of its last tile's last step
        starts = set(panel_starts(core, co_steps))
        for i, u in enumerate(core):
            if i in starts:
                panel[u] = pos - ends[len(ends) - keep] if len(ends) >= keep else 0
                ends.append(0)
                pos += 1
            pos += len(k_blocks)
            ends[-1] = pos - 1
    a_src = "a_res" if keep else "a_l1"
    units, made = [], {}   # made: the unit of each distinct shape (below), built once
    for u in range(n_units):   # GEMM tile u: mi x coSteps + j, as SetGemmTile decodes it
        if plan.tile_m:   # DW tile mi's pixels: A gathered by tile row, y and the residual likewise
            _, rows_al, valid, cbo, segs = tile_m_tile(plan, u)
        else:
            m0, rows_al, valid, cbo = gemm_tile(plan, u, bm, m_al, m)
            segs = _segments(m0, m0 + valid, per_image)   # runs of one output block's rows (one per image)
        shape = (rows_al, valid, cbo, segs, panel.get(u, -1))   # all a unit's steps depend on
        unit = made.get(shape)
        if unit is not None:
            units.append(unit)
            continue
        out_bytes = cbo * valid * C0 * b
        out_bursts = cbo * segs
        its = []
        if keep and u in panel:   # the tile's rows over all of K, one run per channel block (A_PANEL)
            its.append((*((Refill("a_res", panel[u]),) if panel[u] else ()),
                        Copy("handoff", "in", "a_res", "dw_ws", wl.c1 * rows_al * C0 * b, wl.c1, keep)))
        for q, kb in enumerate(k_blocks):
            b_src = "b_res" if resident else "b_l1"
            a_in = (Copy("handoff", "in", "a_l1", "dw_ws", kb * valid * C0 * b, kb * segs, slots) if plan.tile_m
                    else a_copy(kb * rows_al * C0 * b, kb, segs, slots))
            it: list = [*(() if keep else (a_in,)),
                        *(() if resident else
                          (Copy("weights", "in", "b_l1", "w_pw", kb * C0 * cbo * C0 * b, cbo, slots),)),
                        Move("L1->L0A", a_src, "a_l0a", kb * rows_al * C0 * b),
                        Move("L1->L0B", b_src, "b_l0b", kb * C0 * cbo * C0 * b),
                        CubeOp(cube_fractals(soc, rows_al, kb, cbo), "a_l0a", "b_l0b", "pw_acc")]
            if q == len(k_blocks) - 1 and not res_k:   # (res_k: the epilogue follows the residual's K blocks)
                if fix:
                    it.append(Copy("output", "out", "pw_acc", "y", out_bytes, out_bursts))
                elif not coupled:
                    it.append(Copy("handoff", "out", "pw_acc", "pre_ws", cbo * rows_al * C0 * b, cbo))
                else:
                    if wl.residual:
                        it.insert(2, Copy("residual", "in", "res_tile", "res", out_bytes, out_bursts, slots))
                    it += l0c_epilogue(plan, cbo, rows_al, rows_al, "y_acc")
                    it.append(Copy("output", "out", "y_tile", "y", out_bytes, out_bursts, slots))
            its.append(tuple(it))
        if res_k:   # per output block its residual rows as one more K block, B the identity (res_in_cube)
            for jj in range(cbo):
                its.append((Copy("residual", "in", "a_l1", "res", valid * C0 * b, segs, slots),
                            Move("L1->L0A", "a_l1", "a_l0a", rows_al * C0 * b),
                            CubeOp(cube_fractals(soc, rows_al, 1, 1), "a_l0a", "eye_l0b", "pw_acc"))
                           + ((Copy("output", "out", "pw_acc", "y", out_bytes, out_bursts),) if jj == cbo - 1 else ()))
        units.append(made.setdefault(shape, tuple(its)))
    preload = ()
    if resident:   # each core's one N tile (its first unit's, as PreloadB): cbo x C1 FRACTAL_Z fractals, one run
        preload = tuple((Copy("weights", "in", "b_res", "w_pw",
                              wl.c1 * C0 * block_len(unit_inner(u[0], co_steps), plan.cob, wl.co1) * C0 * b, 1),)
                        if u else () for u in assignment)
    pro = ()
    if fix:
        pro = (Copy("weights", "in", "b_pw_l1", "b_pw", wl.co1 * C0 * ACC_BYTES, 1),)
        if res_k:   # the identity, made by phase 1: workspace -> L1 -> L0B, resident
            pro += (Copy("handoff", "in", "eye_l1", "eye_ws", EYE_BYTES, 1), Move("L1->L0B", "eye_l1", "eye_l0b", EYE_BYTES))
    elif coupled:
        pro = _b_pw_prologue(plan) + bias_setup(plan, bm)
    # per K block: A (+ B) -> L1, L1 -> L0A / L0B, Mmad into the L0C accumulator, which the last K
    # block's epilogue reads out (310P: L0C -> UB, vector epilogue, y; 910B: Fixpipe or the workspace)
    # (a_keep: the K steps' MTE2 loads B blocks only, into b_l1; a panel iteration loads A alone)
    pipeline = stages(plan, ("MTE2", "A + B block k{q}", "b_l1" if keep else "a_l1"), ("MTE1", "L1->L0A/B k{q}", L0_RING),
                      ("cube", "mmad k{q}", "pw_acc", True), ("vector", "L0C->UB + epilogue", "y_tile"), ("MTE3", "y"))
    gate = "local" if plan.local_dw else "sync"   # local_dw: a pipe barrier on each core, no SyncAll
    return Phase("gemm", role, tuple(units), assignment, pro, preload, gate=gate, pipeline=pipeline), m_tiles, co_steps


def epi_phase(plan: KernelPlan, bm: int, gemm: Phase) -> Phase:
    """910B without a Fixpipe epilogue: the AIVs finish the epilogue of the tiles their group's
    AIC produced, tile by tile (gate "flags"): AIV g x ratio + s takes part s of the rows of each
    tile of AIC g, in the AIC's order (PART_ROWS: whole fractals, the last part ragged or empty)."""
    wl, soc = plan.workload, plan.soc
    b = itemsize(wl.dtype)
    frac = soc.cube_fractal[0]
    m = gemm_m(wl)
    per_image = wl.out_height * wl.out_width
    slots = plan.tile.copies
    m_al = ceil_div(m, frac) * frac
    ratio = plan.aic_ratio
    units, deps = [], []
    assignment: list[tuple[int, ...]] = []
    for tiles in gemm.assignment:   # AIC g's tiles; its AIVs g x ratio + s
        parts = [[] for _ in range(ratio)]
        for u in tiles:   # as EpiPhase decodes it: SetGemmTile(u), then EpiPart(s)
            t0, rows, _valid, cbo = gemm_tile(plan, u, bm, m_al, m)
            step = part_rows(rows, ratio, frac)
            for s_, part in enumerate(parts):
                m0, n = t0 + min(block_start(s_, step), rows), max(0, block_len(s_, step, rows))
                valid = window_valid(m0, n, m)
                it: list = []
                if n:
                    out_bytes = cbo * valid * C0 * b
                    out_bursts = cbo * _segments(m0, m0 + valid, per_image) if valid else 0
                    it.append(Copy("handoff", "in", "pre_tile", "pre_ws", cbo * n * C0 * b, cbo, slots))
                    if wl.residual and valid:
                        it.append(Copy("residual", "in", "res_tile", "res", out_bytes, out_bursts, slots))
                    it += epilogue16_ops(plan, cbo, n) if plan.epi_post16 else block_epilogue_ops(plan, cbo, True, n)
                    if valid:
                        it.append(Copy("output", "out", "y_tile", "y", out_bytes, out_bursts, slots))
                part.append(len(units))
                units.append((tuple(it),))
                deps.append(u)
        assignment += [tuple(p) for p in parts]
    pipeline = stages(plan, ("MTE2", "pre-act (+res)", "pre_tile"), ("vector", "bias+act2 (+res)", "y_tile"),
                      ("MTE3", "y"))
    return Phase("epi", "aiv", tuple(units), tuple(assignment), _b_pw_prologue(plan), gate="flags",
                 deps=tuple(deps), pipeline=pipeline)


def _b_pw_prologue(plan: KernelPlan) -> tuple:
    """The vector epilogue's resident PW bias, and its cast to the storage dtype (plan.epi_post16)."""
    wl, soc = plan.workload, plan.soc
    pro: tuple = (Copy("weights", "in", "b_pw", "b_pw", wl.co1 * C0 * ACC_BYTES, 1),)
    if plan.epi_post16:
        pro += (bias_cast(soc, "b_pw16", wl.co1),)
    return pro


def gemm_only_ok(plan: KernelPlan) -> bool:
    """The GEMM can read its A blocks straight from x (NC1HWC0: per image and channel block its
    pixels in a row, C0 each; a tile's rows that span images read one run per image), on either chip (the flag is the caller's promise that the DW is
    the identity; the kernel then has no phase 1 and no barrier: on 910B the AICs start at once,
    on 310P each core loads its resident N tile, if any, and runs its GEMM tiles). Where M is not a
    multiple of 16 the last M tile's pad rows run past a channel block (into the next one, or past
    x's end for the last): the caller also promises x stays readable for a_slack_bytes past its
    end (a chain boundary tensor, fusion/codegen/ascendc/emit_chain.py); those rows only feed output rows
    never written."""
    wl = plan.workload
    return wl.pointwise_dw


def a_layout_aligned(plan: KernelPlan) -> bool:
    """x is exactly the A workspace layout (its pixels fill whole fractals): no slack needed."""
    return gemm_m(plan.workload) % plan.soc.cube_fractal[0] == 0


def a_slack_bytes(plan: KernelPlan) -> int:
    """How far past x's end a gemm_only GEMM may read (the last tile's pad rows)."""
    frac = plan.soc.cube_fractal[0]
    m = gemm_m(plan.workload)
    return (ceil_div(m, frac) * frac - m) * C0 * itemsize(plan.workload.dtype)


def phase(prog: "TwoPhaseProgram", name: str) -> Phase | None:
    return next((ph for ph in prog.phases if ph.name == name), None)


def build_twophase(plan: KernelPlan) -> TwoPhaseProgram:
    """Lower a two-phase plan: DW units round-robin over plan.cores, GEMM tiles over the cube
    cores, (910B, vector epilogue) epilogue tiles over the AIVs."""
    wl, soc = plan.workload, plan.soc
    coupled = soc.coupled
    copies = plan.tile.copies
    bm = plan.gemm_rows
    kb = gemm_k(wl, soc, plan.cob, bm, copies)
    if plan.gemm_only and not gemm_only_ok(plan):
        raise ValueError(f"gemm_only plan of {wl.describe()}: x is not the GEMM's A layout on {soc.name}")
    if plan.tile_m and not plan.local_dw:
        raise ValueError(f"{wl.describe()}: a GEMM M tile per DW tile (tile_m) is a local DW -> GEMM hand-off")
    if plan.local_dw and (not coupled or plan.gemm_only or wl.se or plan.norm_phase or plan.a_keep):
        raise ValueError(f"{wl.describe()}: a local DW -> GEMM hand-off needs one core running both phases, "
                         "a DW phase right before the GEMM and GEMM tiles dealt by M tile")
    phases = [] if plan.gemm_only else [dw_phase(plan, "core" if coupled else "aiv")]
    if wl.se and phases:   # squeeze-and-excitation (schedules/se_plan.py): its own phase, a SyncAll each side
        phases.append(se_phase(plan, phases[0].role))
    if plan.norm_phase and phases:   # the channel LayerNorm's own phase (schedules/norm_phase.py)
        phases.append(norm_phase(plan, phases[0].role))
    gemm, mt, nt = gemm_phase(plan, "core" if coupled else "aic", bm, kb)
    phases.append(gemm)
    if not coupled and not fixpipe(wl, soc):
        phases.append(epi_phase(plan, bm, gemm))
    return TwoPhaseProgram(plan, tuple(phases), bm, kb, mt, nt)
