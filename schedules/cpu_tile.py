"""The running CPU described as the plan's chip for the llvm target.

A fused kernel's tile on the CPU should fit the per-core L2 (its input tile with halo, the DW
result for all input channels, the PW accumulators and the output tile), with the PW weights'
slice streaming through the other half; the tile loop is split over TVM's threads. So the llvm
target plans against a SocSpec whose "UB" is half the per-core L2 read from the system and
whose cores are the threads. Nothing here is hard-coded per CPU model.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path

from fusion.core.soc import SocSpec
from schedules.workload import ceil_div
from schedules.plan import balanced_sizes, make_plan, tile_sizes

CACHE_ROOT = Path("/sys/devices/system/cpu/cpu0/cache")
# what a tile may use of the per-core L2; the rest holds the streamed PW weight slice
L2_TILE_FRACTION = 0.5
# when the system does not say (containers without sysfs): a common per-core L2 size
FALLBACK_L2 = 1 << 20


@dataclass(frozen=True)
class CpuCaches:
    l1d: int
    l2: int          # per core
    l3: int          # shared
    source: str      # where the sizes came from


def _size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * mult


@functools.cache
def read_caches(root: Path = CACHE_ROOT) -> CpuCaches:
    sizes: dict[int, int] = {}
    try:
        for d in sorted(root.glob("index*")):
            kind = (d / "type").read_text().strip()
            if kind == "Instruction":
                continue
            sizes[int((d / "level").read_text())] = _size((d / "size").read_text())
    except (OSError, ValueError):
        sizes = {}
    if 2 not in sizes:
        return CpuCaches(32 << 10, FALLBACK_L2, 0, "fallback (no sysfs cache info)")
    return CpuCaches(sizes.get(1, 32 << 10), sizes[2], sizes.get(3, 0), str(root))


def cpu_threads() -> int:
    """The threads TVM's pool will use (TVM_NUM_THREADS, else every CPU this process may run on)."""
    env = os.environ.get("TVM_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_soc(base: SocSpec) -> SocSpec:
    """`base` with the budget and core count of this CPU (its other fields are unused on llvm)."""
    caches = read_caches()
    budget = int(caches.l2 * L2_TILE_FRACTION)
    threads = cpu_threads()
    return replace(base, name=f"cpu-l2-{caches.l2 >> 10}k-t{threads}", vector_cores=threads,
                   cube_cores=threads, ub_bytes=budget, ub_usable_bytes=budget)


# a lower tile must cut the busiest thread's pixels by more than this to replace the tallest one
# (lower tiles recompute more DW halo rows)
BALANCE_GAIN = 0.95


def busiest_thread_pixels(wl, th: int, tw: int, threads: int) -> int:
    """Output pixels of the busiest thread when the tile loop (n, ht, wt) is split into contiguous
    chunks of ceil(tiles / threads) iterations, as TVM's parallel loop does; edge tiles count
    only their pixels inside the output."""

    rows = [min(th, wl.out_height - i) for i in range(0, wl.out_height, th)]
    cols = [min(tw, wl.out_width - j) for j in range(0, wl.out_width, tw)]
    tiles = [r * c for _ in range(wl.batch) for r in rows for c in cols]
    chunk = ceil_div(len(tiles), threads)
    return max(sum(tiles[k:k + chunk]) for k in range(0, len(tiles), chunk))


def balance_tile(wl, tile, soc: SocSpec):
    """The tallest tile that fits can leave a thread idle when the tile count is not a multiple of
    the threads (28 rows in 3 tiles on 2 threads: one thread runs 2 of them). Of the balanced
    heights no taller than `tile`'s, the one whose busiest thread has the fewest pixels, kept
    only if that beats `tile` by BALANCE_GAIN. The width stays (the PW register tile runs along
    it), and so do cob/cib (a lower tile only shrinks the buffers)."""

    th0, tw = tile_sizes(wl, tile)[:2]
    threads = soc.vector_cores
    best, best_px = tile, busiest_thread_pixels(wl, th0, tw, threads)
    limit = best_px * BALANCE_GAIN
    for th in sorted((s for s in balanced_sizes(wl.out_height) if s < th0), reverse=True):
        px = busiest_thread_pixels(wl, th, tw, threads)
        if px < limit and px < best_px:
            cand = replace(tile, th=th)
            if make_plan(wl, cand, soc).fits():
                best, best_px = cand, px
    return best
