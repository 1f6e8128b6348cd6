"""The vendor-like baseline kernels as lowered programs of the fused kernels' step types
(schedules/steps.py: Copy, VectorOp, Move, CubeOp), so one simulator (fusion/cost/baseline.py over
fusion/cost/pipes.py) times both sides of every fused-vs-unfused comparison, and the emitted
baseline kernels (fusion/codegen/ascendc/emit_baseline.py) walk the same programs.

A program is, per class of cores that run the same sequence, a list of runs (unit, times): a unit
is a tuple of iterations (each a tuple of steps, one simulated step), repeated `times` in a row.

  gemm   C[m, n] = A[m, k] · B[k, n] on the cube, tiled as the vendor's matmul does: the output is
         split over mp × np cores; a core walks its sm × sn part in equal base blocks (up to
         128 × 256 for 16-bit operands, one L0C) and each block's K in steps of BASE_K · STEP_K:
         per K step the A and B slices GM -> L1 (unless that operand's panel is resident in L1),
         then per base-K step L1 -> L0A / L0B and the Mmad (two L0 buffers: MTE1 beside the cube); after the last K step the epilogue: Fixpipe out of L0C (910B;
         bias and relu on the fly, other activations and a residual then cost a vector pass of
         the AIV on the block) or L0C -> UB, bias / act / residual / cast on the vector unit and
         UB -> GM (310P). A convolution's A is its feature map (load3d expands the taps on chip):
         its unique bytes are read once per pass, spread over the K steps.
  dw     depthwise: 910B on the vector unit (per output row and tap one MulAddDst at the storage
         dtype, then bias and act -- the vendor's UB-fused DepthwiseConv2D + activation);
         310P on the cube (the inference products run DepthwiseConv2D as a Cube node: CANN's
         graph UB-fusion reference, TbeDepthwiseConvElemwiseFusionPass, CANN 7.0 edition
         hiascend.com/document/detail/zh/canncommercial/700/reference/graphubfusionref/
         atlasrr_30_0119.html: "Transdata + Cube + AscendDequant/... + Elemwise + Transdata",
         DepthwiseConvolution only DepthwiseConv2D, not supported on Atlas A2 training / 800I A2;
         the 9.0 edition, atlasrr_30_0217, lists Atlas inference and training products only):
         per 16-channel block and tap a 16 × 16 diagonal weight fractal,
         A = the tap's window (load3d), the accumulator leaves L0C through UB for bias and act.
  vector pooling, element-wise, TransData: rows through UB, a fixed number of ops per element.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusion.core.ir import C0, c0_of
from fusion.core.soc import SocSpec
from schedules.isa import ACC_BYTES, ACT_OPS, VecWork, count_form, cube_fractals, itemsize, vec_op
from schedules.quant_plan import l0c_requant_work
from schedules.steps import L0_RING, Copy, CubeOp, Move, StageSpec, VectorOp
from schedules.workload import ceil_div

BASE_M, BASE_N, BASE_K = 128, 256, 64   # the vendor's recommended 16-bit base block
L0_COPIES = 2                           # the vendor-like GEMM's L0A / L0B are double-buffered (ping/pong)
STEP_K = 4                              # base-K steps one MTE2 instruction brings into L1


@dataclass(frozen=True)
class CoreSeq:
    """`cores` cores that run the same sequence: runs of (unit, times), a unit a tuple of
    iterations, an iteration a tuple of steps."""
    cores: int
    runs: tuple

    @property
    def iterations(self) -> int:
        return sum(len(u) * t for u, t in self.runs)


@dataclass(frozen=True)
class BaselineProgram:
    name: str
    kind: str                       # conv | gemm | dwconv | pool | eltwise | transdata
    members: tuple[str, ...]
    dtype: str
    engine: str                     # cube | vector
    side: str                       # aic (the cube's MTE2 bandwidth) | aiv
    seqs: tuple[CoreSeq, ...]
    hbm_in_bytes: float             # unique bytes the kernel reads from HBM (the rest: L2 hits)
    out_bytes: float                # bytes the kernel writes
    split: tuple[int, int] = (1, 1)
    tile: str = ""
    l0c_slots: int = 2              # base blocks L0C holds (the next block's Mmad waits for a free one)

    @property
    def cores(self) -> int:
        return sum(s.cores for s in self.seqs)

    @property
    def pipeline(self) -> tuple[StageSpec, ...]:
        """How every iteration runs on the pipes (fusion/cost/steps.stages_of): the input and the
        L0A / L0B operands double-buffered (ping/pong), L0C as many base blocks as it holds, filled
        by the Mmads and read out by the iteration that writes the block out, the output
        double-buffered."""
        return (StageSpec("MTE2", "in", "in", 2), StageSpec("MTE1", "load", L0_RING, L0_COPIES),
                StageSpec("cube", "mmad", "l0c", self.l0c_slots, when_out=True),
                StageSpec("vector", "vec", "out", 2, when_out=True), StageSpec("MTE3", "out", None, 2))

    def steps(self):
        """Every step of every core, with how many times it runs (for counts)."""
        for s in self.seqs:
            for unit, times in s.runs:
                for it in unit:
                    for st in it:
                        yield st, s.cores * times


def _runs(units) -> tuple:
    """Consecutive equal units as (unit, times)."""
    out: list = []
    for u in units:
        if out and out[-1][0] == u:
            out[-1][1] += 1
        else:
            out.append([u, 1])
    return tuple((u, t) for u, t in out)


def _classes(sizes) -> tuple[tuple[int, int], ...]:
    """(size, cores) of equal per-core sizes."""
    out: dict[int, int] = {}
    for s in sizes:
        if s > 0:
            out[s] = out.get(s, 0) + 1
    return tuple(out.items())


def _parts(total: int, parts: int, align: int = 1) -> list[int]:
    """`total` split in `parts` contiguous pieces of ceil size (aligned), the last ragged."""
    size = ceil_div(ceil_div(total, parts), align) * align
    return [max(0, min(size, total - i * size)) for i in range(parts)]


def _vw(op: str, buffer: str, elements: int, w: VecWork) -> VectorOp:
    return VectorOp(op, buffer, elements, w.instrs, w.repeats)


# --- GEMM / convolution on the cube -------------------------------------------------------------
def gemm_splits(soc: SocSpec, m: int, n: int, max_cores: int | None = None) -> list[tuple[int, int]]:
    """Core splits (mp, np) of the m × n output the vendor's tiling search weighs: those using at
    least half of the cores the output allows, and of them the ones no other split beats on every
    per-core extent (rows, columns, rows × columns)."""
    max_cores = max_cores or soc.cube_cores
    n16 = ceil_div(n, C0) * C0
    cands = {}
    for mp in range(1, min(max_cores, ceil_div(m, C0)) + 1):
        for np_ in range(1, min(max_cores // mp, ceil_div(n16, C0)) + 1):
            ms, ns = _parts(m, mp, C0), _parts(n16, np_, C0)
            used = len([p for p in ms if p]) * len([p for p in ns if p])
            cands[(mp, np_)] = (used, ms[0], ns[0])
    best = max(u for u, _, _ in cands.values())
    keep = {s: (sm, sn, sm * sn) for s, (u, sm, sn) in cands.items() if 2 * u >= best}
    front = [s for s, v in keep.items()
             if not any(w != v and all(a <= b for a, b in zip(w, v)) for w in keep.values())]
    return sorted({keep[s]: s for s in front}.values())


def _gemm_core(soc, dtype, sm, sn, k16, a_row_bytes, a_fmap, act, residual, l1_resident) -> tuple:
    """The runs of one core computing an sm × sn part (see the module doc)."""
    e = itemsize(dtype)
    bm, bn = ceil_div(sm, BASE_M), ceil_div(sn, BASE_N)
    mb = ceil_div(ceil_div(sm, bm), C0) * C0
    nb = ceil_div(ceil_div(sn, bn), C0) * C0
    ks = [min(BASE_K * STEP_K, k16 - i) for i in range(0, k16, BASE_K * STEP_K)]

    def block(rows: int, cols: int, load_a: bool, load_b: bool) -> tuple:
        its = []
        for q, kk in enumerate(ks):
            it = []
            if load_a:   # a feature map's rows are read once per pass: their share of this K step
                a_bytes = rows * a_row_bytes * kk // k16 if a_fmap else rows * kk * e
                it.append(Copy("input", "in", "a_l1", "x", int(a_bytes), kk // C0 if a_fmap else rows))
            if load_b:
                it.append(Copy("weights", "in", "b_l1", "w", kk * cols * e, ceil_div(cols, C0)))
            for k_sub in range(0, kk, BASE_K):   # L0 in base-K steps, two buffers (templates/baseline_gemm.cpp)
                kq = min(BASE_K, kk - k_sub)
                it.append(Move("L1->L0A", "a_l1", "a_l0a", ceil_div(rows, C0) * C0 * kq * e))
                it.append(Move("L1->L0B", "b_l1", "b_l0b", kq * cols * e))
                # K in the dtype's DataBlocks (32 int8 -- a 16x32x16 fractal -- or 16 fp16)
                it.append(CubeOp(cube_fractals(soc, rows, kq // c0_of(dtype), cols // C0), "a_l0a", "b_l0b", "c_l0c"))
            if q == len(ks) - 1:
                it += _gemm_epilogue(soc, dtype, rows, cols, act, residual)
            its.append(tuple(it))
        return tuple(its)

    rows_of = [min(mb, sm - i * mb) for i in range(bm)]
    cols_of = [min(nb, sn - j * nb) for j in range(bn)]
    units = []
    # the other operand's slices of a block stay across the walk when they fit beside the panel
    keep = (l1_resident == "b" and sn * k16 * e + mb * k16 * e <= soc.l1_bytes
            or l1_resident == "a" and sm * k16 * e + nb * k16 * e <= soc.l1_bytes)
    if l1_resident == "b":       # B's panel stays in L1: loaded with the first row of blocks
        for i, r in enumerate(rows_of):
            units.append(tuple(it for j, c in enumerate(cols_of) for it in block(r, c, j == 0 or not keep, i == 0)))
    elif l1_resident == "a":     # A's panel stays: column by column, B once per column
        for j, c in enumerate(cols_of):
            units.append(tuple(it for i, r in enumerate(rows_of) for it in block(r, c, j == 0, i == 0 or not keep)))
    else:                        # both streamed per block
        for r in rows_of:
            for c in cols_of:
                units.append(block(r, c, True, True))
    return _runs(units), (bm, bn, mb, nb)


def _gemm_epilogue(soc, dtype, rows, cols, act, residual) -> list:
    """templates/baseline_gemm.cpp's Epilogue: Fixpipe (910B) or L0C -> UB of whole fractals,
    [+ residual], act, UB -> GM (310P)."""
    e = itemsize(dtype)
    n = rows * cols
    n16 = ceil_div(rows, C0) * C0 * cols
    out: list = []
    if residual:
        out.append(Copy("residual", "in", "res_ub", "res", n * e, ceil_div(cols, C0)))
    fix = not soc.coupled
    ops = (0 if act == "none" or (fix and act in soc.fixpipe_acts) else ACT_OPS.get(act, 1)) + (1 if residual else 0)
    if not fix:   # 310P: the fp32 result leaves L0C through UB, converted to the storage dtype on
        # the way (the L0C -> UB move's conversion mode), then the activation and the residual
        out.append(Move("L0C->UB", "c_l0c", "y_ub", n16 * ACC_BYTES))
        if e == 1:    # int8: dequantized on the move, + zp and Cast -> int8 on the vector
            out.append(_vw("requant", "y_ub", n16, l0c_requant_work(soc, n16, False)))
        if ops:
            out.append(_vw("epilogue", "y_ub", n16, count_form(soc, n16, e, ops)))
    elif ops:     # 910B: what the Fixpipe cannot do, the AIV does on the block
        out.append(_vw("epilogue", "y_ub", n, count_form(soc, n, e, ops)))
    out.append(Copy("output", "out", "c_l0c" if fix else "y_ub", "y", n * e, ceil_div(cols, C0)))
    return out


def gemm_program(soc: SocSpec, name: str, m: int, k: int, n: int, dtype: str, split: tuple[int, int], *,
                 a_unique: float | None = None, a_fmap: bool = False, act: str = "none",
                 residual: bool = False, kind: str = "gemm", members: tuple[str, ...] = (),
                 a_in_l2: bool = False) -> BaselineProgram:
    """The vendor-like GEMM (or convolution, a_fmap) kernel on the cube with core split `split`."""
    e = itemsize(dtype)
    c0k = c0_of(dtype)   # K is blocked in the dtype's DataBlocks; N in 16-column fractals
    k16, n16 = ceil_div(k, c0k) * c0k, ceil_div(n, C0) * C0
    a_unique = float(m * k16 * e) if a_unique is None else float(a_unique)
    b_unique = float(k16 * n16 * e)
    # inputs larger than L2: the vendor's L2 tiling walks M in passes whose A slice and all of B
    # fit in half of L2, so B comes from HBM once per pass
    passes = max(1, ceil_div(int(a_unique + b_unique), soc.l2_bytes // 2))
    res_total = float(m * n16 * e) if residual else 0.0
    hbm_in = b_unique * passes if a_in_l2 else a_unique + b_unique * passes + res_total
    mp, np_ = split
    ms, ns = _parts(m, mp, C0), _parts(n16, np_, C0)
    a_row = a_unique / m                      # A bytes per output row (a feature map's share)
    seqs, slots = [], 2
    for sm, cm in _classes(ms):
        for sn, cn in _classes(ns):
            a_core = a_row * sm if a_fmap else float(sm * k16 * e)
            b_core = float(sn * k16 * e)
            half = soc.l1_bytes / 2
            res = "b" if b_core <= half else ("a" if a_core <= half else "")
            runs, (_bm, _bn, mb, nb) = _gemm_core(soc, dtype, sm, sn, k16, a_row, a_fmap, act, residual, res)
            seqs.append(CoreSeq(cm * cn, runs))
            slots = min(slots, 2 if 2 * mb * nb * ACC_BYTES <= soc.l0c_bytes else 1)
    seqs.sort(key=lambda s: -s.iterations)
    return BaselineProgram(name, kind, members, dtype, "cube", "aic", tuple(seqs), hbm_in,
                           float(m * n16 * e), (mp, np_), f"split {mp}x{np_}, base <= {BASE_M}x{BASE_N}", slots)


# --- depthwise ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DwShape:
    batch: int
    channels: int
    h: int
    w: int
    out_h: int
    out_w: int
    kh: int
    kw: int
    stride: int
    pad_top: int
    pad_left: int
    act: str
    dtype: str

    @property
    def c1(self) -> int:
        return ceil_div(self.channels, C0)


def dw_row_pixels(d: DwShape) -> int:
    """Output pixels a row's ops cover: whole repeats (8 fp16 / 4 fp32 pixels of 16 channels)."""
    per = 256 // (C0 * itemsize(d.dtype))
    return ceil_div(d.out_w, per) * per


def dw_window_width(d: DwShape) -> int:
    """Pixels of a UB window row: the padded input row, or what the last repeat's taps read."""
    return max(d.pad_left + d.w, (dw_row_pixels(d) - 1) * d.stride + d.kw)


def dw_column_form(d: DwShape, rows: int) -> bool:
    """Whether a tap's ops walk the rows (one op per group of a repeat's pixels, its repeats the
    rows) rather than the columns (one op per row): the form with fewer instructions, when the
    rows' pitches fit a repeat stride (255 DataBlocks)."""
    groups = dw_row_pixels(d) * C0 * itemsize(d.dtype) // 256
    return groups < rows <= 255 and dw_column_pitch_ok(d)


def dw_column_pitch_ok(d: DwShape) -> bool:
    """The input and output row pitches fit a repeat stride (255 DataBlocks of 32 B)."""
    blk = C0 * itemsize(d.dtype) // 32
    return dw_window_width(d) * d.stride * blk <= 255 and dw_row_pixels(d) * blk <= 255


def dw_rows_per_copy(soc: SocSpec, d: DwShape, on_cube: bool = False) -> int:
    """Output rows one iteration computes, at most the plane's: as many as fit UB double-buffered
    (vector form: input window with halo, taps, bias, output rows; cube form: the fp32
    accumulator, the output rows and the bias), and on the cube as many as two accumulators in
    L0C and two input windows with their taps in L1."""
    e = itemsize(d.dtype)
    for r in range(d.out_h, 0, -1):
        in_rows = (r - 1) * d.stride + d.kh
        px16 = ceil_div(r * d.out_w, C0) * C0
        if on_cube:   # (+ the bias in UB; the input rows and the taps in L1, double-buffered)
            need = 2 * (px16 * C0 * (ACC_BYTES + e) + dw_cube_bias_bytes())
            l1 = 2 * (in_rows * d.w * C0 * e + d.kh * d.kw * C0 * C0 * e)
            fits = (need <= soc.ub_usable_bytes and 2 * px16 * C0 * ACC_BYTES <= soc.l0c_bytes
                    and l1 <= soc.l1_bytes)
        else:
            need = 2 * (in_rows * dw_window_width(d) * C0 * e + r * dw_row_pixels(d) * C0 * e
                        + (d.kh * d.kw + 1) * C0 * ACC_BYTES)
            fits = need <= soc.ub_usable_bytes
        if fits:
            return r
    return 0


def dw_cube_rows(soc: SocSpec, d: DwShape) -> int:
    """Cube form: rows of the img2col matrix (output pixels) one load3d brings into L0A -- what one
    of its two buffers holds, whole 16-row fractals (the kernel's A2 queue is double-buffered, so
    the next chunk's load3d overlaps this chunk's Mmad); 0 where a tap set is too wide for that."""
    return (soc.l0a_bytes // 2 // (d.kh * d.kw * C0 * itemsize(d.dtype))) // C0 * C0


def dw_cube_bias_bytes() -> int:
    """Cube form: a channel block's fp32 bias as the kernel reads it, repeated over the 4 pixels of
    one 256 B vector repeat (prepared by the host, as the diagonal taps are), so one repeat-form
    Add covers the accumulator."""
    return (256 // (C0 * ACC_BYTES)) * C0 * ACC_BYTES


def dw_rows(soc: SocSpec, d: DwShape, on_cube: bool) -> int:
    """Output rows per iteration of the depthwise kernel: what fits UB (dw_rows_per_copy), fewer
    where that leaves cores without work; 0 where no row fits (or, cube form, no img2col chunk fits
    L0A)."""
    if on_cube and dw_cube_rows(soc, d) == 0:
        return 0
    cores = soc.cube_cores if on_cube else soc.vector_cores
    return min(dw_rows_per_copy(soc, d, on_cube), max(1, ceil_div(d.out_h, ceil_div(cores, d.batch * d.c1))))


def dw_window(d: DwShape, r0: int, rows: int) -> tuple[int, int, bool]:
    """Input rows [lo, hi) an iteration of output rows r0 .. r0+rows reads, and whether its UB
    window needs zero padding (rows or columns outside the image)."""
    top = r0 * d.stride - d.pad_top
    bot = (r0 + rows - 1) * d.stride - d.pad_top + d.kh
    lo, hi = max(0, top), min(d.h, bot)
    right = (d.out_w - 1) * d.stride - d.pad_left + d.kw
    pad = top < 0 or bot > d.h or d.pad_left > 0 or right > d.w
    return lo, hi, pad


def _dw_iteration(soc: SocSpec, d: DwShape, r0: int, rows: int, on_cube: bool) -> tuple:
    """One unit: (image, channel block, rows r0 .. r0+rows); the steps of
    fusion/codegen/ascendc/templates/baseline_dw.cpp (vector form) one for one."""
    e = itemsize(d.dtype)
    lo, hi, pad = dw_window(d, r0, rows)
    in_rows = (rows - 1) * d.stride + d.kh
    n = rows * d.out_w * C0
    taps = d.kh * d.kw
    it: list = []
    if pad and not on_cube:   # load3d pads on the fly; the vector form zero-fills its window
        win = in_rows * dw_window_width(d) * C0
        it.append(_vw("zero", "x_ub", win, count_form(soc, win, e)))
    it.append(Copy("input", "in", "x_l1" if on_cube else "x_ub", "x", (hi - lo) * d.w * C0 * e, hi - lo))
    # the channel block's taps (a diagonal 16 x 16 fractal each on the cube) and its bias
    w_bytes = taps * C0 * (C0 if on_cube else 1) * e
    it.append(Copy("weights", "in", "w_l1" if on_cube else "w_ub", "w", w_bytes, 1))
    it.append(Copy("weights", "in", "b_ub", "b", dw_cube_bias_bytes() if on_cube else C0 * e, 1))
    if on_cube:   # load3d of each tap's window in chunks of img2col rows, a diagonal 16 x 16
        # weight fractal per tap, the whole accumulator L0C -> UB (whole fractals)
        px, chunk = rows * d.out_w, dw_cube_rows(soc, d)
        it.append(Move("L1->L0B", "w_l1", "w_l0b", w_bytes))
        for m0 in range(0, px, chunk):
            m1 = ceil_div(min(chunk, px - m0), C0)
            it.append(Move("L1->L0A", "x_l1", "a_l0a", taps * m1 * C0 * C0 * e))
            it.append(CubeOp(taps * m1, "a_l0a", "w_l0b", "c_l0c"))
        it.append(Move("L0C->UB", "c_l0c", "acc_ub", ceil_div(px, C0) * C0 * C0 * ACC_BYTES))
        it.append(_vw("bias", "acc_ub", n, vec_op(soc, n, ACC_BYTES)))
        if ACT_OPS[d.act]:
            it.append(_vw("act", "acc_ub", n, count_form(soc, n, ACC_BYTES, ACT_OPS[d.act])))
        it.append(_vw("cast", "y_ub", n, vec_op(soc, n, ACC_BYTES)))
    else:         # per tap one Mul / MulAddDst per row or per column group, the bias Add likewise;
        # the act over the rows
        groups = dw_row_pixels(d) * C0 * e // 256          # repeats of a row
        op = (VecWork(groups, groups * rows) if dw_column_form(d, rows)
              else vec_op(soc, d.out_w * C0, e, rows=rows))
        it.append(_vw("dw_taps", "y_ub", n * taps, op * taps))
        it.append(_vw("bias", "y_ub", n, op))
        if ACT_OPS[d.act]:
            m = rows * dw_row_pixels(d) * C0
            it.append(_vw("act", "y_ub", m, count_form(soc, m, e, ACT_OPS[d.act])))
    it.append(Copy("output", "out", "y_ub", "y", n * e, rows))
    return tuple(it)


def dw_on_cube(soc: SocSpec, d: DwShape) -> bool:
    """Where the vendor runs DepthwiseConv2D: the cube on the coupled inference chips (310P), the
    vector unit on 910B (Atlas A2, where the Cube-node UB fusion of DepthwiseConv2D is not offered)
    -- and on the vector unit where one 16-row chunk of the taps' img2col does not fit half of L0A
    (more than 64 taps in fp16: 9 x 9 and up), which the cube form here does not split."""
    return soc.coupled and dw_cube_rows(soc, d) > 0


def dw_program(soc: SocSpec, name: str, d: DwShape, members: tuple[str, ...] = (),
               in_l2: bool = False, on_cube: bool | None = None) -> BaselineProgram:
    """The vendor-like depthwise kernel: units (image, channel block, group of output rows) in
    contiguous ranges over the cores; per unit one iteration (module doc)."""
    on_cube = dw_on_cube(soc, d) if on_cube is None else on_cube
    cores = soc.cube_cores if on_cube else soc.vector_cores
    rows = dw_rows(soc, d, on_cube)
    if rows == 0:
        raise ValueError(f"no row of the depthwise kernel {name} fits on chip (UB; cube form: L1, L0A, L0C)")
    groups = [(r0, min(rows, d.out_h - r0)) for r0 in range(0, d.out_h, rows)]
    units = d.batch * d.c1 * len(groups)
    per = _parts(units, min(cores, units))
    its = [_dw_iteration(soc, d, r0, r, on_cube) for r0, r in groups]
    seqs, start = {}, 0
    for p in per:
        if p <= 0:
            continue
        key = tuple(its[(start + i) % len(groups)] for i in range(p))
        seqs[key] = seqs.get(key, 0) + 1
        start += p
    e = itemsize(d.dtype)
    in_bytes = float(d.batch * d.c1 * C0 * d.h * d.w * e)
    w_bytes = float(d.c1 * (d.kh * d.kw * C0 * (C0 if on_cube else 1) * e + (dw_cube_bias_bytes() if on_cube else C0 * e)))
    out_bytes = float(d.batch * d.c1 * C0 * d.out_h * d.out_w * e)
    cs = sorted((CoreSeq(c, _runs((it,) for it in key)) for key, c in seqs.items()), key=lambda s: -s.iterations)
    return BaselineProgram(name, "dwconv", members, d.dtype, "cube" if on_cube else "vector",
                           "aic" if on_cube else "aiv", tuple(cs), w_bytes + (0.0 if in_l2 else in_bytes), out_bytes,
                           tile=f"{rows} rows x {d.out_w} cols per iteration")


# --- vector kernels: pooling, element-wise, TransData -------------------------------------------
def vector_rows_fit(soc: SocSpec, units: int, in_row_bytes: int, out_row_bytes: int, n_inputs: int = 1) -> int:
    """Rows per DMA that fit UB double-buffered, at most a core's share of the units."""
    share = ceil_div(units, max(1, min(soc.vector_cores, units)))
    return max(1, min(share, soc.ub_usable_bytes // (2 * (n_inputs * in_row_bytes + out_row_bytes))))


def vector_program(soc: SocSpec, name: str, kind: str, members, units: int, in_row_bytes: int,
                   out_row_bytes: int, row_elems: int, ops: int, dtype: str, n_inputs: int = 1,
                   in_l2: bool = False, rows: int | None = None, work=None) -> BaselineProgram:
    """`units` equal rows over the vector cores, contiguous ranges; `rows` rows per DMA (at most,
    and by default, as many as fit UB double-buffered: vector_rows_fit); per row group `ops`
    vector passes over its elements, or work(rows) (a VecWork: the int8 kernels' own counts)."""
    e = itemsize(dtype)
    used = max(1, min(soc.vector_cores, units))
    per = _parts(units, used)
    fit = vector_rows_fit(soc, units, in_row_bytes, out_row_bytes, n_inputs)
    step = max(1, min(fit, rows or fit))

    def it(r: int) -> tuple:
        steps = [Copy("input", "in", f"x{i}_ub", f"x{i}", r * in_row_bytes, r) for i in range(n_inputs)]
        steps.append(_vw(kind, "y_ub", r * row_elems,
                         work(r) if work is not None else vec_op(soc, r * row_elems, e) * max(1, ops)))
        steps.append(Copy("output", "out", "y_ub", "y", r * out_row_bytes, r))
        return tuple(steps)

    seqs: dict = {}
    for p in per:
        if p <= 0:
            continue
        full, rest = divmod(p, step)
        runs = (((it(step),), full),) if full else ()
        runs += (((it(rest),), 1),) if rest else ()
        seqs[runs] = seqs.get(runs, 0) + 1
    cs = sorted((CoreSeq(c, r) for r, c in seqs.items()), key=lambda s: -s.iterations)
    return BaselineProgram(name, kind, tuple(members), dtype, "vector", "aiv", tuple(cs),
                           0.0 if in_l2 else float(units * in_row_bytes * n_inputs),
                           float(units * out_row_bytes), tile=f"{step} rows per DMA")
