"""llvm default tiles: whole tiles per thread (schedules/cpu_tile.balance_tile)."""

from dataclasses import replace

from fusion.core.soc import get_soc
from schedules.cpu_tile import balance_tile, busiest_thread_pixels, cpu_soc
from schedules.plan import suggest_tile, tile_sizes
from schedules.workload import DwSepWorkload, TileConfig

# MobileNetV1 b5: 28×28 output, the largest tile that fits this CPU's L2 budget is usually 10 rows
WL = DwSepWorkload(1, 256, 256, 28, 28)


def _soc(threads):
    return replace(cpu_soc(get_soc(None)), vector_cores=threads, cube_cores=threads)


def test_busiest_thread_counts_contiguous_chunks_and_edge_tiles():
    # 28 rows in tiles of 10: rows 10, 10, 8; 2 threads take chunks of 2 and 1 tiles
    assert busiest_thread_pixels(WL, 10, 28, 2) == 20 * 28
    assert busiest_thread_pixels(WL, 7, 28, 2) == 14 * 28
    assert busiest_thread_pixels(WL, 10, 28, 1) == 28 * 28


def test_uneven_tile_count_is_rebalanced_for_two_threads_only():
    tile = TileConfig(10, 28, 1, 2)
    two = balance_tile(WL, tile, _soc(2))
    assert tile_sizes(WL, two)[:2] == (7, 28) and (two.cob, two.cib) == (1, 2)
    assert balance_tile(WL, tile, _soc(1)) == tile          # one thread: nothing to balance
    assert balance_tile(WL, TileConfig(7, 28), _soc(2)) == TileConfig(7, 28)  # already even


def test_balanced_default_still_fits_and_keeps_the_width():
    soc = _soc(2)
    base = suggest_tile(WL, soc, like=TileConfig(1, 1), min_tiles=2)
    out = balance_tile(WL, base, soc)
    assert out.tw == base.tw and out.th <= base.th
    from schedules.plan import make_plan
    assert make_plan(WL, out, soc).fits()
