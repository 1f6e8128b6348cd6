"""The lowered program of the fused int8 DW->PW kernel (plan: schedules/quant_plan.py): per core,
its steps in issue order, each a tuple of stages with their counts. The cost model
(fusion/cost/int8.py) times these steps and `program_counts` folds them; nothing else counts.
Both SoCs' programs are the emitted kernels' (templates/int8_dwsep_310p.cpp, int8_dwsep_910b.cpp).

Cores: tiles go round-robin to the vector cores (AIVs on 910B, AI cores on 310P). 310P: one core
runs a tile's DW, then per co-step its mmad and epilogue. 910B: three phases with a SyncAll
between them (a step's `phase`): 0 the AIVs' DW and hand-off writes, 1 AIC k's GEMMs of the
tiles of AIVs k*r .. k*r + r - 1 (r = AIV:AIC) with the int32 Fixpipe writes, 2 every AIV's
epilogue of its own tiles (int32 in, requant, y out).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusion.core.ir import ceil_div
from schedules.isa import VecWork
from schedules.quant_plan import ACC, C0_I8, N0, Int8Plan, core_init_work, dw_int8_work, pw_epilogue_work


@dataclass(frozen=True)
class I8Stage:
    """One stage of a step: a DMA (bytes, bursts, dir, traffic kind), a vector op, a cube op
    (fractals) or an on-chip move (path, bytes)."""
    pipe: str                        # MTE2 | vector | cube | MTE3
    label: str
    buf: str | None = None
    dma: tuple[int, int, str, str] | None = None     # bytes, bursts, "in"|"out", kind
    vec: VecWork = VecWork()
    fractals: int = 0
    moves: tuple[tuple[str, int], ...] = ()          # (soc.move path, bytes)


@dataclass(frozen=True)
class I8Step:
    tile: int                      # the tile it belongs to (-1: the core's resident loads)
    stages: tuple[I8Stage, ...]
    phase: int = 0                 # 910B: the kernel phase (after `phase` SyncAlls)
    index: int = 0                 # position of the tile on its core (timeline cap)


def tile_rows(plan: Int8Plan, t: int) -> int:
    """Output rows of tile t (the last row of tiles of an image may be short)."""
    nh, nw = plan.tiles_hw
    return min(plan.th, plan.wl.out_h - ((t // nw) % nh) * plan.th)


def tile_cols(plan: Int8Plan, t: int) -> int:
    """Output columns of tile t (the last column of tiles may be narrow)."""
    nw = plan.tiles_hw[1]
    return min(plan.tw, plan.wl.out_w - (t % nw) * plan.tw)


def _read_extent(start: int, out: int, stride: int, k: int, pad: int, size: int) -> int:
    """Input rows (or columns) a tile of `out` outputs from output `start` reads from GM: its halo
    clipped to the image (the padding is made on chip)."""
    s0 = start * stride - pad
    return min(size, s0 + (out - 1) * stride + k) - max(0, s0)


def tile_key(plan: Int8Plan, t: int) -> tuple[int, int, int, int]:
    """What a tile's steps depend on: its output rows and columns and the input rows and columns
    it reads (tiles at the image border read fewer: their halo is padding)."""
    wl, nh, nw = plan.wl, *plan.tiles_hw
    rows, cols = tile_rows(plan, t), tile_cols(plan, t)
    return (rows, cols,
            _read_extent(((t // nw) % nh) * plan.th, rows, wl.stride[0], wl.kernel[0], wl.pads[0], wl.height),
            _read_extent((t % nw) * plan.tw, cols, wl.stride[1], wl.kernel[1], wl.pads[1], wl.width))


def dw_stages(plan: Int8Plan, t: int) -> tuple[I8Stage, ...]:
    """The DW half of tile t on its vector core: load, DW + requant of every channel block, and on
    910B the hand-off write."""
    wl, soc = plan.wl, plan.soc
    rows, cols, rr, rc = tile_key(plan, t)
    ih, iw = (rows - 1) * wl.stride[0] + wl.kernel[0], (cols - 1) * wl.stride[1] + wl.kernel[1]
    x = (wl.c1 * C0_I8 * rr * rc, wl.c1 * (rr if rc < wl.width else 1), "in", "input")
    work = dw_int8_work(soc, rows, cols, ih, iw, *wl.kernel, wl.stride[1], rr, rc) * wl.c1
    st = [I8Stage("MTE2", "x tile", "x", dma=x), I8Stage("vector", "dw int8 + requant", "dwq", vec=work)]
    if not soc.coupled:
        st.append(I8Stage("MTE3", "hand-off dw_q", dma=(wl.c1 * C0_I8 * rows * cols, wl.c1, "out", "handoff")))
    return tuple(st)


def _thw(plan: Int8Plan, t: int) -> tuple[int, int]:
    thw = tile_rows(plan, t) * tile_cols(plan, t)
    return thw, ceil_div(thw, N0) * N0


def a_stages(plan: Int8Plan, t: int) -> tuple[I8Stage, ...]:
    """Tile t's DW result into L1 (310P: UB -> L1; 910B: the hand-off read) and on into L0A."""
    wl, soc = plan.wl, plan.soc
    thw, thw_al = _thw(plan, t)
    a_bytes = wl.c1 * C0_I8 * thw_al
    if soc.coupled:
        st = [I8Stage("MTE3", "dw_q UB->L1", "a", moves=(("UB->L1", a_bytes),))]
    else:
        st = [I8Stage("MTE2", "hand-off read", "a", dma=(wl.c1 * C0_I8 * thw, wl.c1, "in", "handoff"))]
    st.append(I8Stage("cube", "L1->L0A", moves=(("L1->L0A", a_bytes),)))
    return tuple(st)


def co_stages(plan: Int8Plan, t: int, j: int) -> tuple[I8Stage, ...]:
    """Co-step j of tile t: [the weight block GM -> L1 when not resident], L1 -> L0B, mmad,
    epilogue (310P) or the int32 Fixpipe write (910B)."""
    wl, soc = plan.wl, plan.soc
    thw = _thw(plan, t)[0]
    cols = min(plan.cob, wl.n16 - j * plan.cob) * N0
    w_bytes = wl.c1 * C0_I8 * cols
    st = []
    if not plan.w_resident:
        st.append(I8Stage("MTE2", "w_pw block", "w", dma=(w_bytes, 1, "in", "weights")))
    moves = (("L1->L0B", w_bytes),)   # both kernels load L0B every co-step
    fr = ceil_div(thw, soc.cube_int8_fractal[0]) * wl.c1 * ceil_div(cols, soc.cube_int8_fractal[2])
    st.append(I8Stage("cube", "mmad int8", "c", fractals=fr, moves=moves))
    if not soc.coupled:   # 910B: L0C (int32, NZ) -> the GM workspace, the tile's thw rows
        st.append(I8Stage("MTE3", "Fixpipe int32 out", dma=(thw * cols * ACC, 1, "out", "handoff")))
        return tuple(st)
    st.extend(epi_stages(plan, t, j))
    return tuple(st)


def epi_stages(plan: Int8Plan, t: int, j: int) -> tuple[I8Stage, ...]:
    """The epilogue of co-step j of tile t (whole 32-channel output blocks: an even co-step, the y
    tile's layout). 310P: L0C -> UB on chip; 910B (phase 2, the AIV): the int32 tile from the
    workspace."""
    wl, soc = plan.wl, plan.soc
    thw, thw_al = _thw(plan, t)
    nb = min(plan.cob, wl.n16 - j * plan.cob)
    st = []
    if soc.coupled:
        moves = (("L0C->UB", thw_al * nb * N0 * ACC),)
    else:
        moves = ()
        st.append(I8Stage("MTE2", "int32 tile in", "c", dma=(thw * nb * N0 * ACC, nb, "in", "handoff")))
    st.append(I8Stage("vector", "requant", "y", vec=pw_epilogue_work(soc, thw, thw_al, nb), moves=moves))
    st.append(I8Stage("MTE3", "y out", dma=(thw * ceil_div(nb, 2) * C0_I8, 1, "out", "output")))
    return tuple(st)


def resident_stages(plan: Int8Plan, side: str) -> tuple[I8Stage, ...]:
    """Per core with tiles, once: the DW weights, biases and scales, the PW bias and scales and the
    y tile's zeroing (vector side); the PW weights when resident (cube side)."""
    wl, kb = plan.wl, plan.wl.c1 * C0_I8
    st = []
    if side in ("core", "aiv"):
        k = wl.kernel[0] * wl.kernel[1] * (2 if wl.stride[1] == 1 else 1)   # stride 1: each tap twice
        st.append(I8Stage("MTE2", "w_dw b_dw mult", dma=(kb * k * ACC + 2 * kb * ACC, 2, "in", "weights")))
        st.append(I8Stage("MTE2", "b_pw mult", dma=(wl.n16 * N0 * 2 * ACC, 2, "in", "weights")))
        st.append(I8Stage("vector", "zero rows, y tile", vec=core_init_work(plan.soc, plan)))
    if side in ("core", "aic") and plan.w_resident:
        st.append(I8Stage("MTE2", "w_pw resident", dma=(kb * wl.n16 * N0, 1, "in", "weights")))
    return tuple(st)


def vector_tiles(plan: Int8Plan) -> dict[int, list[int]]:
    """Vector core -> its tiles (round-robin)."""
    return {k: list(range(k, plan.tiles, plan.cores)) for k in range(plan.cores)}


def cube_tiles(plan: Int8Plan, order=None) -> dict[int, list[int]]:
    """910B AIC -> the tiles of its AIVs, in `order` (a key) or by tile index."""
    ratio = max(1, plan.soc.vector_cores // plan.soc.cube_cores)
    vt = vector_tiles(plan)
    return {a: sorted((t for k in range(a * ratio, min(plan.cores, (a + 1) * ratio)) for t in vt[k]), key=order)
            for a in range(plan.cube_cores)}


def _cube_side(plan: Int8Plan, tiles: list[int], phase: int) -> list[I8Step]:
    """A cube core's PW steps over `tiles`, tile-outer: A into L0A, then every co-step."""
    steps = []
    for i, t in enumerate(tiles):
        steps.append(I8Step(t, a_stages(plan, t), phase, i))
        steps += [I8Step(t, co_stages(plan, t, j), phase, i) for j in range(plan.co_steps)]
    return steps


def core_program(plan: Int8Plan, side: str, core: int, tiles: list[int] | None = None) -> list[I8Step]:
    """The steps of one core in issue order. side: "core" (310P AI core), "aiv", "aic" (910B)."""
    if side == "aic":
        mine = tiles if tiles is not None else cube_tiles(plan)[core]
        # its resident PW weights load while the AIVs run phase 0
        return ([I8Step(-1, resident_stages(plan, side))] if mine else []) + _cube_side(plan, mine, 1)
    mine = vector_tiles(plan).get(core, [])
    steps = [I8Step(-1, resident_stages(plan, side))] if mine else []
    if side == "aiv":
        return (steps + [I8Step(t, dw_stages(plan, t), 0, i) for i, t in enumerate(mine)]
                + [I8Step(t, epi_stages(plan, t, j), 2, i) for i, t in enumerate(mine) for j in range(plan.co_steps)])
    for i, t in enumerate(mine):
        steps.append(I8Step(t, dw_stages(plan, t), index=i))
        steps += [I8Step(t, s.stages, index=i) for s in _cube_side(plan, [t], 0)]
    return steps


def program_counts(plan: Int8Plan) -> dict:
    """What the program issues over all cores: DMA bytes per traffic kind and per direction
    (gm_in / gm_out: the emulator's GM read / write bytes), vector instructions and repeats, cube
    fractals, on-chip move bytes per path."""
    c = {"dma": {}, "gm_in": 0, "gm_out": 0, "vector_instrs": 0, "vector_repeats": 0, "fractals": 0, "moves": {}}
    sides = [("core", k) for k in range(plan.cores)] if plan.soc.coupled else (
        [("aiv", k) for k in range(plan.cores)] + [("aic", a) for a in range(plan.cube_cores)])
    vt, ct = vector_tiles(plan), ({} if plan.soc.coupled else cube_tiles(plan))
    times: dict[tuple, list] = {}     # cores whose tiles have the same shapes issue the same counts
    for side, k in sides:
        key = (side, tuple(tile_key(plan, t) for t in (ct[k] if side == "aic" else vt[k])))
        times.setdefault(key, [side, k, 0])[2] += 1
    for side, k, n in times.values():
        for step in core_program(plan, side, k):
            for st in step.stages:
                if st.dma:
                    c["dma"][st.dma[3]] = c["dma"].get(st.dma[3], 0) + st.dma[0] * n
                    c["gm_in" if st.dma[2] == "in" else "gm_out"] += st.dma[0] * n
                c["vector_instrs"] += st.vec.instrs * n
                c["vector_repeats"] += st.vec.repeats * n
                c["fractals"] += st.fractals * n
                for path, b in st.moves:
                    c["moves"][path] = c["moves"].get(path, 0) + b * n
    return c
