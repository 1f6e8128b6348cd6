"""Is a schema-valid tuning record believable? Checked before its tile is used.

- Modeled records (sim / ascend targets) are re-evaluated: the cost model is deterministic, so a
  record whose tile is outside the plan space (no plan, or one that overflows its buffers) or
  whose latency the model does not reproduce (MODEL_REL_TOL) is skipped.
- Measured records (llvm) cannot be re-run at compile time, but one faster than its FLOPs at this
  machine's measured fp32 FMA peak (schedules.cpu_limits, same compiler and thread pool) is
  impossible and skipped. MEASURE_SLACK leaves room for clock boost between the two measurements.
Each skipped record is one warning line; the next-best record is then considered.
"""

from __future__ import annotations

import functools
import math
import os

from schedules.cpu_limits import fma_peak_gflops
from fusion.core.errors import MegafuseError
from fusion.tuning.evaluators import model_tile
from schedules.workload import DwSepWorkload, TileConfig

MODEL_REL_TOL = 1e-6   # the model is deterministic: float round-off of the stored JSON number only
MEASURE_SLACK = 1.5    # a record is refused only when more than 1.5x faster than the FMA-peak floor


def implausible(rec: dict, wl: DwSepWorkload, tile: TileConfig, target) -> str | None:
    """None when the record may be used, else why not (one clause, for a warning line)."""
    lat = rec.get("latency_us")
    if rec.get("evaluator") == "modeled":
        if tile.th > wl.out_height or tile.tw > wl.out_width or tile.cob > wl.co1 or tile.cib > wl.c1:
            return f"tile {tile.describe()} is outside the plan space of {wl.describe()}"
        try:
            modeled = model_tile(wl, target.soc, tile)["latency_us"]
        except (ValueError, ArithmeticError, MegafuseError) as e:
            return f"tile {tile.describe()} has no valid plan ({e})"
        if not math.isclose(modeled, lat, rel_tol=MODEL_REL_TOL, abs_tol=1e-9):
            return (f"its modeled latency {lat:.6g} us is not what the cost model gives for tile "
                    f"{tile.describe()} ({modeled:.6g} us)")
        return None
    threads = rec.get("threads")
    threads = threads if type(threads) is int and threads >= 1 else _threads()
    floor_us = wl.flops / (peak_gflops(min(threads, os.cpu_count() or 1)) * 1e3)
    if lat * MEASURE_SLACK < floor_us:
        return (f"its measured {lat:.3g} us is faster than its {wl.flops:,} FLOPs at this machine's measured "
                f"FMA peak allow ({floor_us:.3g} us)")
    return None


def _threads() -> int:
    return int(os.environ.get("TVM_NUM_THREADS", "0") or 0) or (os.cpu_count() or 1)


@functools.cache
def peak_gflops(threads: int) -> float:
    """An upper bound of this machine's fp32 FMA peak on `threads` threads: one thread's peak
    (measured once per process, best of 5) scaled ideally. A parallel measurement on a shared
    machine can come out 10x low (2 threads timed while other processes hold the cores: 9.6 vs
    ~250 GFLOP/s on the 2-core VM), and a low peak would reject real records; an ideal scaling can
    only make the check more lenient."""
    return fma_peak_gflops(1, iters=50_000, repeat=5) * threads
