"""Cost model of the fused int8 DW->PW kernel (schedules/quant_plan.py). Every figure is MODELED.

The lowered program's stages are timed with the same primitives as the float kernels (dma_us,
VecWork.cycles, move_rate, the int8 cube fractal of soc.py) and replayed through the in-order
pipes of fusion/cost/pipes.simulate (TQue rings: ping/pong when double-buffered).

  310P (coupled)  one core runs a tile's DW, its UB -> L1 -> L0A move, every co-step's mmad and
                  epilogue; tiles go round-robin to the AI cores.
  910B (MIX)      three phases, a SyncAll (soc.sync_all_cycles) after each of the first two: the
                  AIVs' DW halves; AIC k's GEMMs of the tiles of AIVs k*r .. k*r + r - 1 (r =
                  AIV:AIC); every AIV's epilogues (each phase starts when the slowest core of the
                  one before it is done).

L2: the block's input was written by the kernel before it and is read from L2 when it fits
(schedules/l2.produced_in_l2, the rule of the vendor-like kernels too); weights are read from HBM
once and re-read from L2; the hand-off lives in L2; the output write is absorbed by L2 when it
fits (write_hit). Kernel time = launch(cores launched) + max(busiest core, HBM bytes / HBM bw).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from fusion.core.soc import SocSpec, cube_side, move_rate
from fusion.cost.pipes import PipeStep, Stage, simulate
from fusion.cost.primitives import MODELED, PIPES, cycles_to_us, dma_us
from fusion.cost.vendor_baseline import launch_us
from schedules.l2 import produced_in_l2, write_hit
from schedules.quant_plan import Int8Plan, Int8Workload, int8_candidates
from schedules.quant_program import I8Stage, core_program, cube_tiles, program_counts, tile_key, vector_tiles


@dataclass(frozen=True)
class Int8Cost:
    name: str
    plan: Int8Plan
    time_us: float
    launch_us: float
    busiest_us: float
    hbm_floor_us: float
    per_pipe_us: dict            # busy µs per pipe of the busiest vector core (and its AIC on 910B)
    counts: dict                 # program totals over every core (see program_counts)
    hbm_bytes: int
    cores_launched: int
    figures: str = MODELED
    notes: tuple[str, ...] = field(default=())

    @property
    def body_us(self) -> float:
        return self.time_us - self.launch_us


class _Timer:
    """Stage -> µs under one plan's L2 hit fractions."""

    def __init__(self, plan: Int8Plan):
        soc, wl, c = plan.soc, plan.wl, program_counts(plan)
        self.soc, self.plan = soc, plan
        dma = c["dma"]
        x_in_l2 = produced_in_l2(soc, wl.in_bytes, False)
        self.hit = {"input": 1.0 if x_in_l2 else max(0.0, 1.0 - wl.in_bytes / max(1, dma.get("input", 0))),
                    "weights": max(0.0, 1.0 - wl.weight_bytes / max(1, dma.get("weights", 0))),
                    "handoff": 1.0}
        self.out_hit = {"output": write_hit(soc, wl.out_bytes), "handoff": 1.0}
        self.hbm_bytes = (0 if x_in_l2 else wl.in_bytes) + wl.weight_bytes + (
            0 if self.out_hit["output"] >= 1.0 else wl.out_bytes)
        self.counts = c

    def us(self, st: I8Stage, cube_core: bool) -> float:
        soc = self.soc
        t = 0.0
        if st.dma:
            nbytes, bursts, direction, kind = st.dma
            side = cube_side(soc) if cube_core and direction == "in" else soc
            active = self.plan.cube_cores if cube_core else self.plan.cores
            hit = self.hit.get(kind, 0.0) if direction == "in" else self.out_hit.get(kind, 0.0)
            t += dma_us(side, nbytes, bursts, direction, active, hit)
        cyc = st.vec.cycles(soc) + st.fractals
        cyc += sum(b / move_rate(soc, path) for path, b in st.moves)
        return t + cycles_to_us(soc, cyc)

    def stage(self, st: I8Stage, cube_core: bool) -> Stage:
        return Stage(st.pipe, self.us(st, cube_core), st.label, st.buf, self.plan.copies)


def _steps(tm: "_Timer", prog, cube: bool, starts: dict | None = None) -> list[PipeStep]:
    """The steps as the pipe simulator's; starts: phase -> the time its SyncAll releases it."""
    return [PipeStep(st.index, [tm.stage(s, cube or s.pipe == "cube") for s in st.stages],
                     ready_at=(starts or {}).get(st.phase, 0.0))
            for st in prog]


def _shape_key(plan: Int8Plan, tiles) -> tuple:
    return tuple(tile_key(plan, t) for t in tiles)


def model_int8(plan: Int8Plan, name: str = "fused_int8") -> Int8Cost:
    """The fused int8 kernel of `plan`, MODELED: every core's program replayed through its pipes
    (cores whose tiles have the same shapes are replayed once)."""
    soc, db = plan.soc, plan.double_buffer
    tm = _Timer(plan)
    vt = vector_tiles(plan)
    notes = []
    if soc.coupled:
        runs, memo = {}, {}
        for k, tiles in vt.items():
            key = _shape_key(plan, tiles)
            if key not in memo:
                memo[key] = simulate(_steps(tm, core_program(plan, "core", k), False), db)
            runs[k] = memo[key]
        busiest = max(runs.values(), key=lambda r: r.end)
        per_pipe, end, launched = dict(busiest.busy), busiest.end, plan.cores
    else:
        sync = cycles_to_us(soc, soc.sync_all_cycles)
        progs = {k: core_program(plan, "aiv", k) for k in vt}
        memo = {}
        for k, tiles in vt.items():   # phase 0: the DW halves
            key = _shape_key(plan, tiles)
            if key not in memo:
                memo[key] = simulate(_steps(tm, [s for s in progs[k] if s.phase == 0], False), db)
        starts = {1: max(r.end for r in memo.values()) + sync}
        aic = {a: simulate(_steps(tm, core_program(plan, "aic", a, tiles), True, starts), db)
               for a, tiles in cube_tiles(plan).items()}
        starts[2] = max([r.end for r in aic.values()] + [starts[1]]) + sync
        aiv = {}
        for k, tiles in vt.items():   # phase 2: the epilogues, after the second SyncAll
            run = memo[_shape_key(plan, tiles)].copy()
            aiv[k] = simulate(_steps(tm, [s for s in progs[k] if s.phase == 2], False, starts), db, prev=run)
        notes.append("three phases (DW on the AIVs, GEMM on the AICs, requant on the AIVs) with a SyncAll "
                     "between each: the emitted MIX kernel's structure")
        end = max([r.end for r in aiv.values()] + [r.end for r in aic.values()])
        bv = max(aiv.values(), key=lambda r: r.end)
        bc = max(aic.values(), key=lambda r: r.end)
        per_pipe = {p: bv.busy[p] for p in PIPES}
        per_pipe["cube"] = bc.busy["cube"]
        per_pipe["AIC MTE2"], per_pipe["AIC MTE3 (Fixpipe)"] = bc.busy["MTE2"], bc.busy["MTE3"]
        launched = plan.cores + plan.cube_cores
    launch = launch_us(soc, launched)
    floor = tm.hbm_bytes / (soc.hbm_gbps * 1e3)
    return Int8Cost(name, plan, launch + max(end, floor), launch, end, floor, per_pipe, tm.counts,
                    tm.hbm_bytes, launched, notes=tuple(dict.fromkeys(notes)))


@lru_cache(maxsize=256)
def best_int8_plan(wl: Int8Workload, soc: SocSpec) -> tuple[Int8Plan, Int8Cost] | None:
    """The fastest plan that fits (modeled), or None when none fits."""
    best = None
    for p in int8_candidates(wl, soc):
        c = model_int8(p)
        if best is None or c.time_us < best[1].time_us:
            best = (p, c)
    return best
