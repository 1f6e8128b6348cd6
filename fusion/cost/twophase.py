"""The two-phase fused kernel on the pipes (schedules/program_twophase.py's steps, timed). MODELED.

Each phase's cores replay their units through the in-order pipes (costmodel/pipes.py); a SyncAll
(soc.sync_all_cycles) after the slowest core of a phase releases the next phase on every core (a
GEMM phase gated "local", plan.local_dw: each core starts it when its own pipes are done)
(310P: the same cores continue; 910B: the AICs start, then the AIVs continue for the epilogue).
The DW result and the 910B pre-activation make a round trip through a GM workspace that L2 holds
(costmodel/l2.py: absorbed when the kernel's working set fits), so they move at L2 bandwidth.
"""

from __future__ import annotations

from collections import Counter

from fusion.cost.pipes import CoreRun, _sim, _st, with_prologue
from fusion.cost.primitives import ACC_BYTES, cycles_to_us
from fusion.cost.results import KernelCost, _Acc, _assemble
from fusion.cost.block_l2 import block_l2
from fusion.cost.steps import iteration_us, stages_of
from schedules.footprint import fused_min_bytes
from schedules.plan import KernelPlan
from schedules.lowering import build_program
from schedules.program import Copy
from schedules.program_twophase import phase
from schedules.twophase import EPI_LAG
from fusion.core.soc import cube_side


def sync_all_us(soc) -> float:
    return cycles_to_us(soc, soc.sync_all_cycles)


def phase_l2(plan: KernelPlan, prog, in_l2: tuple[str, ...] = ()):
    """L2 of the two-phase kernel: the workspace (each byte written once) is its hand-off; each
    weight tensor its own hit fraction (block_l2)."""
    counts = prog.counts
    mins = fused_min_bytes(plan.workload)
    reads = {k: counts[f"read:{k}"] for k in ("input", "weights", "residual")}
    return block_l2(plan, reads, mins["output"], mins["residual"], counts["write:handoff"], True, in_l2,
                    prog.weight_reads, counts.get("read:handoff", 0))


class PhaseTimer:
    def __init__(self, plan: KernelPlan, l2, active: int):

        self.plan, self.soc = plan, plan.soc
        self.dtype = plan.workload.dtype
        self.l2, self.active = l2, active
        self.hit_in = dict(l2.hit_in) if l2 is not None else {}
        self.hit_out = dict(l2.hit_out) if l2 is not None else {}
        # the AIC's MTE2 (GM -> L1) has its own per-core bandwidth (as the vendor-like GEMM's)
        self.l1_side = cube_side(self.soc)

    def iteration(self, acc: _Acc, it, times: int, to_l1: bool) -> tuple[float, float, float, float, float]:
        """(MTE2, MTE1, cube, vector, MTE3) µs of one iteration; counts go to acc x times."""
        def copy_us(s) -> float:
            d = s.direction
            hits = self.hit_in if d == "in" else self.hit_out
            hit = hits.get(f"{s.kind}:{s.gm}", hits.get(s.kind, 0.0))   # per tensor where block_l2 gives one
            side = self.l1_side if (to_l1 and d == "in") else self.soc
            return acc.dma(side, s.kind, s.nbytes, s.bursts, d, self.active, times, hit)

        return iteration_us(self.soc, self.dtype, acc, it, times, copy_us)


def _unit_steps(phase, unit, timed) -> tuple:
    """One unit's iterations as simulated steps (compiled stages): the phase's pipeline (its
    builder's StageSpecs: pipe, label, queue and depth) with each pipe's time of the iteration
    (fusion/cost/steps.stages_of, the rule of every timer)."""
    return tuple(stages_of(phase.pipeline, it, timed[it], q) for q, it in enumerate(unit))


def core_sequence(ph, core, unit_steps: dict, timed, pro, ready: float = 0.0) -> list:
    """One core's units of phase `ph` as simulated steps, in order (unit_steps: a memo of each
    unit's steps by the unit tuple's id, for one phase and one `timed`): the phase's
    resident loads (its prologue) ride on the core's first load, a prologue op on the first stage
    of its pipe; the first unit starts at `ready`."""
    seq = []
    for j, u in enumerate(core):
        unit = ph.units[u]
        st = unit_steps.get(id(unit))   # units of one shape are one tuple (program_twophase): one entry
        if st is None:
            st = unit_steps[id(unit)] = _unit_steps(ph, unit, timed)
        if j == 0 and any(pro):
            st = with_prologue(st, pro)
        seq.append((j, ready if j == 0 else 0.0, st))
    return seq


def with_reads_ahead(seq: list, reads: tuple, mte2_us, label: str = "read ahead -> L2") -> list:
    """A core's sequence with its reads ahead into L2 (schedules/prefetch.py): after unit k the
    reads reads[k] as one step of its own on MTE2 (the kernel issues them after the unit's x block
    is queued, into a scratch no stage consumes), so they delay only the core's later loads."""
    out = []
    for (j, at, steps), r in zip(seq, reads):
        t = mte2_us(r) if r else 0.0
        out.append((j, at, steps + (((_st("MTE2", t, label),),) if t else ())))
    return out


def phase_to_l1(plan: KernelPlan, phase) -> bool:
    """The phase's loads go to L1 (the AIC's MTE2, with its own per-core bandwidth): its MTE2
    stage fills an L1 queue."""
    scope = {b.name: b.scope for b in plan.buffers}
    return any(scope.get(s.ring) == "L1" for s in phase.pipeline if s.pipe == "MTE2")


def resident_stage(pre) -> str:
    """A preload's timeline label: what it loads where."""
    return " + ".join(dict.fromkeys(f"{s.gm} -> {s.buffer}" for s in pre
                                    if isinstance(s, Copy) and s.direction == "in")) + " (resident)"


def _at_start(prog, launched: int) -> float:
    """Cores moving data at the kernel's start, which share the bandwidth with its start-time
    loads: every launched core, except that a flag-gated phase right behind the first phase (a
    gemm_only plan's epilogue AIVs, idle until the first tile) counts as it does beside that phase."""
    if len(prog.phases) > 1 and prog.phases[1].gate == "flags":
        first, cons = prog.phases[0], prog.phases[1]
        n = sum(1 for c in cons.assignment if c)
        return launched - n + n * side_by_side(first, cons)
    return launched


def side_by_side(producer, consumer) -> float:
    """The share weight of a flag-gated phase's core beside its producer's (see _Flagged)."""
    per = [_gm_bytes(ph) / max(1, sum(1 for c in ph.assignment if c)) for ph in (producer, consumer)]
    return min(1.0, per[1] / per[0]) if per[0] > 0 else 1.0


def _gm_bytes(ph) -> int:
    """GM bytes the copies of a phase's units move, over all its cores."""
    return sum(n * s.nbytes for it, n in ph.iterations.items() for s in it if isinstance(s, Copy))


class _Flagged:
    """A phase gated by cross-core flags (schedules/program_twophase.epi_phase), timed with its
    producer core by core: producer core g's tile j, then each consumer core g x ratio + s's unit
    for it -- ready when the producer's last step of the tile (the Fixpipe that writes it) ends
    and, from tile EPI_LAG on, the consumers' answer to tile j - EPI_LAG is in (the producer waits
    for it before it signals tile j). A consumer answers on MTE2 once its reads of the tile are
    done: the end of its MTE2 pipe after the unit. The producer's next tile is issued after that
    wait. The same flags the kernel sets and waits (twophase_epi_phase.h, twophase_fixpipe_pre.h)."""

    def __init__(self, producer, consumer, timer, acc, db: bool):
        self.ph, self.nxt, self.db = producer, consumer, db
        self.ratio = max(1, len(consumer.assignment) // max(1, len(producer.assignment)))
        self.n_busy = sum(1 for core in consumer.assignment if core)
        # the two phases run side by side and the shared GM level carries both one's and the
        # other's bytes: a consumer core counts in the per-core share (primitives.dma_bandwidth)
        # in proportion to its GM bytes against a producer core's, so where the share binds, the
        # pair takes (producer + consumer bytes) / the shared bandwidth -- not as if every
        # consumer core moved a producer core's bytes all the time
        self.weight = side_by_side(producer, consumer)
        self.first = float("inf")   # when the earliest consumer unit may start (the note)
        self.pending = (timer, acc)
        self.timed = self.pro = None

    def _time(self) -> None:
        """Time the consumer's iterations once, with the bandwidth sharing the caller has set."""
        timer, acc = self.pending
        nxt = self.nxt
        l1 = phase_to_l1(timer.plan, nxt)
        self.timed = {it: timer.iteration(acc, it, n, l1) for it, n in nxt.iterations.items()}
        self.pro = timer.iteration(acc, nxt.prologue, self.n_busy, l1)

    def members(self, ci: int) -> list[int]:
        return [c for c in range(ci * self.ratio, (ci + 1) * self.ratio) if c < len(self.nxt.assignment)]

    def key(self, ci: int, runs: dict) -> tuple:
        return tuple(id(runs.get(f"{self.nxt.role}{c}")) for c in self.members(ci))

    def run(self, ci: int, seq: list, base: CoreRun | None, runs: dict, ready: float):
        if self.timed is None:
            self._time()
        nxt, db = self.nxt, self.db
        members = {f"{nxt.role}{c}": nxt.assignment[c] for c in self.members(ci)}
        cons = {n: (runs[n].copy() if n in runs else None) for n in members}
        if any(self.pro):   # the resident bias (and its cast) before the first wait
            for n, units in members.items():
                if units:
                    cons[n] = _sim([(0, ready, ((_st("MTE2", self.pro[0], "b_pw (resident)"),
                                                 _st("vector", self.pro[2], "b_pw cast")),))], db, cons[n])
        run, answers = base, []
        for j, (tile, rdy, st) in enumerate(seq):
            if j > EPI_LAG:   # the wait for the answer to tile j - 1 - LAG held back tile j's issue
                rdy = max(rdy, answers[j - 1 - EPI_LAG])
            run = _sim([(tile, rdy, st)], db, run)
            signal = run.step_end[-1]   # the tile's Fixpipe
            if j >= EPI_LAG:
                signal = max(signal, answers[j - EPI_LAG])
            self.first = min(self.first, signal)
            answer = signal
            for n, units in members.items():
                steps = _unit_steps(nxt, nxt.units[units[j]], self.timed)
                cons[n] = _sim([(tile, signal, steps)], db, cons[n])
                answer = max(answer, cons[n].pipe_free["MTE2"])
            answers.append(answer)
        if run is None:
            run = _sim([], db)
        return run, {n: r for n, r in cons.items() if r is not None}


def phase_note(spans: list[tuple[str, float, float, str]], sync: float, preload_end: float) -> str:
    """Where a two-phase body's time goes: each phase's start and end on the critical path, the
    SyncAlls between (or, before a phase gated by cross-core flags, "per-tile flags": it starts
    with its producer's first tile and overlaps it; before one gated "local", "pipe barrier per
    core": each core starts it when its own pipes are done), and (910B) when the AICs' resident PW weights
    are in L1 -- a GEMM phase that starts later than its SyncAll waits for them (MODELED;
    docs/design.md, "Fused bodies vs pairs")."""
    text = ""
    for k, (n, a, b, gate) in enumerate(spans):
        if k:
            text += (f", SyncAll {sync:.2f} us, " if gate == "sync" else ", pipe barrier per core, " if gate == "local"
                     else ", per-tile flags, ")
        text += f"{n} {a:.2f}-{b:.2f} us"
    if preload_end > 0:
        text += f"; resident PW weights in L1 at {preload_end:.2f} us"
    return f"phases (MODELED): {text}"


def model_twophase(plan: KernelPlan, name: str = "fused_dwsep", timeline: bool = True,
                   in_l2: tuple[str, ...] = ()) -> KernelCost:
    wl, soc = plan.workload, plan.soc
    db = plan.tile.double_buffer
    prog = build_program(plan)
    l2 = phase_l2(plan, prog, in_l2)
    # a gemm_only plan still launches its MIX kernel's AIVs (the plan's cores)
    n_vec = max((len(ph.assignment) for ph in prog.phases if ph.role in ("aiv", "core")), default=plan.cores)
    n_aic = sum(len(ph.assignment) for ph in prog.phases if ph.role == "aic")
    if n_aic:   # a MIX launch of G groups holds G AICs and G x ratio AIVs (the GEMM may want more
        n_vec = max(n_vec, n_aic * plan.aic_ratio)   # AICs than the DW units' AIVs: twophase.gemm_cap)
    launched = n_vec + n_aic
    # vector cores the launch holds for the GEMM's AICs but the DW units do not reach move no data
    first = prog.phases[0]
    idle = n_vec - sum(1 for c in first.assignment if c) if first.role in ("aiv", "core") else 0
    timer = PhaseTimer(plan, l2, launched)
    acc = _Acc()
    sync = sync_all_us(soc)
    runs: dict[str, CoreRun] = {}
    # loads a phase's cores issue while the phases before run (the resident PW weights): on the
    # same cores (310P) queued on MTE2 after the core's first unit's first step of the first phase
    # of its role (the kernel issues them in that phase's loop: twophase_dw.h), so the barrier (a
    # soft SyncAll polls with DMA on that queue) waits for them; on other cores (910B AICs, or no
    # phase before: the DW phase's taps of its units' channel blocks) at the kernel's start, the
    # barrier not waiting
    pre_us: dict[str, tuple[float, str]] = {}
    idle_pre: list[str] = []   # 310P GEMM cores without a DW unit: they load at once (twophase_dw.h)
    for k, ph in enumerate(prog.phases):
        if not ph.preload:
            continue
        host = next(j for j, p in enumerate(prog.phases) if p.role == ph.role)
        inline = host < k
        before = prog.phases[host].assignment if inline else ()
        timer.active = (sum(1 for c in before if c) if inline else _at_start(prog, launched - idle))
        l1 = phase_to_l1(plan, ph)
        for ci, pre in enumerate(ph.preload):
            if pre:
                t = timer.iteration(acc, pre, 1, l1)[0]   # the AIC's B -> L1, the AIV's taps -> UB
                name_, what = f"{ph.role}{ci}", resident_stage(pre)
                if inline and ci < len(before) and before[ci]:
                    pre_us[name_] = (t, what)
                else:   # at the kernel's start (inline: no unit of the host phase, the barrier waits for it)
                    runs[name_] = _sim([(0, 0.0, ((_st("MTE2", t, what),),))], db)
                    if inline:
                        idle_pre.append(name_)
    preload_end = max((r.end for name_, r in runs.items() if name_.startswith("aic")), default=0.0)
    spans = []   # (phase, start, end, gate): where the body's time goes (the note below)
    ready = 0.0
    for k, ph in enumerate(prog.phases):
        if ph.gate == "flags":   # timed with its producer phase, tile by tile (_Flagged)
            continue
        nxt = prog.phases[k + 1] if k + 1 < len(prog.phases) else None
        flagged = _Flagged(ph, nxt, timer, acc, db) if nxt is not None and nxt.gate == "flags" else None
        to_l1 = phase_to_l1(plan, ph)
        n_busy = sum(1 for core in ph.assignment if core)
        # the phase's cores share the GM bandwidth (the others wait at SyncAll); a flag-gated
        # phase runs beside it and shares it too
        timer.active = n_busy + (flagged.n_busy * flagged.weight if flagged else 0)
        timed = {it: timer.iteration(acc, it, n, to_l1) for it, n in ph.iterations.items()}
        pro = timer.iteration(acc, ph.prologue, n_busy, to_l1)
        ahead = Counter(r for core in ph.prefetch for r in core if r)
        ahead_us = {r: timer.iteration(acc, r, n, True)[0] for r, n in ahead.items()}.get
        unit_steps = {}
        cache: dict[tuple, tuple] = {}
        end = ready
        local = ph.gate == "local"   # plan.local_dw: each core goes on when its own pipes are done
        starts = []
        for ci, core in enumerate(ph.assignment):
            name_ = f"{ph.role}{ci}"
            prev = runs.get(name_)
            if local:
                ready = prev.end if prev is not None else 0.0
                if core:
                    starts.append(ready)
            t_pre, what = pre_us.pop(name_, (0.0, ""))   # a later phase's loads ride in this (the host) phase
            reads = ph.prefetch[ci] if ph.prefetch else ()
            key = (tuple(core), id(prev), t_pre, reads) + (flagged.key(ci, runs) if flagged else ())
            hit = cache.get(key)
            if hit is None:
                seq = core_sequence(ph, core, unit_steps, timed, pro, ready)
                if reads:   # reads ahead into L2 after each unit, waited for by nothing but the SyncAll
                    seq = with_reads_ahead(seq, reads, ahead_us)
                if seq and t_pre:   # the next phase's resident loads, after the first step
                    st = seq[0][2]
                    seq[0] = (0, ready, (st[0], (_st("MTE2", t_pre, what),)) + st[1:])
                base = prev.copy() if prev is not None else None
                if flagged:
                    hit = flagged.run(ci, seq, base, runs, ready)
                else:
                    hit = (_sim(seq, db, base) if seq else (base or _sim([], db))), {}
                cache[key] = hit
            run, consumers = hit
            runs[name_] = run
            runs.update(consumers)
            end = max(end, run.end, *(r.end for r in consumers.values()))
        if k + 1 < len(prog.phases) and prog.phases[k + 1].preload:   # the soft SyncAll polls on MTE2
            end = max([end] + [runs[n].end for n in idle_pre])
        if flagged:
            spans.append((ph.name, ready, max(runs[n].end for n in prog.core_names(ph)), ph.gate))
            spans.append((nxt.name, flagged.first, end, nxt.gate))
        else:
            spans.append((ph.name, min(starts, default=0.0) if local else ready, end, ph.gate))
        ready = end + (sync if k + 1 < len(prog.phases) and prog.phases[k + 1].gate == "sync" else 0.0)
    dw, gemm = phase(prog, "dw"), phase(prog, "gemm")
    first = (f"DW on {len(dw.assignment)} {dw.role} -> GM workspace (L2)" if dw is not None
             else "no DW phase (identity DW: the GEMM reads x)")
    notes = [f"two-phase: {first}, {prog.barriers} SyncAll ({sync:.2f} us each, unfitted), GEMM {prog.m_tiles} x "
             f"{prog.n_tiles} tiles of {prog.bm} rows x {plan.cob} Cout blocks on "
             f"{len(gemm.assignment)} {gemm.role}, K in blocks of {prog.kb}"]
    notes.append(phase_note(spans, sync, preload_end))
    mins = fused_min_bytes(wl)
    kh, kw = wl.kernel
    px = wl.batch * wl.out_height * wl.out_width
    return _assemble(name, soc, runs, acc, launched, sum(mins.values()), 2 * px * wl.cin * kh * kw,
                     2 * px * wl.cin * wl.cout, ACC_BYTES, wl.dtype, {"dw": "vector", "pw": "cube"},
                     plan.tile.describe(), notes, timeline, l2, sum(mins[k] for k in in_l2) + plan.w_pw_warm)
