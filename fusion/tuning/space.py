"""The tile search space of one fused block on one target, pruned analytically before anything
is modeled or built.

Knobs (TileConfig): th × tw from `balanced_sizes(out_h/out_w)`, cob in 1..co1, cib in 1..c1 and
0 (= all of C1), double buffering on/off, the PW engine (vector | cube, where the target has a
cube), and the number of cores (0 = auto, plus a few explicit counts).

Every raw point gets exactly one status, checked in this order (the first that applies wins):

  duplicate   the same kernel as another point: cib = c1 ≡ 0; an explicit core count that gives
              the same number of cores as a smaller listed value or as auto; on llvm a
              double-buffered twin (the CPU build is single-buffered, so db only changes the
              budget) and the cube engine (the CPU has one PW engine)
  dominated   an unbalanced channel split (cob / cib not in balanced_sizes): a balanced split
              with the same number of steps has equal or smaller buffers and no sliver step
              (switch off with SpaceOptions(dominance=False))
  alignment   a DMA row burst that is not a whole number of 32 B DataBlocks, or a GM gap
              between bursts beyond the 16-bit DataCopyParams stride (65,535 blocks)
  overflow:S  the buffers of scope S (UB, L1, L0A, L0B, L0C, BT) exceed that memory
  traffic     (only with SpaceOptions.max_dma_ratio) the fused kernel's modeled DMA volume
              exceeds the cap × the minimal bytes (schedules/traffic.py)
  legal       everything else

The budget is computed for the whole grid at once with NumPy, with the same formulas as
schedules.plan.make_plan (tests/tuning/test_tuning.py checks them point for point against make_plan;
the sweep also re-checks every legal point with make_plan(...).fits() before it is modeled).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.plan import align, balanced_sizes, buffer_specs
from schedules.workload import DwSepWorkload, TileConfig, ceil_div
from schedules.plan import KernelPlan
from schedules.traffic import dma_ratio
from fusion.driver.tile_policy import select_tile

SCOPES = ("UB", "L1", "L0A", "L0B", "L0C", "BT")
REASONS = ("duplicate", "dominated", "alignment") + tuple(f"overflow:{s}" for s in SCOPES) + ("traffic",)
MAX_DMA_STRIDE_BLOCKS = 65535   # DataCopyParams.srcStride / dstStride are uint16, in 32 B blocks


@dataclass(frozen=True)
class SpaceOptions:
    cores: tuple[int, ...] | None = None      # None: (0, vector_cores // 4, vector_cores // 2)
    engines: tuple[str, ...] | None = None    # None: both where the target has a cube, else vector
    double_buffer: tuple[bool, ...] = (True, False)
    dominance: bool = True
    # sim/ascend: only plans whose modeled DMA volume is at most this many times the minimal
    # bytes (schedules/traffic.py); None: no cap
    max_dma_ratio: float | None = None

    def core_choices(self, soc: SocSpec) -> tuple[int, ...]:
        if self.cores is not None:
            return tuple(dict.fromkeys(self.cores))
        vals = [0] + [c for c in (soc.vector_cores // 4, soc.vector_cores // 2) if c >= 1]
        return tuple(dict.fromkeys(vals))


@dataclass
class TileSpace:
    """The raw grid (NumPy arrays, one entry per raw point) and the status of every point."""

    workload: DwSepWorkload
    soc: SocSpec
    target_kind: str
    ths: list[int]
    tws: list[int]
    arrays: dict[str, np.ndarray]
    status: np.ndarray                      # int8: -1 legal, else index into REASONS
    engines: tuple[str, ...]
    pruned: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return int(self.status.size)

    @property
    def legal_mask(self) -> np.ndarray:
        return self.status < 0

    @property
    def n_legal(self) -> int:
        return int(self.legal_mask.sum())

    def tile_at(self, i: int) -> TileConfig:
        a = self.arrays
        return TileConfig(int(a["th"][i]), int(a["tw"][i]), int(a["cob"][i]), int(a["cib"][i]),
                          bool(a["db"][i]), self.engines[int(a["eng"][i])], int(a["cores"][i]))

    def legal_indices(self) -> np.ndarray:
        return np.flatnonzero(self.legal_mask)

    def legal_tiles(self) -> list[TileConfig]:
        return [self.tile_at(int(i)) for i in self.legal_indices()]

    def cell_status(self) -> dict[tuple[int, int], str]:
        """(th, tw) → 'legal' when any point of the cell is legal, else its most common binding
        reason (alignment / overflow before duplicate / dominated)."""
        a, out = self.arrays, {}
        for th in self.ths:
            for tw in self.tws:
                m = (a["th"] == th) & (a["tw"] == tw)
                st = self.status[m]
                if (st < 0).any():
                    out[(th, tw)] = "legal"
                else:   # name what binds: the budget / alignment over duplicates and dominated twins
                    hard = st[st >= REASONS.index("alignment")]
                    vals, counts = np.unique(hard if hard.size else st, return_counts=True)
                    out[(th, tw)] = REASONS[int(vals[np.argmax(counts)])]
        return out

    def summary(self) -> dict:
        return {"total": self.total, "legal": self.n_legal,
                "pruned": {r: int(self.pruned.get(r, 0)) for r in REASONS if self.pruned.get(r)}}

    def describe_pruning(self) -> str:
        parts = [f"{r} {n:,}" for r, n in self.summary()["pruned"].items()]
        return (f"{self.total:,} points, {self.n_legal:,} legal; pruned: "
                + (", ".join(parts) if parts else "none"))


def build_space(wl: DwSepWorkload, soc: SocSpec, target_kind: str = "sim",
                options: SpaceOptions | None = None) -> TileSpace:
    opt = options or SpaceOptions()
    cpu = target_kind == "llvm"
    engines = opt.engines or ("vector", "cube")
    ths, tws = balanced_sizes(wl.out_height), balanced_sizes(wl.out_width)
    c1, co1 = wl.c1, wl.co1
    cores = opt.core_choices(soc)
    dbs = tuple(dict.fromkeys(opt.double_buffer))
    grid = np.meshgrid(np.array(ths), np.array(tws), np.arange(1, co1 + 1), np.arange(0, c1 + 1),
                       np.array([int(d) for d in dbs]), np.arange(len(engines)), np.array(cores),
                       indexing="ij")
    th, tw, cob, cib, db, eng, ncores = (g.ravel().astype(np.int64) for g in grid)
    arrays = {"th": th, "tw": tw, "cob": cob, "cib": cib, "db": db, "eng": eng, "cores": ncores}
    status = np.full(th.size, -1, np.int8)

    def mark(mask: np.ndarray, reason: str) -> None:
        status[(status < 0) & mask] = REASONS.index(reason)

    # --- duplicates -------------------------------------------------------------------------
    mark(cib == c1, "duplicate")                                  # cib = c1 ≡ 0 (all of C1)
    # the cores a point runs on: the plan's (KernelPlan.cores), once per distinct (th, tw, cores)
    cells, inv = np.unique(np.stack([th, tw, ncores]), axis=1, return_inverse=True)
    inv = inv.reshape(-1)

    def plan_cores(c_col: np.ndarray) -> np.ndarray:
        got = [_plan(wl, soc, int(h), int(w), cores=int(c)).cores for h, w, c in zip(cells[0], cells[1], c_col)]
        return np.array(got, dtype=np.int64)[inv]

    eff = plan_cores(cells[2])
    auto = plan_cores(np.zeros_like(cells[2]))
    dup = (ncores != 0) & (eff == auto)
    for i, c in enumerate(cores):                                 # same count as an earlier listed value
        for c_prev in cores[:i]:
            if c and c_prev:
                dup |= (ncores == c) & (eff == plan_cores(np.full_like(cells[2], c_prev)))
    mark(dup, "duplicate")
    eng_cube = np.array([e == "cube" for e in engines])[eng]
    if cpu:
        mark(eng_cube, "duplicate")                               # the CPU has one PW engine
    # --- dominated --------------------------------------------------------------------------
    if opt.dominance:
        bal_co = np.isin(cob, balanced_sizes(co1))
        bal_ci = (cib == 0) | np.isin(cib, balanced_sizes(c1))
        mark(~bal_co | ~bal_ci, "dominated")
    # --- budget (the formulas of schedules.plan.make_plan) -----------------------------------
    scope = budget_bytes(wl, soc, th, tw, cob, cib, db.astype(bool), eng_cube)
    # --- alignment --------------------------------------------------------------------------
    b = np.dtype(wl.dtype).itemsize
    tws_u, tw_inv = np.unique(tw, return_inverse=True)      # the plan's row widths per distinct tw
    row_plans = [_plan(wl, soc, 1, int(w)) for w in tws_u]
    twv = np.array([p.tw for p in row_plans], dtype=np.int64)[tw_inv.reshape(-1)]
    iw = np.array([p.in_tile_w for p in row_plans], dtype=np.int64)[tw_inv.reshape(-1)]
    row_in, row_out = iw * C0 * b, twv * C0 * b
    gap_in = np.maximum(0, wl.width - iw) * C0 * b
    gap_out = (wl.out_width - twv) * C0 * b
    bad = (row_in % soc.ub_align != 0) | (row_out % soc.ub_align != 0)
    bad |= (gap_in // soc.ub_align > MAX_DMA_STRIDE_BLOCKS) | (gap_out // soc.ub_align > MAX_DMA_STRIDE_BLOCKS)
    mark(bad, "alignment")
    caps = {"UB": soc.ub_usable_bytes, "L1": soc.l1_bytes, "L0A": soc.l0a_bytes,
            "L0B": soc.l0b_bytes, "L0C": soc.l0c_bytes, "BT": soc.bt_bytes}
    for s in SCOPES:
        mark(scope[s] > caps[s], f"overflow:{s}")
    if opt.max_dma_ratio is not None and not cpu:
        mark(_over_dma_cap(wl, soc, arrays, status, engines, opt.max_dma_ratio), "traffic")
    if cpu:
        # the CPU kernel is the same with or without double buffering: keep the double-buffered
        # point when it fits, the single-buffered one only where double buffering does not fit
        key = th * 0
        for name, mul in (("th", 1), ("tw", 10**4), ("cob", 10**8), ("cib", 10**11), ("cores", 10**14)):
            key = key + arrays[name] * mul
        legal_db = (status < 0) & (db == 1)
        mark((db == 0) & np.isin(key, key[legal_db]), "duplicate")
    space = TileSpace(wl, soc, target_kind, ths, tws, arrays, status, engines)
    vals, counts = np.unique(status[status >= 0], return_counts=True)
    space.pruned = Counter({REASONS[int(v)]: int(c) for v, c in zip(vals, counts)})
    return space


def _plan(wl: DwSepWorkload, soc: SocSpec, th: int, tw: int, cores: int = 0):
    """The loop structure of a th x tw tiling (no buffers): what the plan says about tile counts,
    cores and row widths, read here instead of re-derived."""

    return KernelPlan(wl, TileConfig(th, tw, 1, 0, True, "vector", cores), soc)


def _over_dma_cap(wl: DwSepWorkload, soc: SocSpec, arrays: dict, status: np.ndarray,
                  engines: tuple[str, ...], cap: float) -> np.ndarray:
    """Legal points whose fused kernel moves more than cap × the minimal bytes (the program's
    DMA bytes; schedules/program_totals.py shares the loops that the points have in common)."""

    over = np.zeros(status.size, bool)
    for i in np.flatnonzero(status < 0):
        tile = TileConfig(int(arrays["th"][i]), int(arrays["tw"][i]), int(arrays["cob"][i]), int(arrays["cib"][i]),
                          bool(arrays["db"][i]), engines[int(arrays["eng"][i])], int(arrays["cores"][i]))
        over[i] = dma_ratio(KernelPlan(wl, tile, soc)) > cap * (1 + 1e-9)
    return over


def budget_bytes(wl: DwSepWorkload, soc: SocSpec, th, tw, cob, cib, db, cube) -> dict[str, np.ndarray]:
    """Bytes per memory scope for arrays of tile knobs: make_plan's buffers (schedules/plan.py
    buffer_specs, the one definition) summed over whole arrays of tiles, per PW engine."""
    th, tw, cob = np.minimum(th, wl.out_height), np.minimum(tw, wl.out_width), np.minimum(cob, wl.co1)
    cib = np.where(cib == 0, wl.c1, np.minimum(cib, wl.c1))
    zero = np.zeros(np.broadcast(th, tw, cob, cib, db).shape, dtype=np.int64)
    per_engine = []
    for on_cube in (False, True):
        scopes = {sc: zero.copy() for sc in SCOPES}
        for _name, scope, dims, dtype, copies, _role, opts in buffer_specs(wl, soc, th, tw, cob, cib, db, on_cube):
            if not opts.get("in_kernel", True):
                continue
            elems = 1
            for d in dims:
                elems = elems * d
            scopes[scope] = scopes[scope] + align(elems * np.dtype(dtype).itemsize, soc.ub_align) * copies
        per_engine.append(scopes)
    vec, cub = per_engine
    return {sc: np.where(cube, cub[sc], vec[sc]) for sc in SCOPES}


def default_tile(wl: DwSepWorkload, target) -> TileConfig:
    """The tile `megafuse compile` picks without a database (fusion.driver.tile_policy)."""

    return select_tile(wl, target, None)[0]


def space_key_of(tile: TileConfig, wl: DwSepWorkload) -> tuple:
    """A tile normalised the way the space enumerates it (cib = c1 → 0)."""
    cib = 0 if tile.cib >= wl.c1 else tile.cib
    return (tile.th, tile.tw, tile.cob, cib, tile.double_buffer, tile.pw_engine, tile.cores)


__all__ = ["REASONS", "SCOPES", "SpaceOptions", "TileSpace", "budget_bytes", "build_space",
           "ceil_div", "default_tile", "space_key_of"]
