"""In-order pipe simulation of one core (MTE2, vector, cube, MTE3) with TQue buffer rings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from fusion.cost.primitives import PIPES, TIMELINE_TILES


@dataclass
class Stage:
    pipe: str
    us: float
    label: str
    buf: str | None = None    # buffer this stage fills; the next stage of the step consumes it
    copies: int = 2           # copies of that buffer (2 = ping/pong) when double-buffered
    after: int | None = None  # -n: the end of the step n places earlier on this core gates this stage


@dataclass
class PipeStep:
    tile: int                 # index of the tile within its core (for the timeline cap)
    stages: list[Stage]
    ready_at: float = 0.0     # absolute time before which the first stage may not start


@dataclass
class CoreRun:
    end: float
    busy: dict[str, float]
    events: list[tuple[str, float, float, str]]   # pipe, start, dur, label
    step_end: list[float]
    pipe_free: dict[str, float]
    rings: dict[str, list[float]]
    last_end: float
    intervals: list[tuple[float, float]] = field(default_factory=list)
    # runs of `_sim` record no intervals; `idle` replays (sequence, double_buffer, earlier replay)
    replay: tuple | None = None

    def copy(self) -> "CoreRun":
        return CoreRun(self.end, dict(self.busy), list(self.events), list(self.step_end),
                       dict(self.pipe_free), {k: list(v) for k, v in self.rings.items()},
                       self.last_end, list(self.intervals), self.replay)

    def busy_intervals(self) -> list[tuple[float, float]]:
        """(start, end) of every stage run on this core."""
        if self.replay is None:
            return self.intervals
        chain, rp = [], self.replay
        while rp is not None:
            chain.append(rp[:2])
            rp = rp[2]
        run = None
        for seq, db in reversed(chain):
            run = _sim(seq, db, run, record_tiles=0, intervals=True)
        return run.intervals

    @property
    def idle(self) -> float:
        """Time up to `end` when no pipe of the core is busy (timeline gaps)."""
        covered, cur_s, cur_e = 0.0, None, None
        for s, e in sorted(self.busy_intervals()):
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    covered += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            covered += cur_e - cur_s
        return max(0.0, self.end - covered)


def simulate(steps: list[PipeStep], double_buffer: bool, prev: CoreRun | None = None,
             record_tiles: int = TIMELINE_TILES) -> CoreRun:
    """Replay steps through the in-order pipes; `prev` continues an earlier run of the same core."""
    if prev is None:
        run = CoreRun(0.0, dict.fromkeys(PIPES, 0.0), [], [], dict.fromkeys(PIPES, 0.0), {}, 0.0)
    else:
        run = prev
    for st in steps:
        prev_end = st.ready_at
        pending: tuple[str, int] | None = None
        for stg in st.stages:
            if stg.us <= 0:
                continue
            start = max(run.pipe_free[stg.pipe], prev_end)
            if stg.after is not None:
                start = max(start, run.step_end[len(run.step_end) + stg.after])
            if not double_buffer:
                start = max(start, run.last_end)
            if stg.buf:
                ring = run.rings.setdefault(stg.buf, [])
                depth = stg.copies if double_buffer else 1
                if len(ring) >= depth:
                    start = max(start, ring[-depth])
            end = start + stg.us
            if pending is not None:  # this stage consumed the previous stage's buffer
                run.rings[pending[0]].append(end)
            pending = (stg.buf,) if stg.buf else None
            run.pipe_free[stg.pipe] = end
            run.busy[stg.pipe] += stg.us
            run.last_end = max(run.last_end, end)
            run.intervals.append((start, end))
            prev_end = end
            if st.tile < record_tiles:
                run.events.append((stg.pipe, start, stg.us, stg.label))
        if pending is not None:
            run.rings[pending[0]].append(prev_end)
        run.step_end.append(prev_end)
    run.end = run.last_end
    return run


# A compiled stage: (pipe, us, label, buf, copies, after) -- the fields of Stage as a tuple.
CStage = tuple


def _compile(stages: Iterable[Stage]) -> tuple[CStage, ...]:
    return tuple((s.pipe, s.us, s.label, s.buf, s.copies, s.after) for s in stages)


def _st(pipe: str, us: float, label: str, buf: str | None = None, copies: int = 2,
        after: int | None = None) -> CStage:
    """A compiled stage, built directly (Stage's fields, as a tuple)."""
    return (pipe, us, label, buf, copies, after)


def with_prologue(steps: tuple, pro: tuple[float, float, float, float, float], loads_label: str = " + resident",
                  vec_label: str = " + prologue") -> tuple:
    """A core's first steps with its prologue (compiled stages); pro: its (MTE2, MTE1, cube,
    vector, MTE3) µs (steps.iteration_us), each added to the first stage of its pipe: the resident
    loads to the first MTE2, the bias Casts to the first vector op, the cube operands' constant
    fills (InitConstValue) to the first cube stage, their UB -> L1 copy to the first MTE3 stage,
    L1 -> L0 loads to the first MTE1 stage."""
    left = dict(zip(("MTE2", "MTE1", "cube", "vector", "MTE3"), pro))
    label = {"MTE2": loads_label, "vector": vec_label, "cube": " + operand setup", "MTE3": " + operand setup",
             "MTE1": " + operand setup"}
    out = []
    for step in steps:
        new = []
        for stg in step:
            if left.get(stg[0]):
                stg, left[stg[0]] = (stg[0], stg[1] + left[stg[0]], stg[2] + label[stg[0]]) + stg[3:], 0.0
            new.append(stg)
        out.append(tuple(new))
    return tuple(out)


def _new_run() -> CoreRun:
    return CoreRun(0.0, dict.fromkeys(PIPES, 0.0), [], [], dict.fromkeys(PIPES, 0.0), {}, 0.0)


def _sim(seq, double_buffer: bool, run: CoreRun | None = None,
         record_tiles: int = TIMELINE_TILES, intervals: bool = False) -> CoreRun:
    """`simulate` on compiled steps, operation for operation (the same float additions in the
    same order, so bit-identical results; tests/cost/test_costmodel.py checks it against `simulate`).

    seq: (tile, ready_at, blocks) per tile, blocks a tuple of steps, each a tuple of compiled
    stages; ready_at gates the first step of the tile only. Busy intervals are only recorded
    with intervals=True; otherwise the run keeps what it needs to replay them (CoreRun.idle)."""
    if run is None:
        run = _new_run()
    elif run.intervals and run.replay is None:
        intervals = True   # continues a run that recorded its intervals: keep recording
    run.replay = None if intervals else (seq, double_buffer, run.replay)
    pipe_free, busy, rings = run.pipe_free, run.busy, run.rings
    step_end, events = run.step_end, run.events
    add_iv = run.intervals.append if intervals else None
    add_end = step_end.append
    last_end = run.last_end
    db = double_buffer
    for tile, ready, blocks in seq:
        rec = tile < record_tiles
        for stages in blocks:
            prev_end = ready
            ready = 0.0
            pending = None
            for pipe, us, label, buf, copies, after in stages:
                if us <= 0:
                    continue
                start = pipe_free[pipe]
                if prev_end > start:
                    start = prev_end
                if after is not None:
                    t = step_end[len(step_end) + after]
                    if t > start:
                        start = t
                if not db and last_end > start:
                    start = last_end
                if buf:
                    ring = rings.get(buf)
                    if ring is None:
                        ring = rings[buf] = []
                    depth = copies if db else 1
                    if len(ring) >= depth:
                        t = ring[-depth]
                        if t > start:
                            start = t
                end = start + us
                if pending is not None:
                    rings[pending].append(end)
                pending = buf or None
                pipe_free[pipe] = end
                busy[pipe] += us
                if end > last_end:
                    last_end = end
                if add_iv is not None:
                    add_iv((start, end))
                prev_end = end
                if rec:
                    events.append((pipe, start, us, label))
            if pending is not None:
                rings[pending].append(prev_end)
            add_end(prev_end)
    run.last_end = last_end
    run.end = last_end
    return run
