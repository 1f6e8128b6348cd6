"""The fused kernel on the pipes: the lowered program (schedules/program.py) timed step by step."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from schedules.l2 import _L2, block_inputs_in_l2
from fusion.cost.pipes import CoreRun, CStage, _sim, with_prologue
from fusion.cost.primitives import ACC_BYTES, cycles_to_us
from fusion.cost.results import KernelCost, _Acc, _assemble
from fusion.cost.block_l2 import block_l2
from fusion.cost.steps import iteration_us, stages_of
from fusion.core.errors import UBOverflowError
from fusion.core.soc import SocSpec
from schedules.program_totals import dma_bytes
from schedules.footprint import fused_min_bytes
from schedules.plan import KernelPlan, check_budget, make_plan
from schedules.loop_stages import loop_pipeline
from schedules.program import resident_loads, tile_loops
from schedules.lowering import build_program
from schedules.workload import DwSepWorkload, TileConfig
from fusion.cost.twophase import model_twophase


def _add_counts(total: dict, counts: dict, times: int) -> None:
    for k, n in counts.items():
        total[k] = total.get(k, 0) + n * times



def pw_weights_resident(plan: KernelPlan) -> bool:
    """The plan decides (KernelPlan.pw_weights_resident); kept for importers."""
    return plan.pw_weights_resident


# part caches shared by the plans of one (workload, SoC): a tuner sweeps many tiles of one block
# and most of them share the DW steps (same th, tw, cib) or the PW steps (same th, tw, cob)
_PART_CACHES: dict[tuple, dict] = {}
_PART_CACHE_STEPS = 100_000   # steps kept over all parts (a few tens of MB at most)
_part_steps = 0


def _part_cache(wl: DwSepWorkload, soc: SocSpec) -> dict:
    global _part_steps
    if _part_steps > _PART_CACHE_STEPS:
        _PART_CACHES.clear()
        _part_steps = 0
    key = (wl, soc)
    d = _PART_CACHES.get(key)
    if d is None:
        if len(_PART_CACHES) >= 4:
            _PART_CACHES.clear()
            _part_steps = 0
        d = _PART_CACHES[key] = {}
    return d


def _fused_l2(f: "_Fused", in_l2: tuple[str, ...] = ()) -> _L2:
    """L2 of the one-phase kernel: the input is read once per tile with its halo, the DW weights
    and biases once per core, the PW weights once per core (resident) or once per tile (streamed);
    on 910B the DW result (and, without a Fixpipe epilogue, the pre-activation) makes a round trip
    through GM that L2 absorbs. The DMA bytes per kind are the program's."""
    dma = dma_bytes(f.plan, f.program)
    return block_l2(f.plan, dma, dma["output"], dma["residual"], dma["handoff"] // 2, f.decoupled, in_l2)


class _Fused:
    """Times the lowered program of a KernelPlan (schedules/program.py) on the pipes of its cores.

    Every iteration of a program loop becomes one simulated step: its GM -> chip copies on MTE2,
    its cube moves and GEMM on the cube, its vector ops (and the L0C -> UB move) on the vector
    unit, its chip -> GM copies on MTE3. A tile's steps are assembled from parts -- its loops by
    role and tile geometry, the resident loads of a core's first tile -- each timed once per
    (workload, SoC, tile sizes, part key) with its traffic and instruction counts; counts are
    merged as part x occurrences."""

    def __init__(self, plan: KernelPlan, l2: "_L2 | None | str" = "auto", in_l2: tuple[str, ...] = ()):
        self.plan = plan
        wl, soc = plan.workload, plan.soc
        self.wl, self.soc = wl, soc
        self.program = build_program(plan)
        self.th, self.tw = plan.th, plan.tw
        self.cib, self.cob = plan.cib, plan.cob
        self.copies = plan.tile.copies
        self.decoupled = plan.handoff_via_gm
        self.pw_on_cube = plan.pw_on_cube
        self.n_aic = plan.aic_cores
        self.active = plan.cores + self.n_aic
        self.resident_w = plan.pw_weights_resident
        self.fix_epi = plan.fixpipe_epilogue
        self.sync_us = cycles_to_us(soc, soc.cross_core_sync_cycles)
        self.tiles = list(self.program.tiles)
        self.set_l2(_fused_l2(self, in_l2) if l2 == "auto" else l2)

    def set_l2(self, l2: "_L2 | None") -> None:
        self.l2 = l2
        self.hit_in = dict(l2.hit_in) if l2 is not None else {}
        self.hit_out = dict(l2.hit_out) if l2 is not None else {}
        # what every part's durations depend on besides its own key (which holds the L2 hit
        # fractions of the traffic it moves)
        self.sig = (self.th, self.tw, self.copies, self.active)
        self.parts = _part_cache(self.wl, self.soc)
        self._used: dict[tuple, tuple] = {}     # part key -> (value, acc) used by this plan
        self._blocks: dict[tuple, tuple] = {}   # (kind, tile, first) -> (steps, part keys)

    # --- primitives ------------------------------------------------------------------------
    def dma(self, acc, kind, nbytes, bursts, direction, times=1) -> float:
        hit = (self.hit_in if direction == "in" else self.hit_out).get(kind, 0.0)
        return acc.dma(self.soc, kind, nbytes, bursts, direction, self.active, times, hit)

    def hits(self, *kinds: str) -> tuple[float, ...]:
        """L2 hit fractions (reads, then writes) of the given traffic kinds: part-key material."""
        return (*(self.hit_in.get(k, 0.0) for k in kinds), *(self.hit_out.get(k, 0.0) for k in kinds))

    def iteration_us(self, acc, it, times: int = 1) -> tuple[float, float, float, float, float]:
        """(MTE2, MTE1, cube, vector, MTE3) µs of one program iteration; counts go to acc x times."""
        return iteration_us(self.soc, self.wl.dtype, acc, it, times,
                            lambda s: self.dma(acc, s.kind, s.nbytes, s.bursts, s.direction, times))

    def _part(self, key: tuple, build):
        """(value, acc) of one part, built once per (workload, SoC, self.sig, key)."""
        global _part_steps
        full = (self.sig, *key)
        hit = self.parts.get(full)
        if hit is None:
            sub = _Acc()
            hit = self.parts[full] = (build(sub), sub)
            if isinstance(hit[0], tuple):
                _part_steps += len(hit[0])
        self._used[full] = hit
        return full, hit[0]

    # --- parts: a tile's loops as simulated steps ----------------------------------------------
    def _loop_steps(self, acc, role, r, c, epilogue: bool = False, shift: int = 0) -> tuple[tuple[CStage, ...], ...]:
        """The steps of one tile of a core of `role`: one per iteration of its program loops. On
        the AIV the DW loop and the epilogue loop (after the AIC's flags) are separate parts.
        `shift`: steps of another tile between this tile's ci and co loops (the 310P cube kernel's
        pipelining, seq): its Mmads wait for this tile's DW that much further back."""
        loops = tile_loops(self.plan, role, r, c)
        if role == "aiv":
            loops = loops[1:] if epilogue else loops[:1]
        timed = {}   # equal iterations (same block size) are timed once, counted per occurrence
        for loop in loops:
            for it, n in Counter(loop.iters).items():
                timed[it] = self.iteration_us(acc, it, n)
        steps = []
        for loop in loops:   # each iteration's stages: its loop's pipeline (schedules/loop_stages.py)
            pipeline = loop_pipeline(self.plan, role, loop.var)
            for q, it in enumerate(loop.iters):
                steps.append(stages_of(pipeline, it, timed[it], q, -(q + 1 + shift)))
        return tuple(steps)

    # --- tile blocks -----------------------------------------------------------------------
    def block(self, kind: str, t, first: bool, shift: int = 0) -> tuple:
        """(steps, part keys) of one tile of one core; kind: core | aiv | aic (the program's role).
        A core's first tile also carries its prologue (resident loads) on its first load. shift:
        see _loop_steps."""
        key = (kind, t, first, shift)
        hit = self._blocks.get(key)
        if hit is not None:
            return hit
        r, c = t
        ins, outs = (r[1], c[1]), (r[0], c[0])
        if kind == "aic":
            geo = (self.cob, *outs, *self.hits("handoff", "weights", "output"))
        elif kind == "aiv":
            geo = (self.cib, *ins, *self.hits("input", "handoff"))
        else:
            geo = (self.cib, self.cob, self.pw_on_cube, *ins, *outs,
                   *self.hits("input", "weights", "residual", "output"))
        k, steps = self._part((kind, shift, *geo), lambda a: self._loop_steps(a, kind, r, c, shift=shift))
        keys = (k,)
        if first:   # resident weights ride on the core's first load; the bias Casts on its first vector op
            pro = resident_loads(self.plan, kind)
            kr, t_pro = self._part(("res", pro, *self.hits("weights")), lambda a: self.iteration_us(a, pro))
            steps, keys = with_prologue(steps, t_pro, " + resident weights", " + bias casts"), keys + (kr,)
        hit = (steps, keys)
        self._blocks[key] = hit
        return hit

    def seq(self, kind: str, tiles, ready=None) -> tuple[list, dict]:
        """(simulation sequence, {part key: occurrences}) of one core's tiles (ready: the time
        each tile may start, for the AIC)."""
        if kind == "core" and self.pw_on_cube:
            return self._pipelined_seq(tiles)
        blk, counts = {}, Counter()
        for t, n in Counter(tiles[1:]).items():
            steps, keys = blk[t] = self.block(kind, t, False)
            for k in keys:
                counts[k] += n
        if ready is None:
            seq = [(k, 0.0, blk[t][0] if k else None) for k, t in enumerate(tiles)]
        else:
            seq = [(k, ready[k], blk[t][0] if k else None) for k, t in enumerate(tiles)]
        if tiles:
            steps, keys = self.block(kind, tiles[0], True)
            seq[0] = (0, seq[0][1], steps)
            for k in keys:
                counts[k] += 1
        return seq, counts

    def _pipelined_seq(self, tiles) -> tuple[list, dict]:
        """The 310P cube kernel's order (templates/cube_class.h Process): the ci loop (DW) of tile
        k, then the co loop (Mmads, epilogues) of tile k - 1; the last tile's co loop at the end.
        So the cube runs tile k - 1's Mmads while the vector unit computes tile k's DW."""
        n_ci, n = self.plan.ci_steps, len(tiles)
        counts: Counter = Counter()
        parts = []
        for k, t in enumerate(tiles):
            # steps between this tile's DW and its co-loop: the next tile's ci loop, or (the last
            # tile) the previous tile's co-loop
            shift = n_ci if k < n - 1 else (self.plan.co_steps if n > 1 else 0)
            steps, keys = self.block("core", t, k == 0, shift)
            for key in keys:
                counts[key] += 1
            parts.append((steps[:n_ci], steps[n_ci:]))
        seq = []
        for k, (ci, _co) in enumerate(parts):
            seq.append((k, 0.0, ci))
            if k:
                seq.append((k - 1, 0.0, parts[k - 1][1]))
        if parts:
            seq.append((len(parts) - 1, 0.0, parts[-1][1]))
        return seq, counts

    def epi_seq(self, work) -> tuple[list, dict]:
        """work: (ready time, local tile index, tile, q) -- the AIV's epilogue co-steps (910B
        without a Fixpipe epilogue), each after the AIC's flag for it. A tile's epilogue loop is
        one part (counted once per tile, at its first co-step)."""
        seq, counts = [], Counter()
        for ready, k, (r, c), q in work:
            key, steps = self._part(("epi", self.cob, r[0], c[0], *self.hits("handoff", "residual", "output")),
                                    lambda a: self._loop_steps(a, "aiv", r, c, epilogue=True))
            if q == 0:
                counts[key] += 1
            seq.append((k, ready, (steps[q],)))
        return seq, counts

    def merge(self, acc, total: dict) -> None:
        used = self._used
        for key, n in total.items():
            acc.merge(used[key][1], n)


def _mix_pass(f: _Fused, mine: dict, groups: dict, gates: dict, db: bool, cores: int):
    """One simulation of a 910B MIX launch: every AIV's DW tiles (each after its gate, if any),
    then every AIC's PW over its AIVs' tiles in the order their DW results are ready. Returns
    (AIV runs, {aic: (run, {(aiv, tile index): end})}, the AIVs' epilogue work, part counts)."""
    total: dict[tuple, int] = {}
    aiv: dict[int, CoreRun] = {}
    ready: dict[int, list[float]] = {}
    by_gates: dict[tuple, list[int]] = {}
    for key, ids in groups.items():
        for ci in ids:
            by_gates.setdefault((key, gates.get(ci)), []).append(ci)
    for (key, gate), ids in by_gates.items():
        seq, counts = f.seq("aiv", key, list(gate) if gate else None)
        run = _sim(seq, db)
        _add_counts(total, counts, len(ids))
        step_end, sync, n = run.step_end, f.sync_us, 0
        rdy = []
        for _k, _r, steps in seq:   # a tile's DW result is ready after its last ci-step
            n += len(steps)
            rdy.append(step_end[n - 1] + sync)
        for ci in ids:
            aiv[ci] = run
            ready[ci] = rdy
    aic: dict[int, tuple] = {}
    aic_cache: dict[tuple, tuple] = {}
    back: dict[int, list] = {ci: [] for ci in range(cores)}
    n_co = f.plan.co_steps
    prog = f.program
    for a in range(f.n_aic):
        served = [int(name[3:]) for name in prog.cores[cores + a].serves]
        key = tuple(mine[ci] for ci in served) + tuple(tuple(ready[ci]) for ci in served)
        if key not in aic_cache:
            # in the program's order (round k: tile k of each served AIV); the AIC's wait for
            # round k returns once every AIV of its group has flagged it (templates/aic_class.h)
            where = {t: (pos, k) for pos, ci in enumerate(served) for k, t in enumerate(prog.cores[ci].tiles)}
            placed = [where[t] for t in prog.cores[cores + a].tiles]
            gate: dict[int, float] = {}
            for pos, k in placed:
                gate[k] = max(gate.get(k, 0.0), ready[served[pos]][k])
            order = [(gate[k], pos, k) for pos, k in placed]
            seq, counts = f.seq("aic", [mine[served[pos]][k] for _t, pos, k in order],
                                [t for t, _pos, _k in order])
            aic_cache[key] = (_sim(seq, db), order, counts)
        run, order, counts = aic_cache[key]
        _add_counts(total, counts, 1)
        ends = {(served[pos], k): run.step_end[idx * n_co + n_co - 1] for idx, (_t, pos, k) in enumerate(order)}
        aic[a] = (run, ends)
        if f.fix_epi:
            continue
        for idx, (_t, pos, k) in enumerate(order):
            dst, t_k = back[served[pos]], mine[served[pos]][k]
            for q in range(n_co):
                dst.append((run.step_end[idx * n_co + q] + f.sync_us, k, t_k, q))
    return aiv, aic, back, total


def _lag_gates(f: _Fused, aic: dict, cores: int, lag: int) -> dict[int, tuple]:
    """Per AIV the earliest start of each of its tiles: tile k + 1 waits for the AIC's flag of
    tile k - lag (templates/aiv_class.h: Finish(k - LAG) before the next round)."""
    ends: dict[tuple, float] = {}
    for _run, e in aic.values():
        ends.update(e)
    out = {}
    for ci in range(cores):
        n = sum(1 for (c, _k) in ends if c == ci)
        if n > lag + 1:
            out[ci] = tuple(0.0 if k <= lag else ends[ci, k - 1 - lag] + f.sync_us for k in range(n))
    return out


def model_block(plan: KernelPlan, name: str = "fused_dwsep", timeline: bool = True) -> KernelCost:
    """model_fused of a block inside a network: its input (and residual) were written by the
    kernels before it and are in L2 when they fit (l2.block_inputs_in_l2) -- the rule every
    vendor-like kernel gets (fusion/cost/vendor_baseline.py). What bench, the tile policy, the tuner
    and the fallback compare."""
    return model_fused(plan, name, timeline, block_inputs_in_l2(plan.workload, plan.soc))


def model_fused(plan: KernelPlan, name: str = "fused_dwsep", timeline: bool = True,
                in_l2: tuple[str, ...] = ()) -> KernelCost:
    """Walk the plan's loop nest tile by tile and replay it through the pipes of every core.
    Cores that get the same sequence of tile shapes are simulated once. in_l2: input kinds an
    earlier kernel left in L2 (model_block; a chain member's, fusion/driver/chain.py); () = the kernel
    alone, every first touch from HBM."""
    if plan.two_phase:   # phases and barriers: its own timing (costmodel/twophase.py)
        return model_twophase(plan, name, timeline, in_l2)
    wl, soc, tile = plan.workload, plan.soc, plan.tile
    f = _Fused(plan, in_l2=in_l2)
    db = tile.double_buffer
    cores = plan.cores
    acc = _Acc()
    prog = f.program
    mine = {ci: tuple(f.tiles[t] for t in prog.cores[ci].tiles) for ci in range(cores)}
    groups: dict[tuple, list[int]] = {}
    for ci in range(cores):
        groups.setdefault(mine[ci], []).append(ci)
    notes = []
    if f.resident_w:
        notes.append("PW weights resident: one co-step, loaded once per core")
    runs: dict[str, CoreRun] = {}
    total: dict[tuple, int] = {}   # part key -> occurrences over all cores
    if not f.decoupled:
        for key, ids in groups.items():
            seq, counts = f.seq("core", key)
            run = _sim(seq, db)
            _add_counts(total, counts, len(ids))
            for ci in ids:
                runs[f"core{ci}"] = run
        launched = cores
    else:
        # the AIV runs at most MIX_LAG rounds ahead of its AIC (it waits for round k - LAG before
        # starting round k + 1): simulate freely, then again with those gates until they settle
        gates: dict[int, tuple] = {}
        for _ in range(4):
            aiv, aic, back, total = _mix_pass(f, mine, groups, gates, db, cores)
            new = _lag_gates(f, aic, cores, plan.mix_lag)
            if new == gates:
                break
            gates = new
        if not f.fix_epi:  # the AIV finishes act2 / residual after the cube
            epi_cache: dict[tuple, CoreRun] = {}
            dw_runs = dict(aiv)   # keeps every DW run alive while its id keys the cache
            for ci in range(cores):
                ekey = (id(dw_runs[ci]), tuple(back[ci]))
                seq, counts = f.epi_seq(back[ci])
                _add_counts(total, counts, 1)
                if ekey not in epi_cache:
                    epi_cache[ekey] = _sim(seq, db, dw_runs[ci].copy())
                aiv[ci] = epi_cache[ekey]
        aic = {a: run for a, (run, _ends) in aic.items()}
        runs = {**{f"aiv{ci}": aiv[ci] for ci in range(cores)},
                **{f"aic{a}": aic[a] for a in range(f.n_aic)}}
        launched = cores + f.n_aic
        notes.append(f"910B split: {cores} AIV (DW) + {f.n_aic} AIC (PW) exchange the DW result "
                     f"through GM; epilogue in {'Fixpipe' if f.fix_epi else 'the AIV (second hand-off)'}")
    f.merge(acc, total)
    mins = fused_min_bytes(wl)
    kh, kw = wl.kernel
    px = wl.batch * wl.out_height * wl.out_width
    dw_flops = 2 * px * wl.cin * kh * kw
    pw_flops = 2 * px * wl.cin * wl.cout
    vec_flops = dw_flops + (0 if plan.pw_on_cube else pw_flops)
    cube_flops = pw_flops if plan.pw_on_cube else 0
    return _assemble(name, soc, runs, acc, launched, sum(mins.values()), vec_flops, cube_flops,
                     ACC_BYTES, wl.dtype, {"dw": "vector", "pw": tile.pw_engine}, tile.describe(), notes,
                     timeline, f.l2, sum(mins[k] for k in in_l2))


def choose_engine(wl: DwSepWorkload, tile: TileConfig, soc: SocSpec) -> tuple[KernelPlan, KernelCost, str]:
    """Model the tile with PW on the vector unit and on the cube; keep the faster that fits."""
    results = {}
    for eng in ("vector", "cube"):
        plan = make_plan(wl, replace(tile, pw_engine=eng), soc)
        if plan.fits():
            results[eng] = (plan, model_block(plan))
    if not results:
        check_budget(make_plan(wl, replace(tile, pw_engine="vector"), soc))
        raise UBOverflowError(f"no PW engine fits tile {tile.describe()}")  # pragma: no cover
    best = min(results, key=lambda e: results[e][1].time_us)
    plan, cost = results[best]
    return plan, cost, engine_reason(best, {e: c for e, (_p, c) in results.items()}, soc)


def engine_reason(best: str, costs: dict[str, KernelCost], soc: SocSpec) -> str:
    """Why PW runs on `best`, from the modeled costs of the same tile sizes on each engine that
    fits (vector, cube); the cube's GM hand-off is named where it has one."""
    cost = costs[best]
    other = "cube" if best == "vector" else "vector"
    if other not in costs:
        return f"pw on {best}: {cost.time_us:.2f} us modeled; {other} does not fit the on-chip budget"
    why = f"pw on {best}: {cost.time_us:.2f} us modeled vs {other} {costs[other].time_us:.2f} us"
    hand = costs.get("cube")
    if hand is not None and hand.traffic["handoff"]:
        why += f" (cube pays {hand.traffic['handoff']:,} B of GM hand-off on {soc.name})"
    return why


def clear_part_caches() -> None:
    global _part_steps
    _PART_CACHES.clear()
    _part_steps = 0
