"""The loop formulas of the lowered kernel program, written once for the program builder and the
kernels.

A fused kernel takes its plan as a few dozen tiling words (the vendor's practice: the tiling struct
is copied to every core's stack at launch, 2 KiB by default), so a core cannot be handed a list of
its tiles: it computes them from the tiling words, and so does schedules/program.py when it lowers a
plan. Both evaluate the formulas below -- Python calls the functions this module compiles from
them; the Ascend C emitter renders the same expressions as __aicore__ inline functions of every
kernel (fusion/codegen/ascendc/loop_cxx.py, CamelCase names: BLOCK_LEN -> BlockLen) that its templates call.
So the tile loop, the channel-block loops, the unit decodes and a tile's window are spelled in this
table only, and the emulator's counters equal KernelProgram.counts by construction.

An expression is Python syntax over non-negative integers: + - * // %, comparisons, `a if c
else b`, Min(a, b), Max(a, b). `//` is rendered as C++ `/` on int32_t: equal where its operands
are non-negative, which holds at every use (only WINDOW_START can be negative, and it is never
divided). tests/schedules/test_loops.py compiles the rendered functions on the host and compares them with
the Python ones over a grid.
"""

from __future__ import annotations

import ast
from types import MappingProxyType

from schedules.workload import ceil_div

# name: (parameters, expression)
FORMULAS = MappingProxyType({
    # a split loop (ci blocks, co blocks, K blocks, GEMM row blocks): block q of `total` in steps
    # of `step`, the last one ragged
    "BLOCK_START": (("q", "step"), "q * step"),
    "BLOCK_LEN": (("q", "step", "total"), "Min(step, total - q * step)"),
    # round robin: core `core` of `cores` runs units core, core + cores, ... of `units`
    "UNITS_OF": (("core", "units", "cores"), "(units - core + cores - 1) // cores if core < cores else 0"),
    "UNIT_AT": (("core", "k", "cores"), "core + k * cores"),
    # contiguous ranges: core `core` of `cores` runs units RANGE_AT(core, 0 .. RANGE_OF - 1), the
    # first units % cores cores one more (the two-phase GEMM with its A panel kept: twophase.a_keep)
    "RANGE_OF": (("core", "units", "cores"), "units // cores + (1 if core < units % cores else 0)"),
    "RANGE_AT": (("core", "k", "units", "cores"), "core * (units // cores) + Min(core, units % cores) + k"),
    # member s of group g of `size` cores (910B MIX: the AIVs an AIC serves)
    "GROUP_MEMBER": (("group", "s", "size"), "group * size + s"),
    # a unit numbered outer x inner + i (DW unit: tile x ciSteps + q; GEMM tile: mi x coSteps + j)
    "UNIT_OUTER": (("u", "inner"), "u // inner"),
    "UNIT_INNER": (("u", "inner"), "u % inner"),
    # tile t of the grid, numbered (image, tile row, tile column)
    "TILE_IMAGE": (("t", "tiles_h", "tiles_w"), "t // (tiles_h * tiles_w)"),
    "TILE_ROW": (("t", "tiles_h", "tiles_w"), "t % (tiles_h * tiles_w) // tiles_w"),
    "TILE_COL": (("t", "tiles_w"), "t % tiles_w"),
    # one axis of a tile's input window: its first row (negative: padding above) and the rows of
    # it inside the image (the kernel computes the full tile; the window is clipped)
    "WINDOW_START": (("o0", "stride", "pad_lo"), "o0 * stride - pad_lo"),
    "WINDOW_SPAN": (("t", "stride", "k"), "(t - 1) * stride + k"),
    "WINDOW_FIRST": (("lo",), "Max(lo, 0)"),
    "WINDOW_VALID": (("lo", "span", "total"), "Max(0, Min(lo + span, total) - Max(lo, 0))"),
    # the image a GEMM row (pixel of the batch) lies in
    "ROW_IMAGE": (("row", "per_image"), "row // per_image"),
    # rows of each of `parts` parts of a GEMM tile of `rows` rows, whole `frac`-row fractals each
    # (910B: the AIVs of an AIC's group share each of its tiles' epilogue; part s: BLOCK_LEN(s, ., rows))
    "PART_ROWS": (("rows", "parts", "frac"), "(rows // frac + parts - 1) // parts * frac"),
    # M tiles dealt in bands of g (a two-phase plan with local_dw: band b is the GEMM rows of the
    # DW phase's row of tiles b, which core b mod `cores` wrote): the M tiles of core `core`'s bands
    # (the last band ragged), and the M tile of its i-th (M, N) tile, `co` N tiles per M tile
    "BAND_TILES": (("core", "m_tiles", "g", "cores"),
                   "(((m_tiles + g - 1) // g - core + cores - 1) // cores * g - ((m_tiles + g - 1) // g * g - m_tiles"
                   " if core == ((m_tiles + g - 1) // g - 1) % cores else 0)) if core < cores else 0"),
    "BAND_TILE": (("core", "i", "g", "co", "cores"), "(core + i // (g * co) * cores) * g + i % (g * co) // co"),
    # a core's `own` pieces spread over its `mine` units (schedules/prefetch.py): the first it
    # issues after its unit `unit`, and how many
    "PIECE_FIRST": (("unit", "mine", "own"), "(unit * own + mine // 2) // mine"),
    "PIECES_AFTER": (("unit", "mine", "own"),
                     "((unit + 1) * own + mine // 2) // mine - (unit * own + mine // 2) // mine"),
})


def _compile(name: str, params: tuple[str, ...], expr: str):
    code = compile(f"lambda {', '.join(params)}: {expr}", f"<loops.{name}>", "eval")
    fn = eval(code, {"Min": min, "Max": max, "__builtins__": {}})   # noqa: S307 (our own table)
    fn.__name__ = name.lower()
    fn.__doc__ = f"{name}({', '.join(params)}) = {expr}"
    return fn


block_start = _compile("BLOCK_START", *FORMULAS["BLOCK_START"])
block_len = _compile("BLOCK_LEN", *FORMULAS["BLOCK_LEN"])
units_of = _compile("UNITS_OF", *FORMULAS["UNITS_OF"])
unit_at = _compile("UNIT_AT", *FORMULAS["UNIT_AT"])
piece_first = _compile("PIECE_FIRST", *FORMULAS["PIECE_FIRST"])
pieces_after = _compile("PIECES_AFTER", *FORMULAS["PIECES_AFTER"])
band_tiles = _compile("BAND_TILES", *FORMULAS["BAND_TILES"])
band_tile = _compile("BAND_TILE", *FORMULAS["BAND_TILE"])
range_of = _compile("RANGE_OF", *FORMULAS["RANGE_OF"])
range_at = _compile("RANGE_AT", *FORMULAS["RANGE_AT"])
group_member = _compile("GROUP_MEMBER", *FORMULAS["GROUP_MEMBER"])
unit_outer = _compile("UNIT_OUTER", *FORMULAS["UNIT_OUTER"])
unit_inner = _compile("UNIT_INNER", *FORMULAS["UNIT_INNER"])
tile_image = _compile("TILE_IMAGE", *FORMULAS["TILE_IMAGE"])
tile_row = _compile("TILE_ROW", *FORMULAS["TILE_ROW"])
tile_col = _compile("TILE_COL", *FORMULAS["TILE_COL"])
window_start = _compile("WINDOW_START", *FORMULAS["WINDOW_START"])
window_span = _compile("WINDOW_SPAN", *FORMULAS["WINDOW_SPAN"])
window_first = _compile("WINDOW_FIRST", *FORMULAS["WINDOW_FIRST"])
window_valid = _compile("WINDOW_VALID", *FORMULAS["WINDOW_VALID"])
row_image = _compile("ROW_IMAGE", *FORMULAS["ROW_IMAGE"])
part_rows = _compile("PART_ROWS", *FORMULAS["PART_ROWS"])


def split(total: int, step: int) -> tuple[int, ...]:
    """The block sizes of a split loop over `total` in steps of `step`."""
    return tuple(block_len(q, step, total) for q in range(ceil_div(total, step)))


def round_robin(units: int, cores: int) -> tuple[tuple[int, ...], ...]:
    """Per core the units it runs, in its order."""
    return tuple(tuple(unit_at(c, k, cores) for k in range(units_of(c, units, cores))) for c in range(cores))


def by_m_tile(m_tiles: int, n_tiles: int, cores: int) -> tuple[tuple[int, ...], ...]:
    """Per core the GEMM tiles (u = mi x n_tiles + j) it runs when M tiles are dealt round-robin and
    each core runs every N tile of its M tiles (a chain's GEMM stage after its producer on the same
    cores, fusion/driver/chain_local.py): core c's i-th tile is M tile UNIT_AT(c, i // n_tiles), N
    tile i % n_tiles."""
    return tuple(tuple(unit_at(c, i // n_tiles, cores) * n_tiles + i % n_tiles
                       for i in range(units_of(c, m_tiles, cores) * n_tiles)) for c in range(cores))


def by_band(m_tiles: int, g: int, n_tiles: int, cores: int) -> tuple[tuple[int, ...], ...]:
    """Per core the GEMM tiles (u = mi x n_tiles + j) it runs when M tiles are dealt in bands of g
    round-robin and each core runs every N tile of its M tiles (BAND_TILES, BAND_TILE; g = 1 is
    by_m_tile)."""
    return tuple(tuple(band_tile(c, i, g, n_tiles, cores) * n_tiles + i % n_tiles
                       for i in range(band_tiles(c, m_tiles, g, cores) * n_tiles)) for c in range(cores))


def contiguous(units: int, cores: int) -> tuple[tuple[int, ...], ...]:
    """Per core the units it runs: a contiguous range each, balanced (RANGE_OF, RANGE_AT)."""
    return tuple(tuple(range_at(c, k, units, cores) for k in range(range_of(c, units, cores))) for c in range(cores))


def parse(expr: str) -> ast.expr:
    """The syntax tree of one formula (for the C++ renderer)."""
    return ast.parse(expr, mode="eval").body


def halvings(pixels: int) -> list[int]:
    """The pixel counts each halving Add adds (a sum in halves: m -> m - m // 2; templates/twophase_se_sum.h,
    compute_dw_pool.h)."""
    out, m = [], pixels
    while m > 1:
        out.append(m // 2)
        m -= m // 2
    return out
