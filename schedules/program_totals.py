"""Totals of a fused plan's lowered program (schedules/program.py), per core and per kernel, cheap
enough for a sweep over tens of thousands of plans of one block.

KernelProgram.counts walks every tile of every core (milliseconds a plan). The plans of one tile space
share most of their loops, so here a plan's totals are sums of cached pieces of its program:

  * every loop that schedules.program.tile_loops builds for a role and a tile geometry is reduced
    once to a vector of sums (FIELDS: bytes and DMA transfers per direction and per traffic kind,
    vector instructions and repeats, cube fractals, on-chip move cycles), keyed by what its
    builder depends on (_keys: th, tw, cib or cob, PW engine);
  * the tiles of a program are counted per role by tile geometry, for all cores of the role and
    for its first core (the one with the most tiles), keyed by what build_program depends on
    (th, tw, cores, PW engine);
  * a core's prologue (schedules.program.resident_loads) is added once per core.

Nothing here describes the loop nest: the steps and their bytes / counts are the program's.
tests/schedules/test_traffic.py checks the totals against KernelProgram.counts and the cost model on sampled
plans of every variant (which also checks the cache keys).
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
from functools import lru_cache

import numpy as np

from fusion.core.soc import SocSpec
from schedules.plan import KernelPlan
from schedules.program import aic_iters, ci_iters, co_iters, epi_iters, resident_loads, tile_loops
from schedules.steps import F, FIELDS, KINDS, fold_steps
from schedules.workload import DwSepWorkload, TileConfig
from schedules.lowering import build_program


def _keys(tile: TileConfig) -> dict[str, tuple]:
    """The tile knobs each piece of a program depends on (with the workload and SoC): the tiles
    and their cores (build_program), the ci loop (ci_iters), the co loop (co_iters / aic_iters /
    epi_iters) and the prologue (resident_loads). Double buffering changes no count."""
    return {"layout": (tile.th, tile.tw, tile.cores, tile.pw_engine),
            "ci": (tile.th, tile.tw, tile.cib, tile.pw_engine),
            "co": (tile.th, tile.tw, tile.cob, tile.pw_engine)}


# the builder of each loop of a core of each role, as schedules.program.tile_loops calls them
# (tests/schedules/test_traffic.py checks that they give tile_loops' loops): a sweep rebuilds only the loop
# a plan changes (a new cib: the ci loop), not every loop of the tile
_BUILDERS = {("core", "ci"): ci_iters, ("core", "co"): co_iters, ("aiv", "ci"): ci_iters,
             ("aiv", "co"): epi_iters, ("aic", "co"): aic_iters}


class ProgramTotals:
    """The cached pieces of the programs of one (workload, SoC)."""

    def __init__(self, wl: DwSepWorkload, soc: SocSpec):
        self.wl, self.soc = wl, soc
        self.layouts: dict[tuple, tuple] = {}     # layout key -> ((role, cores, first, all), ...)
        self.vars: dict[tuple, tuple] = {}        # (role, PW engine) -> loop vars of the role
        self.loops: dict[tuple, np.ndarray] = {}  # (role, var, loop key, geometry) -> sums
        self.groups: dict[tuple, np.ndarray] = {}  # (layout key, role, which, var, loop key) -> sums
        self.prologues: dict[tuple, np.ndarray] = {}
        self.tiles: dict[tuple, tuple] = {}       # tile knobs but double buffering -> sums()

    def layout(self, plan: KernelPlan, key: tuple, program=None) -> tuple:
        """Per role of the program: (role, number of cores, tile geometries of its first core --
        round robin gives it the most tiles --, tile geometries of all its cores), each as
        sorted (geometry, tiles) pairs."""
        hit = self.layouts.get(key)
        if hit is None:
            prog = program if program is not None else build_program(plan)
            roles: dict[str, list] = {}
            for core in prog.cores:
                geos = Counter(prog.tiles[t] for t in core.tiles)
                if core.role not in roles:
                    roles[core.role] = [0, geos, Counter()]
                roles[core.role][0] += 1
                roles[core.role][2].update(geos)
            hit = self.layouts[key] = tuple((role, n, tuple(sorted(first.items())), tuple(sorted(every.items())))
                                            for role, (n, first, every) in roles.items())
        return hit

    def _loop(self, plan: KernelPlan, role: str, var: str, key: tuple, geo) -> np.ndarray:
        v = self.loops.get((role, var, key, geo))
        if v is None:
            iters = _BUILDERS[(role, var)](plan, *geo)
            v = self.loops[(role, var, key, geo)] = fold_steps(self.soc, self.wl.dtype, chain.from_iterable(iters))
        return v

    def _tiles(self, plan: KernelPlan, lkey, role: str, which: str, geos, keys: dict) -> np.ndarray:
        """Sums of the loops of the tiles `geos` of a core of `role` (cached per loop var: the
        loops of one tile change independently from plan to plan)."""
        vkey = (role, plan.tile.pw_engine)
        lvars = self.vars.get(vkey)
        if lvars is None:
            lvars = self.vars[vkey] = tuple(loop.var for loop in tile_loops(plan, role, *geos[0][0]))
        total = None
        for var in lvars:
            gkey = (lkey, role, which, var, keys[var])
            v = self.groups.get(gkey)
            if v is None:
                v = np.zeros(len(FIELDS))
                for geo, n in geos:
                    v += n * self._loop(plan, role, var, keys[var], geo)
                self.groups[gkey] = v
            total = v if total is None else total + v
        return total

    def _prologue(self, plan: KernelPlan, role: str) -> np.ndarray:
        # (th, tw: the bias GEMM's setup, schedules/program.bias_setup, fills the tile's rows)
        key = (role, plan.tile.th, plan.tile.tw, plan.tile.cob, plan.tile.pw_engine)
        v = self.prologues.get(key)
        if v is None:
            v = self.prologues[key] = fold_steps(self.soc, self.wl.dtype, resident_loads(plan, role))
        return v

    def sums(self, plan: KernelPlan | None = None, tile: TileConfig | None = None, program=None,
             kernel: bool = True) -> tuple[tuple, np.ndarray | None, int]:
        """(((role, sums of the first core of that role), ...), sums over every core of the
        kernel (None unless `kernel`: they need the loops of every tile geometry), the number of
        cores the kernel launches) of a plan, or of a tile of this workload (a cached tile
        builds no plan)."""
        tile = plan.tile if plan is not None else tile
        tkey = (tile.th, tile.tw, tile.cores, tile.cib, tile.cob, tile.pw_engine)
        hit = self.tiles.get(tkey)
        if hit is not None and (hit[1] is not None or not kernel):
            return hit
        plan = plan if plan is not None else KernelPlan(self.wl, tile, self.soc)
        keys = _keys(tile)
        lkey = keys["layout"]
        roles = self.layout(plan, lkey, program)
        if hit is None:
            firsts = tuple((role, self._prologue(plan, role) + self._tiles(plan, lkey, role, "first", first, keys))
                           for role, _n, first, _every in roles)
            hit = (firsts, None, sum(r[1] for r in roles))
        if kernel:
            total = np.zeros(len(FIELDS))
            for role, n, _first, every in roles:
                total += n * self._prologue(plan, role) + self._tiles(plan, lkey, role, "all", every, keys)
            hit = (hit[0], total, hit[2])
        self.tiles[tkey] = hit
        return hit

    def kernel(self, plan: KernelPlan, program=None) -> np.ndarray:
        """Sums over every core of the kernel."""
        return self.sums(plan, program=program)[1]


@lru_cache(maxsize=16)
def totals_for(wl: DwSepWorkload, soc: SocSpec) -> ProgramTotals:
    return ProgramTotals(wl, soc)


def kernel_sums(plan: KernelPlan, program=None) -> np.ndarray:
    return totals_for(plan.workload, plan.soc).kernel(plan, program)


def dma_bytes(plan: KernelPlan, program=None) -> dict[str, int]:
    """DMA bytes per traffic kind (read + written) of the fused kernel: the program's counts."""
    if plan.variant == "two-phase":   # phases, not per-core tile loops: count the program itself

        c = (program or build_program(plan)).counts
        return {k: int(c[f"read:{k}"] + c[f"write:{k}"]) for k in KINDS}
    v = kernel_sums(plan, program)
    return {k: int(round(v[F[f"read:{k}"]] + v[F[f"write:{k}"]])) for k in KINDS}


def counts(plan: KernelPlan) -> dict[str, int]:
    """KernelProgram.counts' totals (GM bytes read / written, DMA transfers and bursts, vector
    instructions and repeats, cube fractals) from the cached pieces."""
    v = kernel_sums(plan)
    g = lambda name: int(round(v[F[name]]))  # noqa: E731
    out = {"gm_read_bytes": g("in_bytes"), "gm_write_bytes": g("out_bytes"),
           "dma_transfers": g("in_transfers") + g("out_transfers"), "dma_bursts": g("dma_bursts"),
           "vector_instrs": g("vector_instrs"), "vector_repeats": g("vector_repeats"),
           "cube_fractals": g("cube_fractals")}
    for k in KINDS:
        out[f"read:{k}"], out[f"write:{k}"] = g(f"read:{k}"), g(f"write:{k}")
    return out


def clear_caches() -> None:
    totals_for.cache_clear()


__all__ = ["F", "FIELDS", "KINDS", "ProgramTotals", "clear_caches", "counts", "dma_bytes",
           "kernel_sums", "totals_for"]
