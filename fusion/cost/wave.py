"""A chain run in image chunks, timed step by step (schedules/wave.py). MODELED.

Each step's tasks -- one member's phase on one chunk for the AIVs, another for the AICs -- start
together after the SyncAll that ends the step before. A task is its phase of the member's chunk
program replayed through the in-order pipes as the two-phase timer does (fusion/cost/twophase.py:
its units on its cores, the GEMM's resident weights loaded at the phase's start, which in a chunk
has no DW phase of its own to hide behind). The two tasks share the GM bandwidth: a core of the
other task counts in a core's share in proportion to its GM bytes against one of this task's
(twophase.side_by_side, the rule of the flag-gated epilogue beside its GEMM). A task of two phases
(a GEMM stage joined to its producer's GEMM task, schedules/wave.py) lasts the two phases one after
the other, each timed from its own start (an upper bound, as chain_local charges the pair), and where
the stage does not follow its producer on the same cores, the barrier over the AICs between them,
charged as the hard SyncAll (the same unfitted constant: no device figure for mode-0 flags here).
A step lasts its longer task, and at least its bytes at the shared L2 bandwidth (results.l2_floor_us,
the floor of every kernel's body). A SyncAll ends every step but the last. Where the AICs' task loads
the next AIC task's resident weights (schedules/wave.ahead_loads), its cores load them in pieces after
their units, on their MTE2 at the task's share, and the task they are for runs warm.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fusion.cost.pipes import _sim, _st
from fusion.cost.results import _Acc, bandwidth_floors
from fusion.cost.twophase import (PhaseTimer, core_sequence, phase_l2, phase_to_l1, resident_stage, side_by_side,
                                   sync_all_us, with_reads_ahead)
from fusion.core.ir import C0
from schedules.isa import itemsize
from schedules.lowering import build_program
from schedules.wave import ahead_loads, chain_steps, member_plan, warm_tasks_all


@dataclass(frozen=True)
class WaveCost:
    chunks: int
    steps: tuple                  # schedules/wave.wave_steps
    step_us: tuple[float, ...]    # each step's time (its longer task or its bandwidth floor)
    body_us: float                # the steps, without the SyncAlls between them
    syncs: int                    # SyncAlls between steps
    aic_barriers: int = 0         # barriers over the AICs inside steps (joined stages; in body_us)
    joined: int = 0               # GEMM stages run in their producer's GEMM task (schedules/wave.py)
    ahead: int = 0                # GEMM tasks whose weights the AICs' task before loads (schedules/wave.ahead_loads)

    def describe(self) -> str:
        return (f"{self.chunks} image chunks in {len(self.steps)} steps (DW of one chunk beside the GEMM "
                f"of another): steps {self.body_us:.1f} us + {self.syncs} SyncAll")


def _busy(ph) -> int:
    return sum(1 for c in ph.assignment if c)


def _ahead_us(nplan, nprog, nk: int, active: float, in_l2: tuple[str, ...], acc: _Acc) -> dict[int, tuple]:
    """Per core: (us, bytes, bytes of a fractal) of the next member's resident PW weights (phase nk of its
    program) that the core loads beside its own units (schedules/wave.ahead_loads), at this task's share
    of the GM bandwidth and the next member's L2 hits; their traffic goes to acc."""
    ph = nprog.phases[nk]
    timer = PhaseTimer(nplan, phase_l2(nplan, nprog, in_l2), active)
    to_l1 = phase_to_l1(nplan, ph)
    frac = C0 * C0 * itemsize(nplan.workload.dtype)
    return {ci: (timer.iteration(acc, pre, 1, to_l1)[0], sum(st.nbytes for st in pre), frac)
            for ci, pre in enumerate(ph.preload) if pre}


def _task(plan, prog, k: int, active: float, in_l2: tuple[str, ...], warm: bool = False, ahead=None
          ) -> tuple[float, _Acc, object]:
    """(end us, its traffic, its L2) of phase k of `prog` from the step's start, `active` cores'
    worth sharing the GM bandwidth; warm: its resident PW weights are still in L1 from the AICs' task
    before (schedules/wave.warm_tasks_all), so they are not loaded again; ahead: (plan, program, phase,
    in_l2) of the next AIC task, whose resident weights each core loads in pieces after its units (the
    pieces of emit's AheadPiece: the core's share of fractals per unit), the rest after its last."""
    ph = prog.phases[k]
    db = plan.tile.double_buffer
    l2 = phase_l2(plan, prog, in_l2)
    timer = PhaseTimer(plan, l2, active)
    acc = _Acc()
    to_l1 = phase_to_l1(plan, ph)
    start = {}
    for ci, pre in enumerate(() if warm else ph.preload):   # the resident PW weights, at the phase's start
        if pre:
            t = timer.iteration(acc, pre, 1, to_l1)[0]
            start[ci] = _sim([(0, 0.0, ((_st("MTE2", t, resident_stage(pre)),),))], db)
    timed = {it: timer.iteration(acc, it, n, to_l1) for it, n in ph.iterations.items()}
    pro = timer.iteration(acc, ph.prologue, _busy(ph), to_l1)
    loads = _ahead_us(*ahead, acc) if ahead else {}
    end, cache, unit_steps = 0.0, {}, {}
    for ci in range(max(len(ph.assignment), max(loads, default=-1) + 1)):
        core = ph.assignment[ci] if ci < len(ph.assignment) else ()
        key = (tuple(core), ci in start, loads.get(ci))
        if key not in cache:
            seq = core_sequence(ph, core, unit_steps, timed, pro)
            if ci in loads:
                seq = _with_pieces(seq, *loads[ci])
            base = start[ci].copy() if ci in start else None
            cache[key] = _sim(seq, db, base) if seq else (base or _sim([], db))
        end = max(end, cache[key].end)
    return end, acc, l2


def _with_pieces(seq: list, us: float, nbytes: int, frac: int) -> list:
    """A core's sequence with a load of `nbytes` (us long alone) in pieces, one after each unit as
    AheadPiece issues them (fractal i of n after unit j of u where i < n (j + 1) / u), each on MTE2 after
    the unit's own loads; all of it as one step where the core has no unit."""
    if not seq:
        return [(0, 0.0, ((_st("MTE2", us, "next member's weights -> L1"),),))]
    n, u = nbytes // frac, len(seq)
    done, reads = 0, []
    for j in range(u):
        upto = n * (j + 1) // u
        reads.append((upto - done) * frac)
        done = upto
    return with_reads_ahead(seq, tuple(reads), lambda r: us * r / nbytes, "next member's weights -> L1")


def wave_cost(plans: list, in_l2: list[tuple[str, ...]]) -> WaveCost:
    """plans: the chain's member plans in order, each marked with the same `chunks`; in_l2: per
    member what of its chunk is in L2 when it runs (fusion/driver/chain.member_cost's rule)."""
    chunks = plans[0].chunks
    kplans = [member_plan(p) for p in plans]
    progs = [build_program(p) for p in kplans]
    steps = chain_steps(chunks, kplans, progs)
    warm = warm_tasks_all(steps, progs, kplans)
    ahead = ahead_loads(steps, progs, kplans)   # step -> the next AIC task its AICs load for
    soc = kplans[0].soc
    barrier = sync_all_us(soc)
    memo: dict = {}
    times, barriers = [], 0
    for s, step in enumerate(steps):
        ends: Counter = Counter()   # per role: its task's phases one after the other
        accs = []
        for m, k, _ in step:
            me = progs[m].phases[k]
            active = _busy(me) + sum(_busy(progs[m2].phases[k2]) * side_by_side(me, progs[m2].phases[k2])
                                     for m2, k2, _ in step if progs[m2].phases[k2].role != me.role)
            nxt = ahead[s][1] if s in ahead and me.role == "aic" else None
            key = (m, k, round(active, 6), (s, m, k) in warm, nxt and nxt[:2])
            if key not in memo:
                memo[key] = _task(kplans[m], progs[m], k, active, in_l2[m], (s, m, k) in warm,
                                  nxt and (kplans[nxt[0]], progs[nxt[0]], nxt[1], active, in_l2[nxt[0]]))
            t, acc, l2 = memo[key]
            ends[me.role] += t
            if kplans[m].joined and not kplans[m].local_in:   # the AICs' barrier before a joined stage
                ends[me.role] += barrier
                barriers += 1
            accs.append((acc, l2))
        end = max(ends.values())
        # the step's bytes at the shared L2 bandwidth: each task's floor, summed
        times.append(max(end, sum(bandwidth_floors(soc, acc, l2)[3] for acc, l2 in accs)))
    return WaveCost(chunks, steps, tuple(times), sum(times), len(steps) - 1, barriers,
                    sum(p.joined for p in kplans), len(ahead))


__all__ = ["WaveCost", "wave_cost"]
