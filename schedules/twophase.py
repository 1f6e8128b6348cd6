"""The two-phase fused kernel: its GEMM geometry and its buffers (one launch per block).

  phase 1  every vector core (910B: the AIVs; 310P: the AI cores' vector units) runs DW + bias +
           act1 over (tile, input-channel block) units and writes the DW result to a GM workspace
           laid out as the cube's A operand: (C1, M padded to 16, C0), M = batch x out pixels;
  SyncAll  across the block's cores (the workspace must be complete before any GEMM reads it);
  phase 2  the PW as a GEMM split over the cube cores in M (pixels, bm rows per tile) AND N (Cout,
           cob blocks per tile), K (Cin) streamed through L1/L0 in blocks of kb = cib channel
           blocks -- no core holds all of K, and the PW weights are read once per (M, N) tile
           instead of once per core per DW tile. Epilogue as the one-phase variants: 910B Fixpipe
           (bias, relu) where it applies -- with a linear projection's residual added by the cube
           first (res_in_cube) --, 310P L0C -> UB + vector;
  phase 3  (910B without a Fixpipe epilogue) no barrier: the AIVs of AIC g's group finish bias,
           act2 and the residual of each tile AIC g wrote to the pre-activation workspace as soon
           as its cross-core flag arrives (schedules/program_twophase.epi_phase), overlapping the
           AIC's next tiles.

This is the issue's "Cout split over core groups" and "K streaming". The plan's TileConfig keeps
its meaning for phase 1 (th x tw DW tiles, cib channel blocks per unit); cob is the GEMM tile's N;
bm (the GEMM tile's M) and kb (its K step) are decided here from cob, the cores and L0A/L0B/L0C.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.activations import needs_scratch
from schedules.dw_forms import dw_form_work, wide_legal
from schedules.isa import ACT_OPS, itemsize
from schedules.channel_norm import add_ln_buffers
from schedules.norm_phase import add_norm_phase_buffers
from schedules.loops import contiguous, unit_outer, window_span
from schedules.workload import DwSepWorkload, buffer_copies, ceil_div
from schedules.footprint import fused_min_bytes
from schedules.l2 import write_hit
from schedules.se_plan import se_buffer_specs, se_ws_bytes

ENGINE = "twophase"          # TileConfig.pw_engine of the variant
VARIANT = "two-phase"        # KernelPlan.variant
# at least this many K steps per GEMM tile where C1 allows: the next step's loads overlap the
# current Mmad (one step would leave MTE2 and the cube in series)
K_STEPS_MIN = 4
BM_CAP = 512                 # rows of one GEMM tile at most (more gives no reuse the L2 lacks)
# phase 3's pacing (910B): the AIC waits for its AIVs' answer to tile i - EPI_LAG before it signals
# tile i, so at most EPI_LAG flags are outstanding on either side -- the hardware's cross-core flag
# counters count to 15 [devkit CrossCoreSetFlag page; fusion/emu/include/megafuse_emu/sync.h].
# The GM slots need no pacing (every tile has its own pre-activation rows); 8 lets the AIC run
# well ahead of a slower epilogue without nearing the limit.
EPI_LAG = 8


def tap_row_fit(soc: SocSpec) -> int:
    """Widest tile row one DW tap instruction covers in one repeat (schedules/isa.dw_taps: a
    16-bit MulAddDst, 8 pixels a repeat); phase 1 favours such rows."""
    return 8


# act1 the grouped DW form applies in the storage dtype (exact there but for the bias add's rounding)
GROUPED_ACTS = ("none", "relu", "relu6")
MAX_STRIDE = 255   # 8-bit block / repeat strides of the binary repeat form [devkit BinaryRepeatParams]


def dw_post16(wl: DwSepWorkload) -> bool:
    """Phase 1 adds the DW bias and applies act1 in the storage dtype, in either DW form
    (schedules/dw_forms.py): its result leaves for the workspace in the storage dtype anyway, so
    the per-block form's fp32 accumulator, widen and cast buy one rounding of the bias add (the
    vendor's vector depthwise works so). 16-bit storage and an act1 in GROUPED_ACTS."""
    return itemsize(wl.dtype) == 2 and wl.act1 in GROUPED_ACTS and wl.ln_eps is None   # a norm reads fp32 sums


def dw_wide_ok(wl: DwSepWorkload) -> bool:
    """The per-block DW form with fp16 post-ops may walk wide rows (schedules/dw_forms.wide_taps,
    stride 1): its dw_out then holds each block's rows at the input tile's pitch, whichever form
    the tile picks (the kernel's choice is tiling data)."""
    return dw_post16(wl) and wide_legal(wl)


def epi_post16(wl: DwSepWorkload, soc: SocSpec) -> bool:
    """The vector epilogue of the GEMM tiles in the storage dtype: per output block one Add of
    the PW bias in the storage dtype, act2 and the residual in count form, straight into y_tile --
    no fp32 landing buffer, bias halves or final cast. 310P: the CO1 -> CO2 move (L0C -> UB, arch
    2002) casts fp32 -> fp16 on the way (DataCopy with DataCopyEnhancedParams, float -> half: one
    more rounding, of the pre-activation before the bias add); 910B phase 3 (no Fixpipe
    epilogue): the pre-activation Fixpipe wrote is already fp16, so no widening either. 16-bit
    storage, act2 in GROUPED_ACTS."""
    return ((soc.coupled or not fixpipe(wl, soc)) and itemsize(wl.dtype) == 2 and wl.act2 in GROUPED_ACTS)


# the act2 ops the L0C -> UB move takes over with isRelu (max(., 0)): relu's one, relu6's Maxs
RELU_IN_MOVE = {"relu": 1, "relu6": 1}


def bias_in_cube(wl: DwSepWorkload, soc: SocSpec) -> bool:
    """310P with the 16-bit epilogue (epi_post16): the PW bias enters L0C through the cube and
    relu's max(., 0) rides in the L0C -> UB move, as the vendor-like 310P conv gets bias and relu
    without a vector pass (fusion/cost/vendor_baseline.py). One more Mmad per output tile, K = 16: A
    all ones (InitConstValue into L0A, once per core), B the bias fractals (InitConstValue zeroes
    them in L1, one UB -> L1 copy writes row 0 of each: the fp16 bias), so C += 1 x bias exactly.
    The bias rounds to fp16 as the vector form's b_pw16 does. 310P has no bias table and no
    Fixpipe (soc.bt_bytes = 0)."""
    return soc.coupled and epi_post16(wl, soc)


def bias_gemm_rows(wl: DwSepWorkload, soc: SocSpec, cob, db, thw_al=None, bm: int = 0):
    """(rows of the ones operand, whether the bias GEMM's one K block of A and of B fit in L0A / L0B
    beside the GEMM's): the cube kernel's output tile (thw_al rows; its A holds all C1 x thw_al, B
    C1 x cob, one copy each) or, thw_al None, the two-phase GEMM tile (bm rows; A kb x bm and B kb
    x cob, `db` copies each). Scalars or arrays of tiles (the tuner's budget)."""
    if thw_al is None:
        copies = buffer_copies(db)
        rows = gemm_rows(wl, soc, cob, copies, bm)
        kb = gemm_k(wl, soc, cob, rows, copies)
        a_rows, b_fractals = kb * rows * copies, kb * cob * copies
    else:
        rows, a_rows, b_fractals = thw_al, wl.c1 * thw_al, wl.c1 * cob
    b = itemsize(wl.dtype)
    fits = ((a_rows + rows) * C0 * b <= soc.l0a_bytes) & ((b_fractals + cob) * C0 * C0 * b <= soc.l0b_bytes)
    return rows, fits


def bias_gemm_buffers(wl: DwSepWorkload, soc: SocSpec, cob, db, thw_al, step: str, bm: int = 0) -> list:
    """The bias GEMM's buffers (name, scope, dims, dtype, copies, role) for output tiles of cob
    blocks (bias_gemm_rows: the rows, and whether they fit): one more K block of A and of B. None
    where they do not fit (the epilogue adds the bias on the vector unit then); arrays of tiles
    (the tuner's budget): zero-sized where they do not fit."""
    rows, fits = bias_gemm_rows(wl, soc, cob, db, thw_al, bm)
    if np.ndim(fits):
        rows, cob, co1 = (np.where(fits, v, 0) for v in (rows, cob, wl.co1))
    elif not fits:
        return []
    else:
        co1 = wl.co1
    return [("ones_l0a", "L0A", (rows, C0), wl.dtype, 1, "bias GEMM A operand: all ones, K = 16"),
            ("bias_l1", "L1", (co1, C0, C0), wl.dtype, 1,
             "folded BN2 bias as B fractals: row 0 of each the bias, the rest zero"),
            ("bias_l0b", "L0B", (cob, C0, C0), wl.dtype, 1, f"the {step}'s bias fractals (cube B operand)")]


def act2_vector_ops(act2: str, relu_in_move: bool) -> int:
    """Vector instructions act2 costs per count-form pass of the 16-bit epilogue (less what the
    L0C -> UB move's isRelu does, where the plan has bias_in_cube)."""
    return ACT_OPS[act2] - (RELU_IN_MOVE.get(act2, 0) if relu_in_move else 0)


@lru_cache(maxsize=4096)
def dw_grouped(wl: DwSepWorkload, soc: SocSpec, th: int, tw: int, cib: int) -> bool:
    """Phase 1 issues its DW in the grouped form (schedules/program.grouped_dw_ops): a repeat spans
    the same pixel of up to 8 channel blocks, the repeats walk the tile as wide rows (row pitch =
    the input tile's), so a tap is one instruction per 8 blocks instead of one per block and column
    group; bias and act1 run on the fp16 result (as the vendor's vector depthwise does: no fp32
    accumulator, widen or cast). Legal for 16-bit stride-1 DW whose channel-block pitch fits the
    8-bit block stride and act1 in GROUPED_ACTS; chosen where it issues fewer cycles than the
    per-block form with fp16 post-ops (a unit of a single block is faster per block)."""
    kh, kw = wl.kernel
    ih, iw = th + kh - 1, tw + kw - 1
    if not dw_post16(wl) or wl.stride != (1, 1) or ih * iw > MAX_STRIDE or kh * kw > MAX_STRIDE:
        return False
    return dw_form_work(soc, wl, th, tw, cib, True).cycles(soc) < dw_form_work(soc, wl, th, tw, cib, False).cycles(soc)


def gemm_m(wl: DwSepWorkload) -> int:
    """Rows of the GEMM: every output pixel of the batch."""
    return wl.batch * wl.out_height * wl.out_width


def res_in_cube(wl: DwSepWorkload, soc: SocSpec) -> bool:
    """910B, a residual after a linear projection (act2 none, MobileNetV2's blocks): the residual
    joins the GEMM as cbo more K blocks per output tile -- A the residual's rows of output block
    j, B a 16 x 16 identity (EYE_BYTES; phase 1 writes it to the workspace) -- so L0C holds
    PW + residual and the Fixpipe writes y = PW + bias + res straight from it, with no
    pre-activation round trip through GM and no AIV epilogue (phase 3). The vendor's graph
    compiler fuses such an Add into its conv's Fixpipe (TbeConvFixPipeFusionPass), which the
    public A2 Fixpipe API does not offer; the identity GEMM is exact (fp16 x 1 into fp32).
    Not for an identity DW (a gemm_only plan has no phase 1 to write the identity); fp16 (the
    two-phase kernel's dtype: EYE_BYTES)."""
    return (not soc.coupled and wl.residual and wl.act2 == "none" and not wl.pointwise_dw
            and itemsize(wl.dtype) == 2)


EYE_BYTES = C0 * C0 * 2   # the identity fractal of res_in_cube, fp16


def fixpipe(wl: DwSepWorkload, soc: SocSpec) -> bool:
    """910B: Fixpipe applies bias and act2 out of L0C (as the one-phase MIX kernel); with a
    residual only where the GEMM adds it (res_in_cube)."""
    return (not soc.coupled and wl.act2 in soc.fixpipe_acts
            and (not wl.residual or res_in_cube(wl, soc)))


def gemm_rows(wl: DwSepWorkload, soc: SocSpec, cob: int, copies: int, bm: int = 0) -> int:
    """bm: rows of one GEMM tile, a multiple of 16, at most what L0A (A block) and L0C (the
    accumulator) hold, balanced so the last M tile is no sliver. Of the M splits, the one whose
    busiest cube core loads the fewest operand bytes: rounds (tiles per core, round-robin) x (its A
    block bm x C1 + its B slice C1 x cob blocks), the GM -> L1 traffic an MTE2-bound GEMM phase
    waits for. Splitting M re-reads every B slice once more (the old rule filled the cube cores
    with M tiles: MobileNetV1 b12, M = 49 x 1024 Cout, read its 1 MB of weights twice where the
    vendor-like split 1 x 22 reads them once); ties keep the fewer M tiles. A vector epilogue
    (310P, 910B phase 3) keeps the old rule (below). bm: rows asked for (TileConfig.gemm_bm), held
    to that limit and to the rows there are."""
    frac = soc.cube_fractal[0]
    m_al = ceil_div(gemm_m(wl), frac) * frac
    b = itemsize(wl.dtype)
    limit = min(soc.l0c_bytes // (copies * cob * C0 * 4), soc.l0a_bytes // (copies * C0 * b), BM_CAP)
    limit = max(frac, limit // frac * frac)
    if bm:
        return max(frac, min(bm, limit, m_al) // frac * frac)
    n_tiles = ceil_div(wl.co1, cob)
    if soc.coupled or not fixpipe(wl, soc):
        # a vector epilogue holds (cob, bm) tiles in UB beside the DW phase's buffers: the rule that
        # fills the cube cores with M tiles (taller tiles overflow the UB the DW phase shares, and
        # the load rule's shorter ones made MobileNetV2's 310P GEMM stages slower, MODELED)
        want_m = max(1, ceil_div(soc.cube_cores, n_tiles))
        bm = min(limit, ceil_div(ceil_div(m_al, want_m), frac) * frac)
        return ceil_div(ceil_div(m_al, ceil_div(m_al, bm)), frac) * frac
    best = None
    res = res_in_cube(wl, soc)
    first = ceil_div(m_al, limit)
    # past two more rounds of tiles per core the busiest core's rows shrink no further than its
    # rounds grow (bm + cob x C0 per round)
    for tiles_m in range(first, min(m_al // frac, first + 2 * soc.cube_cores) + 1):
        bm = ceil_div(ceil_div(m_al, tiles_m), frac) * frac
        if ceil_div(m_al, bm) != tiles_m:   # the same bm as fewer M tiles
            continue
        # (res_in_cube: a tile also reads its cob residual blocks of bm rows, K's c1 blocks each)
        a_rows = bm * (wl.c1 + cob) if res else bm * wl.c1
        load = ceil_div(tiles_m * n_tiles, soc.cube_cores) * (a_rows + wl.c1 * cob * C0)
        if best is None or load < best[0]:
            best = (load, bm)
    return best[1]


def gemm_k(wl: DwSepWorkload, soc: SocSpec, cob: int, bm: int, copies: int) -> int:
    """kb: channel blocks of K per GEMM step -- as many as L0A (bm x kb) and L0B (kb x cob) hold
    double-buffered, in at least K_STEPS_MIN steps, balanced over C1. (The bias GEMM's operands,
    bias_gemm_buffers, take what room the balanced kb leaves.)"""
    b = itemsize(wl.dtype)
    l0b = soc.l0b_bytes - (EYE_BYTES if res_in_cube(wl, soc) else 0)   # the identity stays in L0B
    kmax = min(soc.l0a_bytes // (copies * bm * C0 * b), l0b // (copies * C0 * cob * C0 * b))
    kmax = max(1, min(wl.c1, kmax))
    steps = max(ceil_div(wl.c1, kmax), min(K_STEPS_MIN, wl.c1))
    return ceil_div(wl.c1, steps)


def gemm_cap(wl: DwSepWorkload, soc: SocSpec, tile_cores: int, dw_cores: int) -> int:
    """Vector cores the launch may hold (the tile's cores knob, 0 = all): the GEMM phase's cores
    are bounded by this, not by the DW units (dw_cores, KernelPlan.cores). An identity DW (a
    chain's GEMM stage, fusion/driver/chain_stage.py) keeps its DW units' cores: its tile is the
    only core knob the policy weighs for it (all cores made MobileNetV2's 310P stages slower,
    MODELED), unless the tile names its cores (a stage after its producer on the same cores takes
    the producer's cap: fusion/driver/chain_local.py)."""
    if wl.pointwise_dw:
        return min(soc.vector_cores, tile_cores) if tile_cores else dw_cores
    return min(soc.vector_cores, tile_cores or soc.vector_cores)


def phase2_cores(wl: DwSepWorkload, soc: SocSpec, cob: int, bm: int, vec_cores: int) -> int:
    """Cube cores of phase 2: one per (M, N) tile, up to the AICs of `vec_cores` AIVs (910B,
    1:2) or `vec_cores` cores (310P). Callers pass the launch cap (gemm_cap), not the DW units:
    a block with few DW units (MobileNetV1 b12: 32 units of a 7 x 7 tile) would otherwise run its
    MTE2-bound GEMM on 16 of 24 AICs; the launch then holds the GEMM's cores and the vector cores
    without a DW unit wait at the SyncAll (their DwPhase has no units: UnitsOf(core >= blockDim))."""
    frac = soc.cube_fractal[0]
    units = ceil_div(ceil_div(gemm_m(wl), frac) * frac, bm) * ceil_div(wl.co1, cob)
    return min(soc.cube_cores, units, ceil_div(vec_cores, max(1, soc.vector_cores // soc.cube_cores)))


def b_resident(wl: DwSepWorkload, soc: SocSpec, cob: int, db: bool, vec_cores: int, stream: bool = False,
               rows: int = 0) -> bool:
    """Phase 2 holds its N tile's PW weights (all of K x cob blocks) in L1, loaded once per core
    while phase 1 runs (310P: queued on the core's MTE2 after its first x block; 910B: the AIC,
    idle until the SyncAll, loads them at the start), instead of one B block per K step of every
    (M, N) tile -- the weights' DRAM time then overlaps the DW phase and the barrier, which two
    separate kernels cannot do. Needs every GEMM core's tiles in one N tile (the round-robin deals
    tile u to core u mod G, its N tile is u mod coSteps: G a multiple of coSteps, or one N tile)
    and the slice beside the A blocks in L1. `stream` (TileConfig.b_stream): the tile streams B
    anyway -- resident weights load at the kernel's start beside every other core's traffic, which
    a GEMM phase of few tiles may not amortize (the tile policy keeps the faster)."""
    if stream:
        return False
    copies = buffer_copies(db)
    bm = gemm_rows(wl, soc, cob, copies, rows)
    kb = gemm_k(wl, soc, cob, bm, copies)
    n_tiles = ceil_div(wl.co1, cob)
    g = phase2_cores(wl, soc, cob, bm, vec_cores)
    if n_tiles > 1 and g % n_tiles:
        return False
    b = itemsize(wl.dtype)
    l1 = copies * kb * bm * C0 * b + wl.c1 * C0 * cob * C0 * b
    l1 += wl.co1 * C0 * 4 if fixpipe(wl, soc) else 0
    l1 += EYE_BYTES if res_in_cube(wl, soc) else 0
    return l1 <= soc.l1_bytes


def a_keep(wl: DwSepWorkload, soc: SocSpec, cob: int, db: bool, vec_cores: int, stream: bool = False,
           rows: int = 0) -> int:
    """910B, Fixpipe epilogue, PW weights streamed: the GEMM cores take their tiles in contiguous
    ranges (loops.contiguous, M-major: a core's consecutive tiles share an M tile) and each keeps
    its A panel -- the tile's rows over all of K -- in L1 across the N tiles of one M tile, loaded
    once per (core, M tile) instead of one A block per K step of every tile. The vendor-like GEMM
    keeps its A panel across its N base blocks likewise. Returns the panel's copies (0: not
    kept): two where they fit beside the streamed B blocks and the bias in L1 (a new M tile's
    panel loads while the last one's tiles run), else one (its load waits for the last tile).
    Only where the busiest core loads fewer panels than it runs tiles (a whole panel is one
    load before the tile's first Mmad, where streamed A blocks overlap it). Not with the residual's K blocks
    (res_in_cube: they stream their A through the A queue) nor where a gemm_only plan may read
    A from x (an identity DW: a chain's GEMM stage, chain_stage.py)."""
    if (soc.coupled or not fixpipe(wl, soc) or res_in_cube(wl, soc) or wl.pointwise_dw
            or b_resident(wl, soc, cob, db, vec_cores, stream, rows)):
        return 0
    copies = buffer_copies(db)
    bm = gemm_rows(wl, soc, cob, copies, rows)
    kb = gemm_k(wl, soc, cob, bm, copies)
    frac = soc.cube_fractal[0]
    m_tiles, n_tiles = ceil_div(ceil_div(gemm_m(wl), frac) * frac, bm), ceil_div(wl.co1, cob)
    g = phase2_cores(wl, soc, cob, bm, vec_cores)
    ranges = contiguous(m_tiles * n_tiles, g)
    panels = max(len(panel_starts(r, n_tiles)) for r in ranges)
    if panels >= max(len(r) for r in ranges):   # the busiest core would load an A panel per tile
        return 0
    b = itemsize(wl.dtype)
    rest = copies * kb * C0 * cob * C0 * b + wl.co1 * C0 * 4
    panel = wl.c1 * bm * C0 * b
    return next((n for n in (copies, 1) if n * panel + rest <= soc.l1_bytes), 0)


def panel_starts(tiles: tuple[int, ...], co_steps: int) -> list[int]:
    """a_keep: the positions in a core's range of GEMM tiles (u = mi x coSteps + j) where a new M
    tile starts, i.e. where the core loads an A panel (as the kernel's A_PANEL tests m0)."""
    return [i for i, u in enumerate(tiles)
            if i == 0 or unit_outer(u, co_steps) != unit_outer(tiles[i - 1], co_steps)]


def twophase_buffer_specs(wl: DwSepWorkload, soc: SocSpec, th, tw, cob, cib, db, vec_cores: int,
                          norm_phase: bool = False, cap: int | None = None, b_stream: bool = False,
                          rows: int = 0) -> list[tuple]:
    """Every buffer of the two-phase kernel, as schedules/plan.buffer_specs lists them (scalar
    tile sizes only). Phase 1 lives in UB; phase 2 in L1/L0 (and, on 310P or for a vector
    epilogue, UB). A core runs its phases one after the other but the kernel allocates them all.
    vec_cores: the DW cores (KernelPlan.cores); cap: the launch cap (gemm_cap; None: vec_cores),
    which decides the GEMM cores. norm_phase:
    a channel LayerNorm runs in a phase of its own (schedules/norm_phase.py)."""
    dt = wl.dtype
    copies = buffer_copies(db)
    c1, co1 = wl.c1, wl.co1
    kh, kw = wl.kernel
    ih, iw = window_span(th, wl.stride[0], kh), window_span(tw, wl.stride[1], kw)
    bm = gemm_rows(wl, soc, cob, copies, rows)
    kb = gemm_k(wl, soc, cob, bm, copies)
    fix = fixpipe(wl, soc)
    resident = b_resident(wl, soc, cob, db, vec_cores if cap is None else cap, b_stream, rows)
    keep_a = a_keep(wl, soc, cob, db, vec_cores if cap is None else cap, b_stream, rows)
    grouped = dw_grouped(wl, soc, th, tw, cib)
    post16 = dw_post16(wl)
    out = []

    def add(name, scope, dims, dtype, n, role, **opts):
        out.append((name, scope, tuple(dims), dtype, n, role, opts))

    # phase 1: DW of one (tile, channel block) unit; the result leaves through dw_out
    add("x_tile", "UB", (cib, ih, iw, C0), dt, copies, "input tile with halo (one unit's channel blocks)")
    add("w_dw", "UB", (c1, kh, kw, C0), dt, 1, "depthwise taps, resident", in_tir=False)
    add("b_dw", "UB", (c1, C0), "float32", 1, "folded BN1 bias, resident", in_tir=False)
    if post16:   # fp16 post-ops: the bias in the storage dtype, no fp32 accumulator
        add("b_dw16", "UB", (c1, C0), dt, 1, "folded BN1 bias in the storage dtype", in_tir=False)
    # (one role text for the fp16 forms: plans differing in the stride share a kernel text)
    what16 = "DW result after bias+act1 (rows dwPitch pixels apart), on its way to the GM workspace"
    if grouped or dw_wide_ok(wl):   # wide rows
        add("dw_out", "UB", (cib, th, iw, C0), dt, copies, what16)
    elif post16:
        add("dw_out", "UB", (cib, th, tw, C0), dt, copies, what16)
    else:
        add("dw_acc", "UB", (cib, th, tw, C0), "float32", 1, "DW accumulator")
        add("dw_out", "UB", (cib, th, tw, C0), dt, copies,
            "DW result after bias+act1, on its way to the GM workspace")
    if wl.ln_eps is not None and norm_phase:   # schedules/norm_phase.py
        add_norm_phase_buffers(add, wl, th, tw, vec_cores)
    elif wl.ln_eps is not None:   # schedules/channel_norm.py (a unit holds all of C1)
        add_ln_buffers(add, th, tw)
    if needs_scratch(wl.act1):
        add("act_tmp", "UB", (th, tw, C0), "float32", 1, "activation scratch", in_tir=False)
    add("sync_ub", "UB", (soc.vector_cores * 8,), "int32", 1,
        "SyncAll's per-core UB workspace (cores x 32 B)", in_tir=False)
    # phase 2: the GEMM tile, K streamed in kb blocks
    if keep_a:
        add("a_res", "L1", (c1, bm, C0), dt, keep_a, "A panel: all C1 channel blocks of bm pixels from the workspace "
            "(NZ), kept across the core's tiles of one M tile", in_tir=False)
    else:
        add("a_l1", "L1", (kb, bm, C0), dt, copies, "A block: kb channel blocks of bm pixels from the workspace (NZ)",
            in_tir=False)
    if resident:
        add("b_res", "L1", (c1 * C0, cob * C0), dt, 1,
            "the core's N tile of PW weights (all of K x cob blocks), loaded during phase 1", in_tir=False)
    else:
        add("b_l1", "L1", (kb * C0, cob * C0), dt, copies, "B block: kb x cob blocks of PW weights", in_tir=False)
    add("a_l0a", "L0A", (kb, bm, C0), dt, copies, "cube A operand", in_tir=False)
    add("b_l0b", "L0B", (kb * C0, cob * C0), dt, copies, "cube B operand", in_tir=False)
    add("pw_acc", "L0C", (cob, bm, C0), "float32", copies, "GEMM accumulator of one (M, N) tile", in_tir=False)
    if bias_in_cube(wl, soc):   # the bias GEMM's operands, where they fit
        for spec in bias_gemm_buffers(wl, soc, cob, db, None, "tile", rows):
            add(*spec, in_tir=False)
    if fix:
        add("b_pw_l1", "L1", (co1, C0), "float32", 1, "folded BN2 bias (bias-table source)", in_tir=False)
        add("bias_bt", "BT", (cob, C0), "float32", 1, "the tile's bias in the bias table", in_tir=False)
    else:   # the vector epilogue (310P: same core after L0C -> UB; 910B: phase 3 on the AIVs)
        add("b_pw", "UB", (co1, C0), "float32", 1, "folded BN2 bias, resident", in_tir=False)
        if epi_post16(wl, soc):
            add("b_pw16", "UB", (co1, C0), dt, 1, "folded BN2 bias in the storage dtype", in_tir=False)
        else:
            add("y_acc", "UB", (cob, bm, C0), "float32", 1,
                "one tile's accumulator landed from L0C (310P) / widened pre-activation (910B)", in_tir=False)
        if not soc.coupled:
            add("pre_tile", "UB", (cob, bm, C0), dt, copies, "pre-activation read back from the workspace",
                in_tir=False)
        if needs_scratch(wl.act2):
            add("act2_tmp", "UB", (bm, C0), "float32", 1, "activation scratch", in_tir=False)
        if wl.residual:
            add("res_tile", "UB", (cob, bm, C0), dt, copies, "residual input tile", in_tir=False)
        add("y_tile", "UB", (cob, bm, C0), dt, copies, "output tile", in_tir=False)
    if res_in_cube(wl, soc):   # the residual's identity B: made by AIV 0, read by every AIC
        add("eye_ub", "UB", (C0, C0), dt, 1, "identity fractal made for the workspace (AIV 0)", in_tir=False)
        add("eye_l1", "L1", (C0, C0), dt, 1, "identity fractal from the workspace", in_tir=False)
        add("eye_l0b", "L0B", (C0, C0), dt, 1, "identity fractal: B of the residual's K blocks", in_tir=False)
    return out + se_buffer_specs(wl, soc, th, tw, cib, db, vec_cores)   # squeeze-and-excitation, if any


def workspace_bytes(wl: DwSepWorkload, soc: SocSpec) -> dict[str, int]:
    """GM workspaces of the kernel: the DW result (A operand), the 910B pre-activation without a
    Fixpipe epilogue, SyncAll's flags (cores x 32 B, zeroed by the host) and (res_in_cube) the
    identity fractal behind them."""
    frac = soc.cube_fractal[0]
    m_al = ceil_div(gemm_m(wl), frac) * frac
    b = itemsize(wl.dtype)
    cores = soc.vector_cores + (0 if soc.coupled else soc.cube_cores)
    return {"dw_ws": wl.c1 * m_al * C0 * b,
            "pre_ws": 0 if (soc.coupled or fixpipe(wl, soc)) else wl.co1 * m_al * C0 * b,
            "sync_ws": cores * 32, **({"se_ws": se_ws_bytes(wl)} if wl.se else {}),
            **({"eye_ws": EYE_BYTES} if res_in_cube(wl, soc) else {})}



def l2_resident(wl: DwSepWorkload, soc: SocSpec) -> bool:
    """The workspaces stay in L2 between the phases (the schedules/l2.py write rule)."""

    ws = workspace_bytes(wl, soc)
    return write_hit(soc, ws["dw_ws"] + ws["pre_ws"]) >= 1.0


__all__ = ["a_keep", "panel_starts", "ENGINE", "EPI_LAG", "EYE_BYTES", "res_in_cube", "GROUPED_ACTS", "VARIANT", "b_resident", "twophase_buffer_specs", "gemm_cap", "phase2_cores", "dw_grouped", "dw_wide_ok",
           "fixpipe", "gemm_m", "gemm_rows", "l2_resident",
           "workspace_bytes", "gemm_k", "tap_row_fit"]
