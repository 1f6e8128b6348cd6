"""Tile sweeps per fused block: exhaustive branch and bound on the cost model (sim/ascend, here), a
budgeted guided + evolutionary search on measured kernels (llvm, fusion/tuning/measured.py). Both
read the tuning database first and evaluate only points it does not hold, so an interrupted sweep
resumes where it stopped. Also here: tuning whole models and the tiles under a DMA cap.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import replace

import numpy as np

from fusion.core.errors import MegafuseError
from schedules.targets import pw_engines
from fusion.tuning import evaluators as ev
from fusion.tuning.db import TuningDB, key_context, make_record, point_id, tuning_key
from fusion.tuning.measured import sweep_measured
from fusion.tuning.results import BlockResult, Point, Pool, _Progress, _stored_points
from fusion.tuning.space import SpaceOptions, build_space, default_tile
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig
from schedules.traffic import dma_ratio
from fusion.driver.compiler import DTYPES
from fusion.frontend.onnx_import import load_graph
from passes import optimize
from passes.fuse_dwsep import FUSED_OP, fused_workload
from schedules.targets import parse_target
from schedules.plan import KernelPlan

log = logging.getLogger("megafuse.tune")


# ------------------------------------------------------------------------------------------
# modeled: branch and bound over the whole legal space
# ------------------------------------------------------------------------------------------
def sweep_modeled(name: str, wl: DwSepWorkload, target, db: TuningDB, *, top: int = 5,
                  options: SpaceOptions | None = None, pool: Pool | None = None,
                  exhaustive: bool = False, max_new: int | None = None, chunk: int = 8,
                  progress: bool = False, on_new=None) -> BlockResult:
    """Model every legal point whose lower bound is below the `top`-th best modeled latency
    (exhaustive=True: every legal point). max_new stops after that many new points (a test hook
    that stands for an interrupted sweep)."""
    t0 = time.perf_counter()
    soc = target.soc
    engines = pw_engines(target, wl.dtype)
    if engines != ("vector", "cube"):   # ascend fp32: no cube kernel to emit
        options = replace(options or SpaceOptions(), engines=engines)
    space = build_space(wl, soc, target.kind, options)
    ctx = key_context(wl, target, ev.MODELED)
    key = tuning_key(wl, target, ev.MODELED, ctx["options"])
    dflt = default_tile(wl, target)
    tiles = space.legal_tiles()
    if point_id(dflt) not in {point_id(t) for t in tiles} and _admissible(make_plan(wl, dflt, soc), options):
        tiles.append(dflt)   # the default is always modeled (it is what tuning has to beat)
    ids = [point_id(t) for t in tiles]
    res = BlockResult(name, wl, target.name, key, ev.MODELED, space, dflt)
    res.points = _stored_points(db, key, set(ids))

    use_bound = not exhaustive
    try:
        bounds = np.array([ev.modeled_lower_bound(wl, soc, t) for t in tiles]) if use_bound else np.zeros(len(tiles))
    except Exception as e:  # noqa: BLE001 - a cost model whose helpers changed: no bound, model everything
        warnings.warn(f"{name}: no lower bound ({type(e).__name__}: {e}); modeling every legal point",
                      RuntimeWarning, stacklevel=2)
        bounds, use_bound = np.zeros(len(tiles)), False
        exhaustive = True
    order = sorted(range(len(tiles)), key=lambda i: (ids[i] != point_id(dflt), bounds[i], ids[i]))
    k = max(1, top)
    heap: list[float] = []   # max-heap (negated) of the k best latencies
    for p in res.points.values():
        if p.latency_us is not None and not p.record.get("error"):
            _push(heap, p.latency_us, k)

    bar = _Progress(len(tiles), f"{name}", progress)
    bar.update(len(res.points))
    ex = pool.get() if pool is not None else None
    pending = [i for i in order if ids[i] not in res.points]
    pos, submitted = 0, 0
    inflight = {}
    stop = False

    def threshold() -> float:
        return -heap[0] if use_bound and len(heap) >= k else math.inf

    def take() -> list[int]:
        nonlocal pos, submitted, stop
        batch = []
        while pos < len(pending) and len(batch) < chunk:
            if max_new is not None and submitted >= max_new:
                stop = True
                break
            i = pending[pos]
            if bounds[i] >= threshold() and ids[i] != point_id(dflt):
                stop = True          # sorted by bound: nothing after this can enter the top k
                break
            batch.append(i)
            pos += 1
            submitted += 1
        return batch

    def absorb(batch: list[int], results: list[dict]) -> None:
        nonlocal use_bound
        recs = []
        for i, r in zip(batch, results):
            lat = r.get("latency_us")
            rec = make_record(key, ctx, tiles[i], r, name)
            recs.append(rec)
            res.points[ids[i]] = Point(tiles[i], lat, "new", rec, float(bounds[i]))
            if lat is None:
                res.failed += 1
                continue
            if use_bound and bounds[i] > lat * (1 + 1e-6) + 1e-9:
                warnings.warn(f"{name}: lower bound {bounds[i]:.3f} us > modeled {lat:.3f} us for "
                              f"{tiles[i].describe()}: the cost model changed under the bound; "
                              f"modeling every legal point", RuntimeWarning, stacklevel=3)
                use_bound = False
                res.bound_fallback = True
            _push(heap, lat, k)
        db.append(recs)
        if on_new is not None:
            on_new(len(recs))
        bar.update(len(batch))

    try:
        if ex is None:
            while not stop:
                batch = take()
                if not batch:
                    break
                absorb(batch, ev._model_chunk(wl, soc.name, [tiles[i] for i in batch]))
        else:
            while True:
                while not stop and len(inflight) < 2 * pool.workers:
                    batch = take()
                    if not batch:
                        break
                    inflight[ex.submit(ev._model_chunk, wl, soc.name, [tiles[i] for i in batch])] = batch
                if not inflight:
                    break
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for f in done:
                    absorb(inflight.pop(f), f.result())
        res.stopped_early = max_new is not None and submitted >= max_new and pos < len(pending)
        if not res.stopped_early:
            rest = [i for i in pending[pos:] if ids[i] not in res.points]
            res.bound_skipped = len(rest)
            bar.update(len(rest))
            for i in rest:
                cell = (tiles[i].th, tiles[i].tw)
                res.cell_bound[cell] = min(res.cell_bound.get(cell, math.inf), float(bounds[i]))
    finally:
        for f in inflight:
            f.cancel()
        bar.close()
    if not exhaustive:
        res.bounds = {ids[i]: float(bounds[i]) for i in range(len(tiles))}
    res.elapsed_s = time.perf_counter() - t0
    return res


def _admissible(plan, options: SpaceOptions | None) -> bool:
    """The plan fits and respects the sweep's DMA cap (if any)."""
    if not plan.fits():
        return False
    if options is None or options.max_dma_ratio is None:
        return True
    return dma_ratio(plan) <= options.max_dma_ratio * (1 + 1e-9)


def _push(heap: list[float], lat: float, k: int) -> None:
    if len(heap) < k:
        heapq.heappush(heap, -lat)
    elif lat < -heap[0]:
        heapq.heapreplace(heap, -lat)


# ------------------------------------------------------------------------------------------
# whole models
# ------------------------------------------------------------------------------------------
def model_blocks(model, target, input_shapes=None, dtype: str | None = None) -> list[tuple[str, DwSepWorkload]]:
    """The fused blocks `megafuse compile` would build: (node name, workload), nothing compiled."""

    g = load_graph(model, input_shapes)
    dtype = dtype or (g.types[g.inputs[0]].dtype if g.inputs else "float32")
    if dtype not in DTYPES:
        raise MegafuseError(f"unsupported dtype '{dtype}'; use one of {', '.join(DTYPES)}")
    g, _ = optimize(g, target.soc, dtype, fuse=True)
    blocks = [(n.name, fused_workload(g, n, dtype)) for n in g.nodes if n.op_type == FUSED_OP]
    for name, wl in blocks:
        if wl.se:   # its kernel is not in the tile space: llvm runs two passes, sim the two-phase plan
            log.info("%s: not tuned: squeeze-and-excitation runs the two-pass / two-phase kernel, whose "
                     "tile the tile policy decides", name)
    return [(name, wl) for name, wl in blocks if not wl.se]


def tune_model(model, target, db: TuningDB, *, input_shapes=None, dtype: str | None = None,
               blocks: list[str] | None = None, trials: int = 16, workers: int = 2, top: int = 5,
               exhaustive: bool = False, progress: bool = False,
               settings: ev.MeasureSettings | None = None,
               max_dma_ratio: float | None = None, budget_s: float | None = None,
               measurer=None) -> list[BlockResult]:
    """measurer (llvm): times the built candidates elsewhere (fusion/tuning/rpc.RpcMeasurer).
    budget_s (llvm): wall-clock budget for the whole model, shared equally by the blocks with
    distinct workloads still to tune; a block whose workload was tuned earlier in this run reuses
    that result (MobileNetV1's five 512→512 @14 blocks are measured once)."""
    from dataclasses import replace


    tgt = parse_target(target)
    check_dma_cap(max_dma_ratio, tgt)
    options = SpaceOptions(max_dma_ratio=max_dma_ratio) if max_dma_ratio is not None else None
    found = model_blocks(model, tgt, input_shapes, dtype)
    if blocks:
        names = {n for n, _ in found}
        unknown = [b for b in blocks if b not in names]
        if unknown:
            raise MegafuseError(f"no fused block named {', '.join(unknown)}; blocks: {', '.join(sorted(names))}")
        found = [(n, w) for n, w in found if n in blocks]
    out = []
    done: dict[DwSepWorkload, BlockResult] = {}
    unique_left = len({wl for _, wl in found})
    t_end = time.perf_counter() + budget_s if budget_s is not None else None
    with Pool(workers) as pool:
        for name, wl in found:
            if tgt.kind == "llvm":
                if wl in done:
                    out.append(replace(done[wl], name=name))
                    continue
                deadline = None
                if t_end is not None:
                    now = time.perf_counter()
                    deadline = now + max(0.0, t_end - now) / unique_left
                unique_left -= 1
                pool.force = True   # compile in worker processes even with --workers 1
                done[wl] = sweep_measured(name, wl, tgt, db, trials=trials, pool=pool,
                                          settings=settings, progress=progress, deadline=deadline,
                                          measurer=measurer)
                out.append(done[wl])
            else:
                out.append(sweep_modeled(name, wl, tgt, db, top=top, pool=pool, exhaustive=exhaustive,
                                         progress=progress, options=options))
    return out


# ------------------------------------------------------------------------------------------
# tiles under a DMA cap (compile / check / bench --max-dma-ratio)
# ------------------------------------------------------------------------------------------
def check_dma_cap(cap: float | None, target) -> None:
    if cap is None:
        return
    if target.kind == "llvm":
        raise MegafuseError("--max-dma-ratio applies to the Ascend targets (sim, ascend): "
                            "the CPU build has no modeled DMA volume")
    if not cap >= 1.0:
        raise MegafuseError(f"--max-dma-ratio must be >= 1 (a kernel moves at least the minimal bytes), got {cap}")


def lowest_dma_ratio(wl: DwSepWorkload, target) -> tuple[float, TileConfig] | None:
    """The smallest DMA volume / minimal bytes over the legal space, with a tile that reaches it."""

    space = build_space(wl, target.soc, target.kind, SpaceOptions(engines=pw_engines(target, wl.dtype)))
    best = None
    for t in space.legal_tiles():
        r = dma_ratio(KernelPlan(wl, t, target.soc))   # the program's bytes: its loops are shared
        if best is None or r < best[0]:
            best = (r, t)
    return best


class CappedTiles:
    """The `tuned_tiles` hook of compile_model under a DMA cap: per block, the fastest modeled tile
    whose fused kernel moves at most `cap` × the minimal bytes (a branch-and-bound sweep restricted
    to such tiles; it reads and extends the database like `megafuse tune --max-dma-ratio`). The
    stored records of an unconstrained sweep are not enough: the best point under the cap may never
    have been modeled there."""

    def __init__(self, db: TuningDB, cap: float, engines: tuple[str, ...] | None = None,
                 double_buffer: tuple[bool, ...] = (True, False)):
        self.db, self.cap = db, cap
        self.options = SpaceOptions(engines=engines, double_buffer=double_buffer, max_dma_ratio=cap)
        self.chosen: list[tuple[DwSepWorkload, TileConfig, float]] = []

    def __call__(self, wl: DwSepWorkload, target) -> TileConfig:
        check_dma_cap(self.cap, target)
        res = sweep_modeled("block", wl, target, self.db, options=self.options)
        best = res.best
        if best is None:
            low = lowest_dma_ratio(wl, target)
            reach = (f"the lowest any legal tile reaches is {low[0]:.2f}x ({low[1].describe()})"
                     if low else "no tile fits at all")
            raise MegafuseError(f"block {wl.describe()}: no tile on {target.soc.name} moves at most "
                                f"{self.cap:g}x the minimal DMA bytes; {reach}")
        self.chosen.append((wl, best.tile, best.latency_us))
        return best.tile

    def note(self) -> str:
        return (f"tiles chosen under --max-dma-ratio {self.cap:g}: the fastest modeled tile of each block "
                f"whose DMA volume is at most {self.cap:g}x the minimal bytes ({len(self.chosen)} blocks)")
