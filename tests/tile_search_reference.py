"""A plain exhaustive tile search over the cost model: the tests' independent reference for the
tiles the tuner and the default policy pick (not used by the compiler)."""

from fusion import cost as cm
from fusion.core.soc import SocSpec
from schedules.plan import KernelPlan, make_plan
from schedules.workload import DwSepWorkload, TileConfig, ceil_div


def _desc(n: int) -> list[int]:
    """n, the powers of two below it and 1, largest first."""
    vals = {n, 1}
    v = 1
    while v < n:
        vals.add(v)
        v *= 2
    return sorted(vals, reverse=True)


def _sizes(extent: int, max_tiles: int) -> list[int]:
    """The tile sizes of near-equal splits of `extent` in 1 .. max_tiles pieces."""
    return sorted({ceil_div(extent, k) for k in range(1, min(extent, max_tiles) + 1)})


def _fused_candidates(wl: DwSepWorkload, soc: SocSpec, engines=("vector", "cube"),
                      max_tiles_per_axis: int = 16) -> list[TileConfig]:
    """(th, tw) from near-equal splits of each axis; per (th, tw, engine) the largest channel
    blocks that fit (all of C1 for the DW step when possible) and the smallest (cob = cib = 1)."""
    out = []
    for eng in engines:
        for th in _sizes(wl.out_height, max_tiles_per_axis):
            for tw in _sizes(wl.out_width, max_tiles_per_axis):
                small = TileConfig(th, tw, 1, 1, True, eng)
                if not make_plan(wl, small, soc).fits():
                    continue
                found = {small}
                for cib in (0, 1):
                    for cob in _desc(wl.co1):
                        t = TileConfig(th, tw, cob, cib, True, eng)
                        if make_plan(wl, t, soc).fits():
                            found.add(t)
                            break
                out += sorted(found, key=lambda t: (t.cob, t.cib))
    return out


def tune_fused(wl: DwSepWorkload, soc: SocSpec, engines=("vector", "cube"),
               max_traffic_ratio: float | None = None, max_tiles_per_axis: int = 16,
               objective: str = "time", traffic: str = "dma") -> tuple[KernelPlan, cm.KernelCost] | None:
    """The best modeled plan over a small tile space (fastest, or with objective="traffic" the
    least GM traffic, ties broken by time), optionally only among plans whose GM traffic stays
    within `max_traffic_ratio` of the minimal bytes; None when nothing qualifies. traffic="dma"
    counts every byte the DMA moves (gm_bytes, traffic_ratio), traffic="hbm" what reaches HBM
    after L2 hits (hbm_bytes, hbm_traffic_ratio)."""
    if traffic not in ("dma", "hbm"):
        raise ValueError(f"traffic must be 'dma' or 'hbm', not {traffic!r}")
    best = None
    for t in _fused_candidates(wl, soc, engines, max_tiles_per_axis):
        plan = make_plan(wl, t, soc)
        cost = cm.model_fused(plan, timeline=False)
        nbytes, ratio = ((cost.gm_bytes, cost.traffic_ratio) if traffic == "dma"
                         else (cost.hbm_bytes, cost.hbm_traffic_ratio))
        if max_traffic_ratio is not None and ratio > max_traffic_ratio:
            continue
        key = (cost.time_us,) if objective == "time" else (nbytes, cost.time_us)
        if best is None or key < best[0]:
            best = (key, plan)
    if best is None:
        return None
    return best[1], cm.model_fused(best[1])
