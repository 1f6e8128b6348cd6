"""Tile policy: which tile and PW engine a fused block gets, for `compile` and `tune` alike.

Forced (user) > tuned (database) > default. Default on llvm: the largest tile that fits the SoC's
UB while giving every core at least one tile. Default on sim/ascend: of the largest tiles that
give at least k x cores tiles (k in DEFAULT_TILES_PER_CORE), with and without double buffering,
each on every PW engine the target can emit, the fastest under the cost model -- the engine is
decided here, once, in the same comparison. Every candidate dropped is logged to the
"megafuse.tiles" logger (`megafuse -v` shows it).
"""

from __future__ import annotations

import logging
from itertools import product
from dataclasses import dataclass, replace

from fusion.core.errors import MegafuseError
from schedules.targets import Target, pw_engines, vector_only_reason
from schedules.isa import GROUP_BLOCKS
from schedules.twophase import GROUPED_ACTS, MAX_STRIDE, tap_row_fit
from schedules.activations import needs_slope
from schedules.channel_norm import norm_refusal
from schedules.plan import KernelPlan, balanced_sizes, make_plan, suggest_tile
from schedules.se_plan import SE_SOCS, se_emitted
from schedules.workload import DwSepWorkload, TileConfig, ceil_div
from fusion.codegen.npuir.emit import act_refusal as npuir_act_refusal
from fusion.cost import engine_reason, model_block
from schedules.cpu_tile import balance_tile
from schedules.traffic import dma_ratio

log = logging.getLogger("megafuse.tiles")

# tiles per core the default candidates aim at: one big tile per core up to many small ones
DEFAULT_TILES_PER_CORE = (1 / 48, 1 / 2, 1, 2, 4, 8)


@dataclass(frozen=True)
class TileOverride:
    """A tile forced by the user for every fused block (fields left None keep the default)."""
    th: int | None = None
    tw: int | None = None
    cob: int | None = None
    cib: int | None = None
    double_buffer: bool | None = None
    pw_engine: str | None = None

    def apply(self, base: TileConfig) -> TileConfig:
        return TileConfig(self.th or base.th, self.tw or base.tw, self.cob or base.cob,
                          base.cib if self.cib is None else self.cib,
                          base.double_buffer if self.double_buffer is None else self.double_buffer,
                          self.pw_engine or base.pw_engine, base.cores)

    @property
    def forced(self) -> bool:
        return any(v is not None for v in (self.th, self.tw, self.cob, self.cib))

    @classmethod
    def from_args(cls, args) -> "TileOverride":
        """The override of the CLI's tile options (--tile, --cout-block, --cin-block,
        --no-double-buffer, --pw-engine), shared by compile/check/bench/tune and explain."""
        th, tw = args.tile if getattr(args, "tile", None) else (None, None)
        return cls(th, tw, getattr(args, "cout_block", None), getattr(args, "cin_block", None),
                   False if getattr(args, "no_double_buffer", False) else None, getattr(args, "pw_engine", None))


@dataclass(frozen=True)
class TileChoice:
    plan: KernelPlan
    source: str          # default | forced | tuned
    engine_reason: str   # why PW runs on this unit


def choose_tile(wl: DwSepWorkload, target: Target, override: TileOverride | None = None,
                tuned: TileConfig | None = None, max_dma_ratio: float | None = None) -> TileChoice:
    """The plan of one fused block (no budget check: forced tiles are checked by the caller).
    max_dma_ratio: the DMA cap the tuned tile was chosen under (`--max-dma-ratio`), which the
    two-phase plan must respect too to replace it."""
    override = override or TileOverride()
    soc = target.soc
    if wl.se and target.kind != "llvm":   # only the two-phase kernel has the barrier SE needs
        two = _two_phase_best(wl, target, override)
        if two is None:
            raise MegafuseError(fit_refusal(wl, target, override) or f"no two-phase tile of {wl.describe()} fits")
        return TileChoice(two[0], "default", f"two-phase: squeeze-and-excitation needs the SyncAll after the "
                                             f"DW (its image-wide mean): {two[1]:.2f} us modeled")
    if tuned is not None and not override.forced:
        log.info("%s: tuned tile %s (database)", wl.describe(), tuned.describe())
        plan = make_plan(wl, tuned, soc)
        two = _two_phase_best(wl, target, override)
        if two is not None and max_dma_ratio is not None:
            if dma_ratio(two[0]) > max_dma_ratio * (1 + 1e-9):
                log.info("%s: two-phase tile %s moves %.2fx the minimal bytes > the cap %g", wl.describe(),
                         two[0].tile.describe(), dma_ratio(two[0]), max_dma_ratio)
                two = None
        if two is not None:   # the tuner's space holds the one-phase variants; compare the two-phase one
            t_tuned = model_block(plan, timeline=False).time_us
            if two[1] < t_tuned:
                log.info("%s: two-phase tile %s %.2f us < tuned %.2f us", wl.describe(),
                         two[0].tile.describe(), two[1], t_tuned)
                return TileChoice(two[0], "default", f"two-phase: {two[1]:.2f} us modeled < tuned "
                                                   f"{tuned.describe()} {t_tuned:.2f} us")
        return TileChoice(plan, "tuned", f"pw on {tuned.pw_engine} (tuned tile)")
    if override.forced or target.kind == "llvm":
        base = _base_tile(wl, target, override)
        if override.forced:
            cfg = override.apply(base)
            return TileChoice(make_plan(wl, cfg, soc), "forced", f"pw on {cfg.pw_engine} (forced tile)")
        base = balance_tile(wl, base, soc)
        return TileChoice(make_plan(wl, base, soc), "default", f"pw on {base.pw_engine} (default tile)")
    plan, why = _fastest_candidate(wl, target, override)
    return TileChoice(plan, "default", why)


def _base_tile(wl: DwSepWorkload, target: Target, override: TileOverride) -> TileConfig:
    """The largest tile giving every core one, double-buffered where one fits, else single-buffered
    (a block whose every buffer fits only once still fuses); the engine forced or vector."""
    soc = target.soc
    for db in ((True, False) if override.double_buffer is None else (override.double_buffer,)):
        base = suggest_tile(wl, soc, like=TileConfig(1, 1, double_buffer=db, pw_engine=override.pw_engine or "vector"),
                            min_tiles=soc.vector_cores)
        if base is not None:
            if db is False and override.double_buffer is None:
                log.info("%s: no double-buffered tile fits %s: single-buffered", wl.describe(), soc.name)
            return base
    raise MegafuseError(fit_refusal(wl, target, override) or f"no tile of {wl.describe()} fits {soc.name}")


def _engines(wl: DwSepWorkload, target: Target, override: TileOverride) -> tuple[str, ...]:
    """Every PW engine choose_tile may plan `wl` on (the two-phase kernel where it is considered)."""
    if override.forced or target.kind == "llvm":
        return (override.pw_engine or "vector",)
    if wl.se:
        return ("twophase",)
    engines = (override.pw_engine,) if override.pw_engine else pw_engines(target, wl.dtype)
    if wl.ln_eps is not None:   # a channel norm: the vector-PW and two-phase kernels only
        engines = ("vector",)
    if two_phase_enabled(target, override) and "cube" in pw_engines(target, wl.dtype) \
            and not (target.kind == "ascend" and (needs_slope(wl.act1) or needs_slope(wl.act2))):
        engines += ("twophase",)
    return engines


def fit_refusal(wl: DwSepWorkload, target: Target, override: TileOverride | None = None) -> str | None:
    """None when choose_tile can plan `wl` under `override`; else why not, with the figures of the
    smallest tile (1x1, one channel block each way, single-buffered) on every engine it may use.
    The fusion gate asks this before fusing, so a block no tile fits stays unfused with this reason
    instead of failing the compile."""
    override = override or TileOverride()
    soc = target.soc
    if wl.ln_eps is not None and target.kind == "npuir":
        return norm_refusal(target.kind)
    if target.kind == "npuir":   # an activation the emitter cannot lower: unfused, with its reason
        why = next((r for r in map(npuir_act_refusal, (wl.act1, wl.act2)) if r), None)
        if why:
            return why
    why = se_refusal(wl, target, override)
    if why:
        return why
    misses = []
    for eng in _engines(wl, target, override):
        # a norm block's two-phase kernel: the norm in the DW units (all of C1) or in its own phase
        phases = (False, True) if eng == "twophase" and wl.ln_eps is not None else (False,)
        for npf in phases:
            plan = make_plan(wl, TileConfig(1, 1, 1, 1, False, eng, 0, npf), soc)
            if plan.fits():
                return None
        scope, used, cap = plan.overflows()[0]
        misses.append(f"pw:{eng} {scope} {used / 1024:.1f} KiB > {cap / 1024:.1f} KiB")
    return (f"no tile fits {soc.name}: even the smallest (1x1 cob1 cib1 sb) needs "
            f"{'; '.join(misses)}")


def se_refusal(wl: DwSepWorkload, target: Target, override: TileOverride) -> str | None:
    """Why a block with squeeze-and-excitation cannot fuse on this target (None: it can). The
    image-wide mean needs a barrier between the DW and the PW: the CPU kernel runs two passes
    (schedules/se.py), the Ascend two-phase kernel has its SyncAll (schedules/se_plan.py)."""
    if not wl.se or target.kind == "llvm":
        return None
    what = "squeeze-and-excitation needs the two-phase kernel (its image-wide mean needs a barrier between DW and PW)"
    if target.kind == "ascend" and not se_emitted(target.soc):
        return (f"{what}; the Ascend C emitter writes the SE phase for {', '.join(SE_SOCS)} only, not "
                f"{target.soc.name} (modeled on -t sim, run on -t llvm)")
    if target.kind == "ascend" and (needs_slope(wl.act1) or needs_slope(wl.act2)):
        return f"{what}; the Ascend C two-phase kernel takes no per-channel PRelu slopes"
    if target.kind == "npuir":
        return f"{what}; the AscendNPU IR emitter writes the one-phase vector kernel only"
    if override.forced:
        return f"{what}; a forced tile (--tile/--cout-block/--cin-block) plans a one-phase kernel"
    if target.kind == "ascend" and "cube" not in pw_engines(target, wl.dtype):
        return f"{what}; its GEMM is a cube kernel, emitted for float16 only (this block is {wl.dtype})"
    if not two_phase_enabled(target, override) or "cube" not in pw_engines(target, wl.dtype):
        return f"{what}; --pw-engine {override.pw_engine} rules it out"
    return None


def select_tile(wl: DwSepWorkload, target: Target, override: TileOverride | None,
                tuned: TileConfig | None = None) -> tuple[TileConfig, str]:
    """(tile, source) of choose_tile: what `tune` compares its results with."""
    choice = choose_tile(wl, target, override, tuned)
    return choice.plan.tile, choice.source


def _fastest_candidate(wl: DwSepWorkload, target: Target, override: TileOverride) -> tuple[KernelPlan, str]:
    """The fastest modeled default candidate and why its engine won. A few dozen model
    evaluations per block (milliseconds); `megafuse tune` searches the whole space."""

    soc = target.soc
    engines = (override.pw_engine,) if override.pw_engine else pw_engines(target, wl.dtype)
    if wl.ln_eps is not None:   # schedules/channel_norm.py: vector PW only
        engines = ("vector",)
    if not override.pw_engine and engines == ("vector",):
        log.info("%s: pw on vector only on %s (%s)", wl.describe(), target.name,
                 vector_only_reason(target))
    buffering = (False,) if override.double_buffer is False else (True, False)
    costs: dict = {}   # TileConfig -> KernelCost
    seen: set = set()  # candidates already judged (several k give the same largest tile)
    for k in DEFAULT_TILES_PER_CORE:
        for db in buffering:
            for eng in engines:
                base = suggest_tile(wl, soc, like=TileConfig(1, 1, double_buffer=db, pw_engine=eng),
                                    min_tiles=max(1, round(k * soc.vector_cores)))
                if base is None:
                    log.info("%s: no %s tile with %g tiles per core fits", wl.describe(), eng, k)
                    continue
                for other in engines:   # the same sizes on every engine: the engine is part of the choice
                    cand = replace(base, pw_engine=other)
                    if cand in seen:
                        continue
                    seen.add(cand)
                    plan = make_plan(wl, cand, soc)
                    if not plan.fits():
                        log.info("%s: tile %s does not fit %s", wl.describe(), cand.describe(),
                                 plan.overflows()[0][0])
                        continue
                    costs[cand] = model_block(plan, timeline=False)
    two = _two_phase_best(wl, target, override)
    if not costs and two is None:
        raise MegafuseError(fit_refusal(wl, target, override) or f"no tile of {wl.describe()} fits {soc.name}")
    if two is not None and (not costs or two[1] < min(c.time_us for c in costs.values())):
        log.info("%s: default tile %s (two-phase), %.2f us modeled", wl.describe(), two[0].tile.describe(), two[1])
        others = f" < one-phase {min(c.time_us for c in costs.values()):.2f} us" if costs else ""
        return two[0], f"two-phase (DW on all cores, SyncAll, M x N GEMM): {two[1]:.2f} us modeled{others}"
    best = min(costs, key=lambda c: costs[c].time_us)   # first of equals: the order above breaks ties
    for cand, cost in costs.items():
        if cand != best:
            log.info("%s: tile %s dropped: %.2f us modeled > %.2f us of %s", wl.describe(),
                     cand.describe(), cost.time_us, costs[best].time_us, best.describe())
    if len(engines) == 1:
        why = (f"pw on {best.pw_engine} (forced engine)" if override.pw_engine
               else f"pw on vector: {vector_only_reason(target)}")
    else:
        same_sizes = {c.pw_engine: cost for c, cost in costs.items()
                      if replace(c, pw_engine=best.pw_engine) == best}
        why = engine_reason(best.pw_engine, same_sizes, soc)
    log.info("%s: default tile %s, %s", wl.describe(), best.describe(), why)
    return make_plan(wl, best, soc), why


# two-phase candidates (schedules/twophase.py): DW tiles for a few unit counts, the GEMM tile's N
TWO_PHASE_TILES_PER_CORE = (1 / 8, 1 / 2, 1)
TWO_PHASE_MAX_COB = 8
TWO_PHASE_MAX_DW_PIXELS = 512   # the tallest fit-width DW tile tried: its taps are one instruction each
TWO_PHASE_MAX_WIDE_PIXELS = 1024  # the largest wide (full / half output width) DW tile tried
TWO_PHASE_WIDE_FINALISTS = 2     # (wide DW shape, cob) pairs whose cib x cores are searched
TWO_PHASE_FINALISTS = 3         # (DW shape, cob) pairs whose cib x cores are searched
TWO_PHASE_GROUPED_FINALISTS = 2  # and as many pairs of the grouped DW form's shapes
TWO_PHASE_ROUND_FINALISTS = 2    # and of the grouped shapes whose units fill the cores' rounds best
_TWO_PHASE_BEST: dict = {}


def _two_phase_cores(soc) -> tuple[int, ...]:
    """Vector-core counts tried: all, two thirds, a half (fewer cores launch faster)."""
    return tuple(dict.fromkeys((0, soc.vector_cores * 2 // 3 // 8 * 8 or 0, soc.vector_cores // 2)))


def two_phase_enabled(target: Target, override: TileOverride) -> bool:
    """The two-phase variant is modeled on sim and emitted for ascend (fusion/codegen/ascendc/emit_twophase.py;
    its GEMM is a cube kernel, so fp16 only there: _two_phase_best checks the dtype)."""
    return target.kind in ("sim", "ascend") and override.pw_engine in (None, "twophase") and not override.forced


def two_phase_plan(wl: DwSepWorkload, target: Target, in_chain: bool = False) -> KernelPlan | None:
    """The fastest modeled two-phase plan of `wl` (default knobs), or None where none fits or the
    target has no two-phase kernel. in_chain: the plan with the shortest body (time without its
    launch) -- inside a chain (fusion/driver/chain.py) the launch is paid once for all members, so a
    member need not trade its body for a cheaper launch on fewer cores."""
    best = _two_phase_best(wl, target, TileOverride(), in_chain)
    return None if best is None else best[0]


def _grouped_widths(wl: DwSepWorkload, fit_w: int):
    """Per width of a grouped-form DW tile (the full output width, fit_w): (tw, the balanced
    heights whose input tile has at most MAX_STRIDE DataBlocks, units per tile height th -- tiles
    x groups of GROUP_BLOCKS channel blocks). Nothing where the grouped form is not legal."""
    if wl.stride != (1, 1) or wl.act1 not in GROUPED_ACTS:
        return
    kh, kw = wl.kernel
    groups = wl.batch * ceil_div(wl.c1, GROUP_BLOCKS)
    for tw in dict.fromkeys((wl.out_width, fit_w)):
        tiles_w = ceil_div(wl.out_width, tw)
        ths = [th for th in balanced_sizes(wl.out_height) if (th + kh - 1) * (tw + kw - 1) <= MAX_STRIDE]
        yield tw, ths, (lambda th, tiles_w=tiles_w: groups * tiles_w * ceil_div(wl.out_height, th))


def grouped_shapes(wl: DwSepWorkload, soc, fit_w: int) -> list[tuple[int, int]]:
    """DW tiles (th, tw) for the grouped form: per width (the full output width, fit_w) the
    tallest balanced height whose input tile has at most MAX_STRIDE DataBlocks, and the tallest
    that still gives every (half the) vector core(s) a unit of GROUP_BLOCKS channel blocks."""
    out = []
    for tw, ths, units in _grouped_widths(wl, fit_w):
        if not ths:
            continue
        out.append((ths[-1], tw))
        for want in (soc.vector_cores // 2, soc.vector_cores):
            fit = [th for th in ths if units(th) >= want]
            if fit:
                out.append((fit[-1], tw))
    return list(dict.fromkeys(out))


def round_shapes(wl: DwSepWorkload, soc, fit_w: int) -> list[tuple[int, int]]:
    """Grouped DW tiles whose units (tiles x groups of GROUP_BLOCKS channel blocks) leave the fewest
    core-rounds idle on the vector cores, two per width (ties: the taller): grouped_shapes keeps the
    tallest tiles, whose few units can leave most cores idle in the last round (MobileNetV2's
    576 -> 96 at 14x14 on 310P3: 7 x 14 gives 10 units on 8 cores, 5 x 14 gives 15)."""
    cores = soc.vector_cores
    out = []
    for tw, ths, units in _grouped_widths(wl, fit_w):
        def idle(th: int) -> float:
            slots = ceil_div(units(th), cores) * cores
            return (slots - units(th)) / slots

        out += [(th, tw) for th in sorted(ths, key=lambda th: (idle(th), -th))[:2]]
    return list(dict.fromkeys(out))


def _one_round_cib(wl: DwSepWorkload, soc, th: int, tw: int) -> int:
    """The fewest channel blocks a DW unit of th x tw may hold so that the units (tiles x channel
    groups) fill the vector cores in one round: a few big tiles with many channels (MnasNet's
    1152 -> 320 at 4x4 on 310P3: one tile, 72 blocks, 8 cores -> 9 blocks a unit) otherwise run
    c1 / 2 units of two blocks in c1 / (2 x cores) rounds."""
    tiles = wl.batch * ceil_div(wl.out_height, th) * ceil_div(wl.out_width, tw)
    return min(wl.c1, ceil_div(wl.c1, max(1, soc.vector_cores // tiles)))


def _two_phase_best(wl: DwSepWorkload, target: Target, override: TileOverride, body: bool = False,
                    norm_phase: bool | None = None):
    """(plan, modeled µs) of the fastest two-phase candidate, or None. body: rank by the time
    without the launch (the µs returned are still the whole time). norm_phase (a channel
    LayerNorm): the norm in the DW units (False) or in a phase of its own (True, schedules/
    norm_phase.py); None: both, the faster modeled wins."""
    if not two_phase_enabled(target, override) or "cube" not in pw_engines(target, wl.dtype):
        return None
    if target.kind == "ascend" and (needs_slope(wl.act1) or needs_slope(wl.act2)):
        log.info("%s: two-phase not considered: its Ascend C has no per-channel activation", wl.describe())
        return None
    if wl.ln_eps is None:
        norm_phase = False
    key = (wl, target.soc, override.double_buffer, body, norm_phase)
    if key in _TWO_PHASE_BEST:
        return _TWO_PHASE_BEST[key]
    if norm_phase is None or (wl.ln_eps is not None and override.double_buffer is None):
        # a norm in the DW unit holds all of C1 (schedules/channel_norm.py), so double buffering
        # halves the pixels a unit may hold, and the DW's instructions per unit do not shrink with its
        # pixels: the single-buffered tiles of twice the pixels compete too; and the norm phase
        # (the DW tile free of the norm) competes with both (the faster modeled wins)
        options = ((False,), (True,)) if norm_phase is None else ((norm_phase,),)
        dbs = (True, False) if override.double_buffer is None else (override.double_buffer,)
        found = []
        for (npf,) in options:
            for d in dbs:
                b = _two_phase_best(wl, target, replace(override, double_buffer=d), body, npf)
                if b is not None:
                    found.append(b)
                    if npf:
                        log.info("%s: norm phase %s, %.2f us modeled", wl.describe(),
                                 b[0].tile.describe(), b[1])
        _TWO_PHASE_BEST[key] = min(found, key=lambda b: b[1]) if found else None
        return _TWO_PHASE_BEST[key]

    soc = target.soc
    db = override.double_buffer is not False
    costs: dict = {}

    def timed(cand: TileConfig) -> tuple:
        plan = make_plan(wl, cand, soc)
        kc = model_block(plan, timeline=False) if plan.fits() else None
        return plan, kc.time_us if kc else float("inf"), kc.launch_us if kc and body else 0.0

    def cost(cand: TileConfig) -> float:
        """The candidate's modeled µs; where its N tile of PW weights would be resident in L1, the
        faster of that and its streamed twin (TileConfig.b_stream), whose plan it then stands for:
        the resident load at the kernel's start may cost a short GEMM phase more than it saves
        (MobileNetV2's head on 910B2 at batch 8: 6.45 us resident, 3.07 streamed; MODELED)."""
        if cand not in costs:
            costs[cand] = timed(cand)
            if costs[cand][0].b_resident and costs[cand][1] < float("inf"):
                twin = timed(replace(cand, b_stream=True))
                if twin[1] - twin[2] < costs[cand][1] - costs[cand][2]:
                    costs[cand] = twin
        return costs[cand][1] - costs[cand][2]

    # the DW tile (phase 1) x the GEMM tile's N (cob), then cib x cores
    cobs = [c for c in balanced_sizes(wl.co1) if c <= TWO_PHASE_MAX_COB]
    shapes = []
    for k in TWO_PHASE_TILES_PER_CORE:
        base = suggest_tile(wl, soc, like=TileConfig(1, 1, pw_engine="twophase", norm_phase=norm_phase),
                            min_tiles=max(1, round(k * soc.vector_cores)))
        if base is not None:
            shapes.append((base.th, base.tw))
    # tiles whose DW row fits one vector repeat (one tap instruction over the whole tile)
    fit_w = max(w for w in balanced_sizes(wl.out_width) if w <= tap_row_fit(soc) or w == 1)
    shapes += [(th, fit_w) for th in balanced_sizes(wl.out_height) if th * fit_w <= TWO_PHASE_MAX_DW_PIXELS][-4:]
    # wide tiles (the output's width or half of it) a few rows tall: fewer units, each DW tap one
    # instruction over more pixels (the wide form), the halo read once per row band; finalists of
    # their own, so the candidates above keep their places (the choice is never slower than without).
    # Not for an identity DW (1x1: a chain's GEMM stage, which runs gemm_only: no DW phase at all)
    wide = [(th, tw) for tw in dict.fromkeys((wl.out_width, ceil_div(wl.out_width, 2)))
            for th in [h for h in balanced_sizes(wl.out_height) if h * tw <= TWO_PHASE_MAX_WIDE_PIXELS][-3:]
            if not wl.pointwise_dw]
    # the grouped DW form's tiles (schedules/twophase.dw_grouped; grouped_shapes)
    pairs = [(hw, c) for hw in dict.fromkeys(shapes) for c in cobs]
    grouped = [(hw, c) for hw in grouped_shapes(wl, soc, fit_w) for c in cobs]
    if not pairs:
        _TWO_PHASE_BEST[key] = None
        return None
    # the best few (shape, cob) at the default cores, of the other shapes (one channel block a unit)
    # and of the grouped ones (a group of blocks a unit), then cib x cores for each: a shape that
    # loses on all cores can win on fewer (fewer cores launch faster)
    group = min(GROUP_BLOCKS, wl.c1)
    top = [(hw, cob, (1, min(2, wl.c1), _one_round_cib(wl, soc, *hw))) for hw, cob in
           sorted(pairs, key=lambda p: cost(TileConfig(*p[0], p[1], 1, db, "twophase", norm_phase=norm_phase)))
           [:TWO_PHASE_FINALISTS]]
    top += [(hw, cob, (group,)) for hw, cob in
            sorted(grouped, key=lambda p: cost(TileConfig(*p[0], p[1], group, db, "twophase",
                                                         norm_phase=norm_phase)))
            [:TWO_PHASE_GROUPED_FINALISTS]]
    # the shapes that fill the cores' rounds: finalists of their own, as the wide ones
    top += [(hw, cob, (group,)) for hw, cob in
            sorted([(hw, c) for hw in round_shapes(wl, soc, fit_w) for c in cobs],
                   key=lambda p: cost(TileConfig(*p[0], p[1], group, db, "twophase", norm_phase=norm_phase)))
            [:TWO_PHASE_ROUND_FINALISTS]]
    top += [(hw, cob, (1, min(2, wl.c1))) for hw, cob in
            sorted([(hw, c) for hw in dict.fromkeys(wide) for c in cobs],
                   key=lambda p: cost(TileConfig(*p[0], p[1], 1, db, "twophase", norm_phase=norm_phase)))
            [:TWO_PHASE_WIDE_FINALISTS]]
    final = min((TileConfig(*hw, cob, cib, db, "twophase", cores, norm_phase) for hw, cob, cibs in top
                 for cib, cores in product(dict.fromkeys(cibs), _two_phase_cores(soc))), key=cost)
    best = None if costs[final][1] == float("inf") else costs[final][:2]   # (plan, µs)
    if best is not None:
        log.info("%s: best two-phase tile %s, %.2f us modeled", wl.describe(), best[0].tile.describe(), best[1])
    _TWO_PHASE_BEST[key] = best
    return best
