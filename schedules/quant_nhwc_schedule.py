"""CPU schedules of the NHWC int8 kernels (schedules/quant_nhwc.py).

Output rows in at least PARALLEL_TILES tiles (in parallel when the kernel is large enough,
PARALLEL_MIN_US); under each output row:
  dense    the packed uint8 input rows, then the int32 accumulator of the row on vpdpbusd
           (a block of up to 8 pixels × 16 output channels per weight vector: the weights are
           loaded once per block, the accumulators stay in registers), then the requantization
           vectorised over output channels
  dw       the accumulator row, taps outside and 16 channels inside (vectorised)
  dwsep    the padded input rows, the DW accumulator row, requantized into the packed tile,
           then the dense accumulation (and a residual add in the requantization)
  gemm     the classifier row on vpdpbusd; pool and plain GEMM: LLVM's loops
"""

from __future__ import annotations

from tvm import s_tir

from schedules.quant_vnni import VNNI_INTRIN

PARALLEL_TILES = 4   # row tiles per kernel at least (2 threads, and some balance)
PIXEL_BLOCK = 8      # output pixels per weight vector load in the dense accumulation


def _ext(sch, loop) -> int:
    return int(sch.get(loop).extent.value)


def _divisor(n: int, most: int) -> int:
    return max(d for d in range(1, max(1, most) + 1) if n % d == 0)


def _has(sch, name: str) -> bool:
    try:
        sch.get_sblock(name)
        return True
    except Exception:  # noqa: BLE001 - no such block
        return False


# One thread's rates on this project's 2-core EPYC (tests' kernels, /tmp kernel timings of the
# MobileNetV2 layers, 1 thread): the VNNI accumulation ~250 MAC/ns·1e-3 (b2_exp 19.3 M MAC in
# 73 us, b8_exp 4.8 M in 13 us), the depthwise taps ~40 (b3_dw: 4 M DW + 10.8 M PW MAC, 134 us).
VNNI_MAC_PER_US, DW_MAC_PER_US = 250e3, 40e3
# A kernel runs its row tiles in parallel only when one thread would take this long: a pool
# launch waits for its slowest task, and a woken worker on this shared 2-core VM (load 13-17,
# `nice`d runs) waits for a core, so the launches cost more than the second core gains.
# Interleaved MobileNetV2 int8 at TVM_NUM_THREADS=2, load 14 (p50 / min ms): every kernel in
# parallel 7.95 / 2.33, those >= 60 us 7.48 / 2.26, none 6.17 / 2.29, ORT (2 threads) 7.33 / 2.46.
# MobileNetV1 int8 with its 3 largest blocks (~300 us) in parallel: p50 11.4 ms vs ORT 3.0 ms
# (benchmarks/int8_cpu.py, load 14). At 1 ms the MobileNets' kernels (at most ~300 us) run on one
# thread; larger layers (bigger inputs, batches) use both.
PARALLEL_MIN_US = 1000.0


def _iter_volume(sch, name: str) -> int:
    if not _has(sch, name):
        return 0
    total = 1
    for iv in sch.get(sch.get_sblock(name)).iter_vars:
        total *= int(iv.dom.extent)
    return total


def estimated_us(sch) -> float:
    """One thread's time for the kernel's accumulations (the rates above)."""
    return _iter_volume(sch, "pw_vacc") / VNNI_MAC_PER_US + _iter_volume(sch, "dw_acc") / DW_MAC_PER_US


def _row_tiles(sch):
    """(row-tile loop in parallel, output-row loop, (pixel-block, channel-block) loops of the
    output when it is NHWC with whole 16-channel blocks, else None)."""
    nhwc = _has(sch, "y")
    y = sch.get_sblock("y" if nhwc else "yc")
    if nhwc:
        n, h, w, o = sch.get_loops(y)
    else:
        n, o, h, w = sch.get_loops(y)
        sch.reorder(n, h, w, o)
    th = _divisor(_ext(sch, h), -(-_ext(sch, h) // PARALLEL_TILES))   # whole tiles: no predicate
    ho, hi = sch.split(h, [None, th])
    tile = sch.fuse(n, ho)
    if estimated_us(sch) >= PARALLEL_MIN_US:
        sch.parallel(tile)
    blocks = None
    if nhwc and _ext(sch, o) % 16 == 0:
        ob, oi = sch.split(o, [None, 16])
        if _has(sch, "pw_vacc"):   # the requantization right after each accumulator block
            wo, wi = sch.split(w, [None, _divisor(_ext(sch, w), PIXEL_BLOCK)])
            sch.reorder(wo, ob, wi, oi)
            sch.unroll(wi)
            blocks = ob
        sch.vectorize(oi)
    elif nhwc and _ext(sch, o) % 8 == 0:   # 8 lanes stay inside one 16-channel accumulator block
        sch.vectorize(sch.split(o, [None, 8])[1])
    return tile, hi, blocks


def _dense_row(sch, hi, block=None):
    """The VNNI accumulator under `block` (one block of pixels × 16 output channels, requantized
    next) or else under the output row hi; returns the loop to tensorize."""
    acc = sch.get_sblock("pw_vacc")
    if block is not None:
        sch.compute_at(acc, block, preserve_unit_loops=True)
        _, zi, _, oi, ry, rx, k4, ki = sch.get_loops(acc)[-8:]
        sch.reorder(ry, rx, k4, zi, oi, ki)
    else:
        sch.compute_at(acc, hi, preserve_unit_loops=True)
        _, z, ob, oi, ry, rx, k4, ki = sch.get_loops(acc)[-8:]
        zo, zi = sch.split(z, [None, _divisor(_ext(sch, z), PIXEL_BLOCK)])
        sch.reorder(zo, ob, ry, rx, k4, zi, oi, ki)
    init = sch.decompose_reduction(acc, ry)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.unroll(zi)
    return oi


def _vec16(sch, loop) -> None:
    """16 lanes (measured: the whole channel row as one vector is slower)."""
    if _ext(sch, loop) % 16 == 0:
        sch.vectorize(sch.split(loop, [None, 16])[1])


def _dw_row(sch, hi) -> None:
    acc = sch.get_sblock("dw_acc")
    sch.compute_at(acc, hi, preserve_unit_loops=True)
    pad = sch.get_sblock("dw_pad")
    sch.compute_at(pad, hi, preserve_unit_loops=True)
    # (the padded rows stay LLVM's to vectorise: an explicit vector if_then_else is scalarised)
    _, z, c, ry, rx = sch.get_loops(acc)[-5:]
    if _ext(sch, c) % 16 == 0 and _ext(sch, c) > 16:
        co, ci = sch.split(c, [None, 16])
        sch.reorder(z, co, ry, rx, ci)
    else:
        ci = c
        sch.reorder(z, ry, rx, c)
    sch.vectorize(ci)
    sch.decompose_reduction(acc, ry)


def _pack_row(sch, hi) -> None:
    pack = sch.get_sblock("pw_pack")
    sch.compute_at(pack, hi, preserve_unit_loops=True)


EW_PARALLEL_MIN = 1 << 20   # elements: below, one thread (a pool launch costs more than the work:
                            # QAdd 56x56x24 (75k) takes 10 us on one thread, the 224x224x3 input
                            # quantize 30 us; see PARALLEL_MIN_US for what a launch costs here)


def _elementwise(sch) -> None:
    """Outer loops fused, in parallel only when the kernel is large; the row vectorised by LLVM."""
    y = sch.get_sblock("y")
    loops = sch.get_loops(y)
    total = 1
    for lp in loops:
        total *= _ext(sch, lp)
    if len(loops) >= 2 and total >= EW_PARALLEL_MIN:
        sch.parallel(sch.fuse(*loops[:-1]))


def _gemm(sch) -> None:
    """One thread (a classifier row: N × O outputs); the accumulator of a row, then its
    requantization, 8 lanes at a time."""
    y = sch.get_sblock("y")
    i, o = sch.get_loops(y)
    acc = sch.get_sblock("pw_vacc")
    sch.compute_at(acc, i, preserve_unit_loops=True)
    _, _, ob, oi, ry, rx, k4, ki = sch.get_loops(acc)[-8:]
    sch.reorder(ob, ry, rx, k4, oi, ki)
    init = sch.decompose_reduction(acc, ry)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.compute_at(sch.get_sblock("pw_pack"), i, preserve_unit_loops=True)
    if _ext(sch, o) % 8 == 0:
        sch.vectorize(sch.split(o, [None, 8])[1])
    sch.tensorize(oi, VNNI_INTRIN)


def schedule_nhwc(sch: s_tir.Schedule, kind: str):
    if kind in ("quant_nhwc_gemm", "quant_nhwc_pool"):   # the plain GEMM, the pool: LLVM's loops
        return sch.mod
    if kind == "quant_nhwc_gemm_vnni":
        _gemm(sch)
        return sch.mod
    if kind == "quant_nhwc_ew":
        _elementwise(sch)
        return sch.mod
    tile, hi, block = _row_tiles(sch)
    if kind == "quant_nhwc_dw_vnni":
        _dw_row(sch, hi)
        return sch.mod
    oi = _dense_row(sch, hi, block)
    if kind == "quant_nhwc_direct_vnni":     # a plain uint8 copy: the accumulation reads the input
        sch.compute_inline(sch.get_sblock("pw_pack"))
    else:
        _pack_row(sch, hi)
    if kind == "quant_nhwc_dwsep_vnni":
        _dw_row(sch, hi)
        _vec16(sch, sch.get_loops(sch.get_sblock("pw_pack"))[-1])
    elif kind not in ("quant_nhwc_dense_vnni", "quant_nhwc_direct_vnni"):
        raise ValueError(kind)
    sch.tensorize(oi, VNNI_INTRIN)   # last: the tensorized block replaces the accumulator
    return sch.mod
