"""Primitive costs of the simulated Ascend target: cycles, DMA time (MODELED)."""

from __future__ import annotations

from fusion.core.soc import SocSpec
from schedules.isa import (  # noqa: F401  (re-exported: the cost model's counting primitives)
    ACC_BYTES,
    ACT_OPS,
    VecWork,
    cube_cycles,
    cube_fractals,
    itemsize,
    vec_op,
)
from schedules.workload import ceil_div

PIPES = ("MTE2", "MTE1", "vector", "cube", "MTE3")   # MTE1: L1 -> L0A / L0B (soc.MOVE_PIPE)
MODELED = "modeled"
TIMELINE_TILES = 2  # timeline events are recorded for the first N tiles of every core


# --------------------------------------------------------------------------------------------
def cycles_to_us(soc: SocSpec, cycles: float) -> float:
    return cycles / (soc.clock_ghz * 1e3)


def dma_bandwidth(soc: SocSpec, direction: str, active_cores: int, source: str = "any") -> float:
    """Bytes per µs one core gets: its own DMA limit, or its share of the shared bandwidth of the
    level that serves the bytes -- "hbm" (L2 misses, and writes that reach HBM) or "l2" (L2 hits,
    and writes L2 absorbs). The default "any" is the fastest of the two, i.e. the most any byte can
    get: what a lower bound of the model needs (fusion/tuning/evaluators.py)."""
    gib = soc.gm_to_ub_gibps if direction == "in" else soc.ub_to_gm_gibps
    per_core = gib * 2**30 / 1e6
    if source == "hbm":
        gbps = soc.hbm_gbps
    elif source == "l2":
        gbps = soc.l2_gbps
    else:
        gbps = max(soc.hbm_gbps, soc.l2_gbps)
    share = gbps * 1e3 / max(1, active_cores)
    return min(per_core, share)


def dma_us(soc: SocSpec, nbytes: int, bursts: int, direction: str, active_cores: int,
           hit: float = 0.0) -> float:
    """One DMA; `hit` is the fraction of its bytes L2 serves (the rest goes to / comes from HBM)."""
    if nbytes <= 0:
        return 0.0
    bursts = max(1, bursts)
    transfers = ceil_div(bursts, soc.dma_max_bursts)
    eff = soc.dma_short_burst_efficiency if nbytes / bursts < soc.dma_short_burst_bytes else 1.0
    setup = cycles_to_us(soc, transfers * soc.dma_setup_cycles)
    if hit <= 0.0:
        return setup + nbytes / (dma_bandwidth(soc, direction, active_cores, "hbm") * eff)
    if hit >= 1.0:
        return setup + nbytes / (dma_bandwidth(soc, direction, active_cores, "l2") * eff)
    return setup + (nbytes * (1.0 - hit) / (dma_bandwidth(soc, direction, active_cores, "hbm") * eff)
                    + nbytes * hit / (dma_bandwidth(soc, direction, active_cores, "l2") * eff))
