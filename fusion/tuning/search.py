"""Tile sweeps per fused block: exhaustive branch and bound on the cost model (sim/ascend), a
budgeted guided + evolutionary search on measured kernels (llvm). Both read the tuning database
first and evaluate only points it does not hold, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import heapq
import math
import os
import tempfile
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace

import numpy as np

from fusion.errors import MegafuseError
from fusion.targets import pw_engines
from fusion.tuning import evaluators as ev
from fusion.tuning.db import (
    TuningDB,
    key_context,
    make_record,
    point_id,
    tile_from_json,
    tuning_key,
)
from fusion.tuning.space import SpaceOptions, TileSpace, build_space, default_tile
from fusion.tuning.workers import kill_workers, start_pool
from schedules.plan import balanced_sizes, make_plan
from schedules.workload import DwSepWorkload, TileConfig, ceil_div


@dataclass
class Point:
    tile: TileConfig
    latency_us: float | None
    source: str                 # stored (from the database) | new
    record: dict
    bound_us: float | None = None


@dataclass
class BlockResult:
    name: str
    workload: DwSepWorkload
    target: str
    key: str
    evaluator: str
    space: TileSpace
    default: TileConfig
    points: dict[str, Point] = field(default_factory=dict)
    bound_skipped: int = 0          # legal points not modeled: their lower bound ≥ the K-th best
    bound_fallback: bool = False    # a bound violation switched the sweep to plain exhaustive
    cell_bound: dict = field(default_factory=dict)   # (th, tw) → lowest bound of an unmodeled cell
    bounds: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
    failed: int = 0
    stopped_early: bool = False

    @property
    def new(self) -> int:
        return sum(p.source == "new" for p in self.points.values())

    @property
    def stored(self) -> int:
        return sum(p.source == "stored" for p in self.points.values())

    def ranked(self) -> list[Point]:
        ok = [p for p in self.points.values() if p.latency_us is not None and not p.record.get("error")]
        return sorted(ok, key=lambda p: (p.latency_us, p.tile.key()))

    @property
    def best(self) -> Point | None:
        r = self.ranked()
        return r[0] if r else None

    @property
    def default_point(self) -> Point | None:
        return self.points.get(point_id(self.default))

    @property
    def speedup(self) -> float | None:
        d, b = self.default_point, self.best
        if d is None or b is None or d.latency_us is None or not b.latency_us:
            return None
        return d.latency_us / b.latency_us

    @property
    def covered(self) -> int:
        """Legal points settled: evaluated (now or before) or excluded by the bound."""
        return len(self.points) + self.bound_skipped

    @property
    def points_per_s(self) -> float:
        return self.covered / self.elapsed_s if self.elapsed_s > 0 else float("inf")


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
class _Progress:
    def __init__(self, total: int, desc: str, enabled: bool):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, unit="pt", leave=False, dynamic_ncols=True,
                                mininterval=0.2)
            except ImportError:  # pragma: no cover - tqdm is a dependency; degrade quietly
                self.bar = None

    def update(self, n: int = 1) -> None:
        if self.bar is not None and n:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Pool:
    """A lazily started spawn-context process pool shared by the sweeps of one run."""

    def __init__(self, workers: int):
        self.workers = max(0, int(workers))
        self.force = False      # a pool even for one worker (llvm: compile out of process)
        self._ex: ProcessPoolExecutor | None = None

    def get(self) -> ProcessPoolExecutor | None:
        if self.workers <= 1 and not self.force:
            return None
        if self._ex is None:
            self._ex = start_pool(max(1, self.workers))
        return self._ex

    def close(self, abort: bool = False) -> None:
        if self._ex is not None:
            if abort:   # an error or a signal: do not wait for the workers' tasks
                kill_workers(self._ex)
            else:
                self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(abort=exc_type is not None)


def _stored_points(db: TuningDB, key: str, allowed: set[str]) -> dict[str, Point]:
    out = {}
    for pid, rec in db.records(key).items():
        if pid in allowed:
            out[pid] = Point(tile_from_json(rec["tile"]), rec.get("latency_us"), "stored", rec)
    return out


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
    from fusion.traffic import dma_ratio
    return dma_ratio(plan) <= options.max_dma_ratio * (1 + 1e-9)


def _push(heap: list[float], lat: float, k: int) -> None:
    if len(heap) < k:
        heapq.heappush(heap, -lat)
    elif lat < -heap[0]:
        heapq.heapreplace(heap, -lat)


# ------------------------------------------------------------------------------------------
# measured: budgeted guided + evolutionary search
# ------------------------------------------------------------------------------------------
def _l2_bytes() -> int:
    try:
        text = open("/sys/devices/system/cpu/cpu0/cache/index2/size").read().strip().upper()
        mult = {"K": 1024, "M": 1024 ** 2}.get(text[-1], 1)
        return int(text.rstrip("KM")) * mult
    except (OSError, ValueError):
        return 1024 ** 2


def cpu_proxy(wl: DwSepWorkload, tile: TileConfig, soc, threads: int, l2: int) -> float:
    """A relative CPU cost (lower is better), used only to order candidates: thread imbalance of
    the tile loop, halo re-reads, per-tile and per-step loop overheads, and a penalty when a tile's
    working set (the plan's on-chip bytes) leaves the per-core L2."""
    plan = make_plan(wl, tile, soc)
    n = plan.n_tiles
    imbalance = ceil_div(n, threads) * threads / n
    halo = plan.in_tile_h * plan.in_tile_w / (plan.th * plan.tw * wl.stride[0] * wl.stride[1])
    px = plan.th * plan.tw
    steps = plan.ci_steps + plan.co_steps
    overhead = 1 + 4.0 * steps / (px * max(1, wl.c1)) + 2.0 / px
    ws = plan.ub_bytes
    cache = 1 + max(0.0, ws / l2 - 1) * 0.5
    narrow = 1 + 1.0 / plan.tw          # the unrolled width loop carries the vector work
    return imbalance * (0.8 + 0.2 * halo) * overhead * cache * narrow


def _neighbors(t: TileConfig, wl: DwSepWorkload) -> list[TileConfig]:
    ths, tws = balanced_sizes(wl.out_height), balanced_sizes(wl.out_width)
    cobs, cibs = balanced_sizes(wl.co1), balanced_sizes(wl.c1)
    out = []

    def step(vals, v, d):
        if v not in vals:
            return None
        i = vals.index(v) + d
        return vals[i] if 0 <= i < len(vals) else None

    cib_eff = t.cib or wl.c1
    for d in (-1, 1):
        if (v := step(ths, t.th, d)) is not None:
            out.append(TileConfig(v, t.tw, t.cob, t.cib, t.double_buffer, t.pw_engine, t.cores))
        if (v := step(tws, t.tw, d)) is not None:
            out.append(TileConfig(t.th, v, t.cob, t.cib, t.double_buffer, t.pw_engine, t.cores))
        if (v := step(cobs, t.cob, d)) is not None:
            out.append(TileConfig(t.th, t.tw, v, t.cib, t.double_buffer, t.pw_engine, t.cores))
        if (v := step(cibs, cib_eff, d)) is not None:
            out.append(TileConfig(t.th, t.tw, t.cob, 0 if v == wl.c1 else v, t.double_buffer, t.pw_engine, t.cores))
        for dh, dw in ((d, d), (d, -d)):
            a, b = step(ths, t.th, dh), step(tws, t.tw, dw)
            if a is not None and b is not None:
                out.append(TileConfig(a, b, t.cob, t.cib, t.double_buffer, t.pw_engine, t.cores))
    out.append(TileConfig(t.th, t.tw, t.cob, t.cib, not t.double_buffer, t.pw_engine, t.cores))
    return out


def sweep_measured(name: str, wl: DwSepWorkload, target, db: TuningDB, *, trials: int = 16,
                   options: SpaceOptions | None = None, pool: Pool | None = None,
                   settings: ev.MeasureSettings | None = None, progress: bool = False,
                   seed: int = 0, max_new: int | None = None, on_new=None,
                   deadline: float | None = None) -> BlockResult:
    """Spend `trials` measurements (points already in the database count towards it): the
    default tile, then the best-ranked candidates of the CPU proxy spread over distinct th×tw
    cells (about half the budget), then mutations of the best measured points (neighbouring
    th / tw / cob / cib sizes, double buffering), the proxy ranking the neighbours. Candidates
    are compiled and checked in the worker processes, timed one at a time here."""
    t0 = time.perf_counter()
    soc = target.soc
    settings = settings or ev.MeasureSettings()
    space = build_space(wl, soc, "llvm", options or SpaceOptions(cores=(0,), engines=("vector",)))
    ctx = key_context(wl, target, ev.MEASURED)
    key = tuning_key(wl, target, ev.MEASURED, ctx["options"])
    dflt = default_tile(wl, target)
    legal = space.legal_tiles()
    by_id = {point_id(t): t for t in legal}
    if point_id(dflt) not in by_id and make_plan(wl, dflt, soc).fits():
        by_id[point_id(dflt)] = dflt
    res = BlockResult(name, wl, target.name, key, ev.MEASURED, space, dflt)
    res.points = _stored_points(db, key, set(by_id))
    threads = int(os.environ.get("TVM_NUM_THREADS", "0") or 0) or (os.cpu_count() or 1)
    l2 = _l2_bytes()
    proxy = {pid: cpu_proxy(wl, t, soc, threads, l2) for pid, t in by_id.items()}
    ranked = sorted(by_id, key=lambda pid: (proxy[pid], pid))
    budget = min(trials, len(by_id))
    need = max(0, budget - len(res.points))
    if max_new is not None:
        need = min(need, max_new)
    bar = _Progress(budget, name, progress)
    bar.update(min(budget, len(res.points)))
    rng = np.random.default_rng(seed)
    workers = pool.workers if pool is not None else 1
    ex = pool.get() if pool is not None else None
    n_init = max(1, budget // 2)
    queued: set[str] = set()

    def propose(n: int) -> list[str]:
        picks: list[str] = []
        done = set(res.points) | queued

        def add(pid):
            if pid not in done and pid not in picks and len(picks) < n:
                picks.append(pid)

        add(point_id(dflt))
        measured_n = len(res.points) + len(queued)
        if measured_n < n_init:   # guided phase: proxy order, one pick per th×tw cell first
            seen_cells = {(res.points[p].tile.th, res.points[p].tile.tw) for p in res.points}
            for pid in ranked:
                t = by_id[pid]
                if (t.th, t.tw) not in seen_cells:
                    seen_cells.add((t.th, t.tw))
                    add(pid)
            for pid in ranked:
                add(pid)
        else:                     # evolutionary phase: mutate the best measured points
            best = [p for p in sorted(res.points.values(), key=lambda p: (p.latency_us is None, p.latency_us or 0))
                    if p.latency_us is not None][:3]
            cands = []
            for p in best:
                for nb in _neighbors(p.tile, wl):
                    pid = point_id(nb)
                    if pid in by_id:
                        cands.append(pid)
            for pid in sorted(set(cands), key=lambda q: (proxy[q], q)):
                add(pid)
            rest = [pid for pid in ranked if pid not in done]
            if len(picks) < n and rest:    # no fresh neighbour: a random legal point
                for j in rng.permutation(len(rest))[: n - len(picks)]:
                    add(rest[int(j)])
        return picks

    tmp = tempfile.mkdtemp(prefix="megafuse-tune-")
    try:
        new = 0
        while new < need:
            # a time budget (tune --budget-s): stop at the deadline once something was measured
            if deadline is not None and res.points and time.perf_counter() >= deadline:
                break
            batch = propose(min(max(1, workers), need - new))
            if not batch:
                break
            queued.update(batch)
            libs = {pid: os.path.join(tmp, f"{pid}.so") for pid in batch}
            if ex is None:
                built = [ev.build_and_check(wl, soc, by_id[pid], libs[pid], seed) for pid in batch]
            else:
                futs = [ex.submit(ev.build_and_check, wl, soc, by_id[pid], libs[pid], seed) for pid in batch]
                built = [f.result() for f in futs]
            recs = []
            for pid, b in zip(batch, built):
                r = dict(b)
                if b.get("lib"):
                    r.update(ev.time_library(wl, b["lib"], settings, seed))
                    try:
                        os.unlink(b["lib"])
                    except OSError:
                        pass
                else:
                    r["latency_us"] = None
                r["check_rel_err"] = r.get("check_rel_err")
                rec = make_record(key, ctx, by_id[pid], r, name)
                recs.append(rec)
                res.points[pid] = Point(by_id[pid], r.get("latency_us"), "new", rec)
                if r.get("latency_us") is None:
                    res.failed += 1
            queued.difference_update(batch)
            db.append(recs)
            if on_new is not None:
                on_new(len(recs))
            new += len(batch)
            bar.update(len(batch))
    finally:
        bar.close()
        try:
            for f in os.listdir(tmp):
                os.unlink(os.path.join(tmp, f))
            os.rmdir(tmp)
        except OSError:
            pass
    res.stopped_early = (max_new is not None or deadline is not None) and len(res.points) < budget
    res.elapsed_s = time.perf_counter() - t0
    return res


# ------------------------------------------------------------------------------------------
# whole models
# ------------------------------------------------------------------------------------------
def model_blocks(model, target, input_shapes=None, dtype: str | None = None) -> list[tuple[str, DwSepWorkload]]:
    """The fused blocks `megafuse compile` would build: (node name, workload), nothing compiled."""
    from fusion.driver import DTYPES
    from fusion.onnx_import import load_graph
    from passes import optimize
    from passes.fuse_dwsep import FUSED_OP, fused_workload

    g = load_graph(model, input_shapes)
    dtype = dtype or (g.types[g.inputs[0]].dtype if g.inputs else "float32")
    if dtype not in DTYPES:
        raise MegafuseError(f"unsupported dtype '{dtype}'; use one of {', '.join(DTYPES)}")
    g, _ = optimize(g, target.soc, dtype, fuse=True)
    return [(n.name, fused_workload(g, n, dtype)) for n in g.nodes if n.op_type == FUSED_OP]


def tune_model(model, target, db: TuningDB, *, input_shapes=None, dtype: str | None = None,
               blocks: list[str] | None = None, trials: int = 16, workers: int = 2, top: int = 5,
               exhaustive: bool = False, progress: bool = False,
               settings: ev.MeasureSettings | None = None,
               max_dma_ratio: float | None = None, budget_s: float | None = None) -> list[BlockResult]:
    """budget_s (llvm): wall-clock budget for the whole model, shared equally by the blocks with
    distinct workloads still to tune; a block whose workload was tuned earlier in this run reuses
    that result (MobileNetV1's five 512→512 @14 blocks are measured once)."""
    from dataclasses import replace

    from fusion.targets import parse_target

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
                                          settings=settings, progress=progress, deadline=deadline)
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
    from fusion.traffic import dma_ratio
    from schedules.plan import KernelPlan

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
