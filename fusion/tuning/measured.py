"""The measured tile sweep (llvm): a budgeted search guided by a CPU cost proxy, then an
evolutionary walk over the neighbours of the best points; every candidate is built and checked
in a worker process and timed in the main one (fusion/tuning/evaluators.py)."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from fusion.tuning import evaluators as ev
from fusion.tuning.db import TuningDB, key_context, make_record, point_id, tuning_key
from fusion.tuning.results import BlockResult, Point, Pool, _Progress, _stored_points
from fusion.tuning.space import SpaceOptions, build_space, default_tile
from schedules.plan import balanced_sizes, make_plan
from schedules.workload import DwSepWorkload, TileConfig, ceil_div


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
                   deadline: float | None = None, measurer=None) -> BlockResult:
    """Spend `trials` measurements (points already in the database count towards it): the
    default tile, then the best-ranked candidates of the CPU proxy spread over distinct th×tw
    cells (about half the budget), then mutations of the best measured points (neighbouring
    th / tw / cob / cib sizes, double buffering), the proxy ranking the neighbours. Candidates
    are compiled and checked in the worker processes, timed one at a time here -- or, with a
    `measurer` (fusion/tuning/rpc.RpcMeasurer), on the RPC servers, several at once."""
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
    if measurer is not None:   # keep every server busy
        workers = max(workers, measurer.parallel)
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
            remote = (measurer.measure(wl, {pid: b["lib"] for pid, b in zip(batch, built) if b.get("lib")})
                      if measurer is not None else {})
            for pid, b in zip(batch, built):
                r = dict(b)
                if b.get("lib"):
                    r.update(remote[pid] if measurer is not None else ev.time_library(wl, b["lib"], settings, seed))
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
