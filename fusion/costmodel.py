"""Analytic cost model of the simulated Ascend target. Every figure it produces is MODELED.

Everything is derived from a KernelPlan (tile sizes, loop trip counts, buffers and their copies,
the PW engine) and the SoC table in fusion/soc.py; nothing is written per shape.

Primitive costs (cycles -> µs at `soc.clock_ghz`):

  DMA     t = ceil(bursts / dma_max_bursts) · dma_setup_cycles
              + bytes · (1 - h) / (bw_hbm · eff) + bytes · h / (bw_l2 · eff)
          bw_x = min(per-core bw of the direction, x_gbps / active DMA cores), x = hbm | l2
          h   = the fraction of the transfer's bytes L2 serves (see "L2" below; 0 = all HBM)
          eff = dma_short_burst_efficiency when the mean burst < dma_short_burst_bytes, else 1
          A row of a tile (w·C0 elements) is one contiguous burst in NC1HWC0; a tile that spans
          the full width is one burst per channel block.
  vector  t = instrs · vector_instr_cycles + repeats / vector_repeats_per_cycle
          one repeat = 256 B of the widest operand (64 fp32 / 128 fp16 lanes); one instruction
          covers one contiguous row of up to max_repeat repeats. Accumulating ops (DW taps, PW
          MACs) run at the fp32 accumulator width, as the plan's dw_acc / pw_acc are fp32.
  cube    t = fractals · cycles per fractal (1 for fp16, cube_fp32_cycles_per_fractal for fp32)
              + MTE1 moves L1→L0A / L1→L0B (bytes / bytes-per-cycle)
          fractals = ceil(m / 16) · k-blocks · n-blocks

Per core the steps of the loop nest (schedules/dwsep_schedule.py) are replayed through four
in-order pipes MTE2 (GM→UB/L1), vector, cube, MTE3 (UB→GM, Fixpipe). A stage that fills a
buffer waits until the consumer of the same buffer `copies` uses back has finished (TQue
semantics: 2 copies = ping/pong). With double buffering this gives, for a run of equal steps,
exactly  first load + (n-1)·max(load, compute, store) + last compute + store;  without it the
model serialises every stage (the sum). Tiles go round-robin to `plan.cores` cores.

The fused loop nest per tile: per ci-step an input-tile DMA (halo rows/columns outside the image
are not read; a Duplicate fills the padding) and the DW on the vector unit (per tap one
multiply-add per output row, then bias, act1 and the cast); per co-step the PW weight block DMA
(hoisted out of the tile loop when there is a single co-step: loaded once per core, like the
resident w_dw, b_dw, b_pw), the residual tile, the PW and its epilogue (bias, act2, cast,
+residual), the output DMA. PW on the vector unit: one multiply-add instruction per input
channel and output-channel block over the th·tw·C0 fp32 accumulator (the broadcast of the input
channel is not counted: the plan has no buffer for it). PW on the cube of a coupled chip (310P):
UB→L1→L0A of the DW result once per tile, L1→L0B of the weight block, mmad, L0C→UB and the
epilogue on the vector unit. PW on the cube of 910B: the AIV cores write the DW result to GM, the
AIC cores (one per vector_cores/cube_cores AIVs) read it after a cross-core flag, run the GEMM
and write y through Fixpipe (bias + relu on the fly); any other act2 or a residual sends the
pre-activation back through GM to the AIV for the epilogue. All of that traffic is "handoff".

Kernel time = launch (launch_base_us + launch_per_core_us · cores launched)
            + max(busiest core, HBM bytes / hbm bandwidth, DMA bytes / l2 bandwidth).
Bottleneck classes (after the seed's table, 000_*): launch-bound (launch >= body), memory-bound,
compute-bound (vector|cube), pipeline-bubbles (the busiest core idles > 10 % with no pipe busy).

L2 (MODELING ASSUMPTIONS, _l2_policy): every GM access goes through L2. Per kernel, the first
read of each byte of a tensor (input windows' union, each weight tensor, the residual) comes
from HBM; every re-read inside the kernel -- PW weights loaded by every core or per tile, input
halos, DW taps loaded per core -- hits L2, provided the kernel's working set (every tensor it
touches, the 910B hand-off buffer included) fits in soc.l2_bytes; otherwise every DMA byte is
charged to HBM (conservative). L2 is write-back: the output is written to HBM once; the 910B
AIV->AIC hand-off (and pre-activation round trip) is written to L2 and consumed while resident,
so it never reaches HBM when the working set fits. A kernel boundary flushes L2: an unfused
kernel's intermediate reaches HBM and the next kernel's first read of it comes from HBM. For
timing, each traffic kind's DMAs get the kernel-average hit fraction h = 1 - unique / DMA bytes;
hits share l2_gbps, misses hbm_gbps, and the per-core MTE2/MTE3 bandwidth caps both.
gm_read_bytes / gm_write_bytes / traffic_ratio keep counting every DMA byte (MTE2/MTE3);
hbm_read_bytes / hbm_write_bytes / hbm_traffic_ratio count what reaches HBM, l2_hit_bytes the
rest. fusion/traffic.py gives the fused DMA bytes in closed form (tested equal) and the DMA
floor any plan on N cores must pay.

Not modeled: bank conflicts, scalar overhead, K-streaming through L0A (the plan keeps all of C1
of the cube's A operand in L0A), L2 set conflicts and other tenants of L2, partial L2 reuse
when the working set exceeds it.

Roofline bound = max(minimal GM bytes / hbm bandwidth, FLOPs / peak of the units used), where
minimal GM bytes = input + all weights and biases + residual + output, each once (NC1HWC0,
channel tails padded). The modeled HBM bytes are never below it.

Speed (the same results, bit for bit, as a plain replay): cores with the same tile sequence are
simulated once; a tile's steps are built from parts (ci-steps, co-steps, resident loads) shared
by every plan of the same workload and SoC; the unfused kernels' tile searches model tiles in
order of a lower bound and skip those whose bound exceeds the best time found; model_unfused is
memoized per (workload, SoC, variant). tests/test_costmodel.py pins all of it against the
straightforward paths.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Iterable

import numpy as np

from fusion.errors import UBOverflowError
from fusion.ir import C0
from fusion.soc import SocSpec
from schedules.isa import (  # noqa: F401  (the primitives importers take from here)
    ACC_BYTES,
    ACT_OPS,
    VecWork,
    cube_cycles,
    cube_fractals,
    itemsize,
    vec_op,
)
from schedules.plan import KernelPlan, align, check_budget, make_plan
from schedules.program import axis as _axis  # noqa: F401  (importers)
from schedules.program import rows_bursts as _rows_bursts  # noqa: F401
from schedules.program import split as _split  # noqa: F401
from schedules.program import tile_axes as _tile_axes
from schedules.program import (
    Copy,
    CubeOp,
    Move,
    VectorOp,
    build_program,
    dw_vector_ops,
    epilogue_vector_ops,
    resident_loads,
    split,
    _tile_loops_cached,
    tile_loops,
    total_work,
)
from schedules.workload import DwSepWorkload, TileConfig, ceil_div

PIPES = ("MTE2", "vector", "cube", "MTE3")
MODELED = "modeled"
TIMELINE_TILES = 2  # timeline events are recorded for the first N tiles of every core


# --------------------------------------------------------------------------------------------
# primitive costs
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


# --------------------------------------------------------------------------------------------
# pipe simulation
# --------------------------------------------------------------------------------------------
@dataclass
class Stage:
    pipe: str
    us: float
    label: str
    buf: str | None = None    # buffer this stage fills; the next stage of the step consumes it
    copies: int = 2           # copies of that buffer (2 = ping/pong) when double-buffered
    after: int | None = None  # -n: the end of the step n places earlier on this core gates this stage


@dataclass
class Step:
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


def simulate(steps: list[Step], double_buffer: bool, prev: CoreRun | None = None,
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


def _new_run() -> CoreRun:
    return CoreRun(0.0, dict.fromkeys(PIPES, 0.0), [], [], dict.fromkeys(PIPES, 0.0), {}, 0.0)


def _sim(seq, double_buffer: bool, run: CoreRun | None = None,
         record_tiles: int = TIMELINE_TILES, intervals: bool = False) -> CoreRun:
    """`simulate` on compiled steps, operation for operation (the same float additions in the
    same order, so bit-identical results; tests/test_costmodel.py checks it against `simulate`).

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


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Event:
    core: str
    pipe: str
    start_us: float
    dur_us: float
    label: str


@dataclass(frozen=True)
class KernelCost:
    """Modeled cost of one kernel. `roofline_pct` = 100 · time_us / roofline_us (>= 100 %;
    100 % would be a kernel at its roofline bound)."""

    name: str
    soc: str
    time_us: float
    launch_us: float
    body_us: float
    per_pipe_us: dict[str, float]            # busy time of each pipe on its busiest core
    per_core: dict[str, dict[str, float]]    # core -> {pipe busy..., "end": finish time}
    gm_read_bytes: int
    gm_write_bytes: int
    traffic: dict[str, int]                  # input, weights, residual, output, handoff, intermediate
    min_gm_bytes: int
    flops: int
    roofline_us: float
    roofline_pct: float
    bottleneck: str
    bottleneck_detail: str
    engine: dict[str, str]                   # stage -> vector | cube
    cores_used: int
    counts: dict[str, float]                 # totals over all cores: dma, bursts, instrs, repeats, fractals
    timeline: tuple[Event, ...]
    timeline_note: str
    tile: str = ""
    notes: tuple[str, ...] = ()
    label: str = MODELED
    # L2 / HBM split of the DMA traffic above (gm_* count every byte MTE2/MTE3 move; these count
    # what reaches HBM): first reads of each tensor and the writes L2 writes back; see _l2_policy
    hbm_read_bytes: int = 0
    hbm_write_bytes: int = 0
    l2_hit_bytes: int = 0                    # DMA bytes L2 serves without an HBM transfer
    hbm_traffic: dict[str, int] = field(default_factory=dict)   # per traffic kind, read + write
    l2_working_set_bytes: int = 0            # every tensor the kernel touches
    l2_fits: bool = False                    # working set <= soc.l2_bytes (else no L2 hits)

    @property
    def gm_bytes(self) -> int:
        return self.gm_read_bytes + self.gm_write_bytes

    @property
    def traffic_ratio(self) -> float:
        """DMA (MTE2 + MTE3) bytes / minimal bytes."""
        return self.gm_bytes / self.min_gm_bytes if self.min_gm_bytes else float("nan")

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def hbm_traffic_ratio(self) -> float:
        """HBM bytes / minimal bytes: the traffic that reaches HBM after L2 hits."""
        return self.hbm_bytes / self.min_gm_bytes if self.min_gm_bytes else float("nan")

    def as_dict(self) -> dict:
        return {
            "name": self.name, "label": self.label, "soc": self.soc, "tile": self.tile,
            "time_us": self.time_us, "launch_us": self.launch_us, "body_us": self.body_us,
            "per_pipe_us": dict(self.per_pipe_us), "per_core": {k: dict(v) for k, v in self.per_core.items()},
            "gm_read_bytes": self.gm_read_bytes, "gm_write_bytes": self.gm_write_bytes,
            "gm_bytes": self.gm_bytes, "traffic": dict(self.traffic), "min_gm_bytes": self.min_gm_bytes,
            "traffic_ratio": self.traffic_ratio, "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes, "hbm_bytes": self.hbm_bytes,
            "l2_hit_bytes": self.l2_hit_bytes, "hbm_traffic": dict(self.hbm_traffic),
            "hbm_traffic_ratio": self.hbm_traffic_ratio, "l2_working_set_bytes": self.l2_working_set_bytes,
            "l2_fits": self.l2_fits, "flops": self.flops, "roofline_us": self.roofline_us,
            "roofline_pct": self.roofline_pct, "bottleneck": self.bottleneck,
            "bottleneck_detail": self.bottleneck_detail, "engine": dict(self.engine),
            "cores_used": self.cores_used, "counts": dict(self.counts), "notes": list(self.notes),
            "timeline_note": self.timeline_note,
            "timeline": [e.__dict__.copy() for e in self.timeline],
        }


@dataclass(frozen=True)
class UnfusedCost:
    variant: str
    time_us: float
    gm_bytes: int
    kernels: tuple[KernelCost, ...]
    label: str = MODELED

    @property
    def launch_us(self) -> float:
        return sum(k.launch_us for k in self.kernels)

    @property
    def hbm_bytes(self) -> int:
        """What reaches HBM over all kernels (each intermediate written and read back)."""
        return sum(k.hbm_bytes for k in self.kernels)

    def as_dict(self) -> dict:
        return {"variant": self.variant, "label": self.label, "time_us": self.time_us,
                "gm_bytes": self.gm_bytes, "hbm_bytes": self.hbm_bytes, "launch_us": self.launch_us,
                "kernels": [k.as_dict() for k in self.kernels]}


class _Acc:
    """Accumulates traffic and instruction counts while steps are built."""

    def __init__(self):
        self.traffic = {"input": 0, "weights": 0, "residual": 0, "output": 0,
                        "handoff": 0, "intermediate": 0}
        self.read = dict.fromkeys(self.traffic, 0)   # the reads among `traffic`, per kind
        self.reads = 0
        self.writes = 0
        self.counts = {"dma_transfers": 0, "dma_bursts": 0, "vector_instrs": 0,
                       "vector_repeats": 0, "cube_fractals": 0}

    def dma(self, soc, kind, nbytes, bursts, direction, active, times=1, hit=0.0) -> float:
        if nbytes <= 0:
            return 0.0
        self.traffic[kind] += nbytes * times
        if direction == "in":
            self.reads += nbytes * times
            self.read[kind] += nbytes * times
        else:
            self.writes += nbytes * times
        self.counts["dma_transfers"] += ceil_div(max(1, bursts), soc.dma_max_bursts) * times
        self.counts["dma_bursts"] += max(1, bursts) * times
        return dma_us(soc, nbytes, bursts, direction, active, hit)

    def vec(self, soc, work: VecWork, times=1) -> float:
        self.counts["vector_instrs"] += work.instrs * times
        self.counts["vector_repeats"] += work.repeats * times
        return cycles_to_us(soc, work.cycles(soc))

    def cube(self, soc, fractals, dtype, times=1) -> float:
        self.counts["cube_fractals"] += fractals * times
        return cycles_to_us(soc, cube_cycles(soc, fractals, dtype))

    def merge(self, other: "_Acc", times: int) -> None:
        for k, v in other.traffic.items():
            self.traffic[k] += v * times
        for k, v in other.read.items():
            self.read[k] += v * times
        for k, v in other.counts.items():
            self.counts[k] += v * times
        self.reads += other.reads * times
        self.writes += other.writes * times


def _launch_us(soc: SocSpec, cores: int) -> float:
    return soc.launch_base_us + soc.launch_per_core_us * cores


def _vector_peak_flops_per_us(soc: SocSpec, elem_bytes: int) -> float:
    lanes = soc.vector_repeat_bytes / elem_bytes
    return 2 * lanes * soc.vector_repeats_per_cycle * soc.clock_ghz * 1e3 * soc.vector_cores


def _cube_peak_flops_per_us(soc: SocSpec, dtype: str) -> float:
    m, k, n = soc.cube_fractal
    per_cycle = 2 * m * k * n / cube_cycles(soc, 1, dtype)
    return per_cycle * soc.clock_ghz * 1e3 * soc.cube_cores


def _classify(launch: float, body: float, floor: float, runs: dict[str, CoreRun],
              floor_what: str = "total GM bytes at HBM bandwidth") -> tuple[str, str]:
    """Bottleneck class after the seed's table (000_*): 调度开销 (launch), 调度空洞 (idle > 10 %),
    访存受限 (memory), 计算受限 (vector / cube)."""
    if launch >= body:
        return "launch-bound", f"launch/head cost {launch:.2f} us >= kernel body {body:.2f} us (调度开销)"
    crit = max(runs, key=lambda c: runs[c].end)
    run = runs[crit]
    if floor >= run.end:
        return "memory-bound", (f"{floor_what} ({floor:.2f} us) exceed the busiest "
                                f"core ({run.end:.2f} us) (访存受限)")
    pipe = max(PIPES, key=lambda p: run.busy[p])
    idle = run.idle / run.end if run.end else 0.0
    detail = (f"{crit}: {pipe} busy {100 * run.busy[pipe] / run.end:.0f}% of {run.end:.2f} us, "
              f"all pipes idle {100 * idle:.0f}%")
    if idle > 0.10:
        return "pipeline-bubbles", detail + " (idle > 10%: 调度空洞)"
    if pipe in ("MTE2", "MTE3"):
        return "memory-bound", detail + " (访存受限)"
    return f"compute-bound ({pipe})", detail + " (计算受限)"


@dataclass(frozen=True)
class _L2:
    """What L2 serves in one kernel (see _l2_policy)."""

    fits: bool                      # the kernel's working set fits in L2
    working_set: int                # bytes of every tensor the kernel touches
    unique: dict[str, int]          # kind -> bytes read from HBM (first touches) when it fits
    hit_in: dict[str, float]        # kind -> fraction of its read DMA bytes served by L2 (timing)
    hit_out: dict[str, float]       # kind -> fraction of its write DMA bytes absorbed by L2 (timing)
    absorbed: tuple[str, ...] = ()  # kinds written and consumed inside the kernel (never reach HBM)


def _l2_policy(soc: SocSpec, working_set: int, unique: dict[str, int],
               dma_reads: dict[str, int] | None = None, absorbed: tuple[str, ...] = ()) -> _L2:
    """L2 model of one kernel (MODELING ASSUMPTIONS, not measured):
    - every GM access goes through L2; the first read of each byte of a tensor comes from HBM
      (`unique`: input windows' union, each weight tensor once, the residual once); any re-read of
      it inside the kernel (another core's copy of the weights, a halo row, a streamed weight block
      of the next tile) hits L2 -- provided the kernel's working set (all tensors it touches) fits
      in soc.l2_bytes (fully associative LRU: a re-read's reuse distance is below the working set);
    - L2 is write-back: the output is written to HBM once; an intermediate written and read back
      inside the kernel (the 910B AIV->AIC hand-off, `absorbed`) is consumed while resident and
      never reaches HBM (its eventual eviction of dead dirty lines is not charged);
    - if the working set exceeds L2 every DMA byte is charged to HBM (conservative: no hits).
    `dma_reads` (kind -> read DMA bytes) sets the hit fraction used for timing: a kind's DMAs all
    get the same fraction 1 - unique / DMA bytes (the kernel's average)."""
    fits = working_set <= soc.l2_bytes
    hit_in: dict[str, float] = {}
    hit_out: dict[str, float] = {}
    if fits:
        for k, d in (dma_reads or {}).items():
            u = unique.get(k, d)
            if d > 0 and u < d:
                hit_in[k] = 1.0 - u / d
        for k in absorbed:
            hit_in[k] = hit_out[k] = 1.0
    return _L2(fits, working_set, dict(unique), hit_in, hit_out, tuple(absorbed) if fits else ())


def _assemble(name: str, soc: SocSpec, runs: dict[str, CoreRun], acc: _Acc, launched: int,
              min_bytes: int, vec_flops: int, cube_flops: int, vec_elem_bytes: int, dtype: str,
              engine: dict[str, str], tile: str = "", notes: Iterable[str] = (),
              timeline: bool = True, l2: _L2 | None = None) -> KernelCost:
    launch = _launch_us(soc, launched)
    core_max = max(r.end for r in runs.values())
    total = acc.reads + acc.writes
    # HBM / L2 split of the DMA traffic (l2=None: no L2 model, every byte is HBM traffic)
    rd = acc.read
    wr = {k: v - rd[k] for k, v in acc.traffic.items()}
    if l2 is None or not l2.fits:
        hbm_rd, hbm_wr = dict(rd), wr
    else:
        uniq = {**l2.unique, **dict.fromkeys(l2.absorbed, 0)}
        hbm_rd = {k: min(v, uniq.get(k, v)) for k, v in rd.items()}
        hbm_wr = {k: 0 if k in l2.absorbed else v for k, v in wr.items()}
    hbm_read, hbm_write = sum(hbm_rd.values()), sum(hbm_wr.values())
    hbm_traffic = {k: hbm_rd[k] + hbm_wr[k] for k in acc.traffic}
    # shared-bandwidth floors: HBM bytes at HBM bandwidth, every DMA byte at L2 bandwidth
    floor_hbm = (hbm_read + hbm_write) / (soc.hbm_gbps * 1e3)
    floor_l2 = total / (soc.l2_gbps * 1e3)
    floor = max(floor_hbm, floor_l2)
    if floor_l2 > floor_hbm:
        what = "all DMA bytes at L2 bandwidth"
    elif hbm_read + hbm_write < total:
        what = "HBM bytes (L2 hits excluded) at HBM bandwidth"
    else:
        what = "total GM bytes at HBM bandwidth"
    body = max(core_max, floor)
    time = launch + body
    per_pipe = {p: max(r.busy[p] for r in runs.values()) for p in PIPES}
    rows = {}
    for r in runs.values():   # cores that share a run share its numbers
        if id(r) not in rows:
            rows[id(r)] = {**{p: r.busy[p] for p in PIPES}, "end": r.end}
    per_core = {c: dict(rows[id(r)]) for c, r in runs.items()}
    mem_us = min_bytes / (soc.hbm_gbps * 1e3)
    comp_us = max(vec_flops / _vector_peak_flops_per_us(soc, vec_elem_bytes),
                  cube_flops / _cube_peak_flops_per_us(soc, dtype) if cube_flops else 0.0)
    roof = max(mem_us, comp_us)
    cls, detail = _classify(launch, body, floor, runs, what)
    if l2 is not None and l2.fits and hbm_read + hbm_write < total:
        notes = (*notes, f"L2: working set {l2.working_set / 2**20:.2f} MiB fits {soc.l2_bytes / 2**20:.0f} MiB; "
                         f"{total - hbm_read - hbm_write:,} B of re-reads / hand-off served by L2")
    if timeline:
        events = tuple(Event(c, p, s, d, lab) for c, r in runs.items() for (p, s, d, lab) in r.events)
        note = (f"events of the first {TIMELINE_TILES} tiles of each core; "
                f"times from kernel start, launch ({launch:.2f} us) excluded")
    else:
        events, note = (), "timeline not recorded"

    return KernelCost(
        name=name, soc=soc.name, time_us=time, launch_us=launch, body_us=body, per_pipe_us=per_pipe,
        per_core=per_core, gm_read_bytes=acc.reads, gm_write_bytes=acc.writes, traffic=dict(acc.traffic),
        min_gm_bytes=min_bytes, flops=vec_flops + cube_flops, roofline_us=roof,
        roofline_pct=100.0 * time / roof if roof else float("inf"), bottleneck=cls,
        bottleneck_detail=detail, engine=engine, cores_used=len(runs), counts=dict(acc.counts),
        timeline=events, timeline_note=note, tile=tile, notes=tuple(notes),
        hbm_read_bytes=hbm_read, hbm_write_bytes=hbm_write, l2_hit_bytes=total - hbm_read - hbm_write,
        hbm_traffic=hbm_traffic, l2_working_set_bytes=l2.working_set if l2 is not None else 0,
        l2_fits=l2.fits if l2 is not None else False)


# --------------------------------------------------------------------------------------------
# geometry helpers
# --------------------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def _needed(out_total: int, stride: int, k: int, pad_lo: int, in_total: int) -> int:
    """Input rows (or columns) some output actually reads."""
    mark = np.zeros(in_total, dtype=bool)
    for o in range(out_total):
        lo = o * stride - pad_lo
        mark[max(lo, 0):max(0, min(lo + k, in_total))] = True
    return int(mark.sum())


def fused_min_bytes(wl: DwSepWorkload) -> dict[str, int]:
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    rows = _needed(wl.out_height, wl.stride[0], kh, wl.pads[0], wl.height)
    cols = _needed(wl.out_width, wl.stride[1], kw, wl.pads[1], wl.width)
    out = wl.batch * wl.co1 * wl.out_height * wl.out_width * C0 * b
    return {
        "input": wl.batch * wl.c1 * rows * cols * C0 * b,
        "weights": (wl.c1 * kh * kw * C0 * b + wl.c1 * C0 * ACC_BYTES
                    + wl.co1 * wl.c1 * C0 * C0 * b + wl.co1 * C0 * ACC_BYTES),
        "residual": out if wl.residual else 0,
        "output": out,
    }


def _add_counts(total: dict, counts: dict, times: int) -> None:
    for k, n in counts.items():
        total[k] = total.get(k, 0) + n * times


# --------------------------------------------------------------------------------------------
# the fused kernel
# --------------------------------------------------------------------------------------------
def pw_weights_resident(plan: KernelPlan) -> bool:
    """The plan decides (KernelPlan.pw_weights_resident); kept for importers."""
    return plan.pw_weights_resident


def _dw_vector_work(soc: SocSpec, wl: DwSepWorkload, th: int, tw: int, cb: int, pad_elems: int,
                    epilogue: bool) -> VecWork:
    """The program's DW ops of one ci-step (schedules/program.dw_vector_ops), summed."""
    return total_work(dw_vector_ops(soc, wl.dtype, wl.kernel, wl.act1, th, tw, cb, pad_elems, epilogue))


def _pw_epilogue_work(soc: SocSpec, wl: DwSepWorkload, th: int, tw: int, cbo: int,
                      bias_act: bool = True, residual: bool | None = None) -> VecWork:
    """The program's PW epilogue ops of one output block (schedules/program.epilogue_vector_ops)."""
    residual = wl.residual if residual is None else residual
    return total_work(epilogue_vector_ops(soc, wl.dtype, wl.act2, th * tw, cbo, "pw_acc", bias_act, residual))


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


@lru_cache(maxsize=1024)
def _input_bytes(wl: DwSepWorkload, th: int, tw: int) -> tuple[int, int]:
    """(unique, DMA) input bytes of a th x tw output tiling: the union of the tiles' input windows
    (clipped to the image) and the sum of the windows (halos counted once per tile)."""

    def axis(out_total, t, s, k, pad, in_total):
        spans = []
        for i in range(ceil_div(out_total, t)):
            lo = i * t * s - pad
            spans.append((max(lo, 0), min(lo + (t - 1) * s + k, in_total)))
        dma = sum(max(0, b - a) for a, b in spans)
        covered, end = 0, 0
        for a, b in sorted(spans):
            if b > max(a, end):
                covered += b - max(a, end)
                end = b
        return covered, dma

    kh, kw = wl.kernel
    u_r, d_r = axis(wl.out_height, th, wl.stride[0], kh, wl.pads[0], wl.height)
    u_c, d_c = axis(wl.out_width, tw, wl.stride[1], kw, wl.pads[1], wl.width)
    per = wl.batch * wl.c1 * C0 * itemsize(wl.dtype)
    return per * u_r * u_c, per * d_r * d_c


def _fused_l2(f: "_Fused") -> _L2:
    """L2 policy of the fused kernel: the input is read once per tile with its halo, the DW
    weights and biases once per core, the PW weights once per core (resident) or once per tile
    (streamed); on 910B the DW result (and, without a Fixpipe epilogue, the pre-activation)
    makes a round trip through GM that L2 absorbs. The DMA bytes per kind are fusion/traffic.py's
    closed form (imported here: traffic.py builds on this module)."""
    from fusion.traffic import fused_dma_bytes, weight_bytes

    dma = fused_dma_bytes(f.plan)
    weights = sum(weight_bytes(f.wl))
    u_in = _input_bytes(f.wl, f.th, f.tw)[0]
    out, res = dma["output"], dma["residual"]
    hand = dma["handoff"] // 2   # footprint: every tile's GM slots, each written once and read once
    return _l2_policy(f.soc, u_in + weights + res + out + hand,
                      {"input": u_in, "weights": weights, "residual": res},
                      {"input": dma["input"], "weights": dma["weights"]},
                      ("handoff",) if f.decoupled else ())


class _Fused:
    """Times the lowered program of a KernelPlan (schedules/program.py) on the pipes of its cores.

    Every iteration of a program loop becomes one simulated step: its GM -> chip copies on MTE2,
    its cube moves and GEMM on the cube, its vector ops (and the L0C -> UB move) on the vector
    unit, its chip -> GM copies on MTE3. A tile's steps are assembled from parts -- its loops by
    role and tile geometry, the resident loads of a core's first tile -- each timed once per
    (workload, SoC, tile sizes, part key) with its traffic and instruction counts; counts are
    merged as part x occurrences."""

    def __init__(self, plan: KernelPlan, l2: "_L2 | None | str" = "auto"):
        self.plan = plan
        wl, soc = plan.workload, plan.soc
        self.wl, self.soc = wl, soc
        self.program = build_program(plan)
        self.th, self.tw = plan.th, plan.tw
        self.cib, self.cob = plan.cib, plan.cob
        self.co_blocks = split(wl.co1, plan.cob)
        self.copies = 2 if plan.tile.double_buffer else 1
        self.decoupled = plan.handoff_via_gm
        self.pw_on_cube = plan.pw_on_cube
        self.n_aic = plan.aic_cores
        self.active = plan.cores + self.n_aic
        self.resident_w = plan.pw_weights_resident
        self.fix_epi = plan.fixpipe_epilogue
        self.sync_us = cycles_to_us(soc, soc.cross_core_sync_cycles)
        self.tiles = list(self.program.tiles)
        self.set_l2(_fused_l2(self) if l2 == "auto" else l2)

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

    def copies_us(self, acc, copies, times: int = 1) -> float:
        t = 0.0
        for s in copies:
            t += self.dma(acc, s.kind, s.nbytes, s.bursts, s.direction, times)
        return t

    def iteration_us(self, acc, it, times: int = 1) -> tuple[float, float, float, float]:
        """(MTE2, cube, vector, MTE3) µs of one program iteration; counts go to acc x times."""
        soc = self.soc
        mte2 = mte3 = 0.0
        cube_cyc = l0c_cyc = 0.0
        fractals = 0
        work = VecWork()
        for s in it:
            if isinstance(s, Copy):
                t = self.dma(acc, s.kind, s.nbytes, s.bursts, s.direction, times)
                if s.direction == "in":
                    mte2 += t
                else:
                    mte3 += t
            elif isinstance(s, VectorOp):
                work += s.work
            elif isinstance(s, Move):
                if s.path == "L0C->UB":
                    l0c_cyc += s.nbytes / soc.l0c_to_ub_bytes_per_cycle
                else:
                    cube_cyc += s.nbytes / _MOVE_RATE[s.path](soc)
            elif isinstance(s, CubeOp):
                fractals += s.fractals
        t_cube = cycles_to_us(soc, cube_cyc) + acc.cube(soc, fractals, self.wl.dtype, times) if fractals else 0.0
        t_vec = (cycles_to_us(soc, l0c_cyc) if l0c_cyc else 0.0) + acc.vec(soc, work, times)
        return mte2, t_cube, t_vec, mte3

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
    def _loop_steps(self, acc, role, r, c, epilogue: bool = False) -> tuple[tuple[CStage, ...], ...]:
        """The steps of one tile of a core of `role`: one per iteration of its program loops. On
        the AIV the DW loop and the epilogue loop (after the AIC's flags) are separate parts."""
        wl, db = self.wl, self.copies
        loops = tile_loops(self.plan, role, r, c)
        if role == "aiv":
            loops = loops[1:] if epilogue else loops[:1]
        timed = {}   # equal iterations (same block size) are timed once, counted per occurrence
        for loop in loops:
            for it, n in Counter(loop.iters).items():
                timed[it] = self.iteration_us(acc, it, n)
        multi_ci = len(split(wl.c1, self.cib)) > 1
        steps = []
        for loop in loops:
            for q, it in enumerate(loop.iters):
                mte2, t_cube, t_vec, mte3 = timed[it]
                if loop.var == "ci":
                    nb = it[0].nbytes
                    taps = f"{wl.kernel[0]}x{wl.kernel[1]} taps+bias+{wl.act1}"
                    if role == "aiv":   # ci-steps fill distinct slices of dw_out when there are several
                        hb = next(s.nbytes for s in it if isinstance(s, Copy) and s.direction == "out")
                        steps.append((_st("MTE2", mte2, f"x tile ci{q} {nb}B", "x_tile", db),
                                      _st("vector", t_vec, f"dw ci{q} {taps}", "dw_out", 2 if multi_ci else 1),
                                      _st("MTE3", mte3, f"dw result ci{q} -> GM hand-off {hb}B", None, 2)))
                    else:
                        steps.append((_st("MTE2", mte2, f"x tile ci{q} {nb}B", "x_tile", db),
                                      _st("vector", t_vec, f"dw ci{q} {taps}", None, 2)))
                elif role == "aic":
                    lab = (f"Fixpipe y (+bias,{wl.act2}) co{q}" if self.fix_epi
                           else f"Fixpipe pre-act -> GM hand-off co{q}")
                    steps.append((_st("MTE2", mte2, "dw hand-off + w_pw co0" if q == 0 else f"w_pw co{q}",
                                      "dw_in_l1", db),
                                  _st("cube", t_cube, f"pw mmad co{q}", "pw_acc", 1),
                                  _st("MTE3", mte3, lab)))
                elif role == "aiv":   # the epilogue after the AIC's flag
                    res = " + res" if wl.residual else ""
                    steps.append((_st("MTE2", mte2, f"pre-act co{q}{res}", "pre_tile", db),
                                  _st("vector", t_vec, f"bias+{wl.act2} co{q}", "y_tile", db),
                                  _st("MTE3", mte3, f"y co{q}")))
                else:
                    res = " + res" if wl.residual else ""
                    nb = it[-1].nbytes
                    if self.pw_on_cube:
                        steps.append((_st("MTE2", mte2, f"w_pw co{q}{res}", "w_pw", db),
                                      _st("cube", t_cube, f"pw mmad co{q}", "pw_acc", 1, after=-(q + 1)),
                                      _st("vector", t_vec, f"L0C->UB + bias+{wl.act2} co{q}", "y_tile", db),
                                      _st("MTE3", mte3, f"y co{q} {nb}B")))
                    else:
                        steps.append((_st("MTE2", mte2, f"w_pw co{q}{res}", "w_pw", db),
                                      _st("vector", t_vec, f"pw MACs + bias+{wl.act2} co{q}", "y_tile", db),
                                      _st("MTE3", mte3, f"y co{q} {nb}B")))
        return tuple(steps)

    # --- tile blocks -----------------------------------------------------------------------
    def block(self, kind: str, t, first: bool) -> tuple:
        """(steps, part keys) of one tile of one core; kind: core | aiv | aic (the program's role).
        A core's first tile also carries its prologue (resident loads) on its first load."""
        key = (kind, t, first)
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
        k, steps = self._part((kind, *geo), lambda a: self._loop_steps(a, kind, r, c))
        keys = (k,)
        if first:   # resident weights ride on the core's first load
            pro = resident_loads(self.plan, kind)
            kr, t_res = self._part(("res", pro, *self.hits("weights")), lambda a: self.copies_us(a, pro))
            s0 = steps[0][0]
            s0 = (s0[0], s0[1] + t_res, s0[2] + " + resident weights") + s0[3:]
            steps, keys = ((s0,) + steps[0][1:],) + steps[1:], keys + (kr,)
        hit = (steps, keys)
        self._blocks[key] = hit
        return hit

    def seq(self, kind: str, tiles, ready=None) -> tuple[list, dict]:
        """(simulation sequence, {part key: occurrences}) of one core's tiles (ready: the time
        each tile may start, for the AIC)."""
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


_MOVE_RATE = {
    "UB->L1": lambda soc: soc.ub_to_l1_bytes_per_cycle,
    "L1->L0A": lambda soc: soc.l1_to_l0a_bytes_per_cycle,
    "L1->L0B": lambda soc: soc.l1_to_l0b_bytes_per_cycle,
}


def model_fused(plan: KernelPlan, name: str = "fused_dwsep", timeline: bool = True) -> KernelCost:
    """Walk the plan's loop nest tile by tile and replay it through the pipes of every core.
    Cores that get the same sequence of tile shapes are simulated once."""
    wl, soc, tile = plan.workload, plan.soc, plan.tile
    f = _Fused(plan)
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
        aiv: dict[int, CoreRun] = {}
        ready: dict[int, list[float]] = {}
        for key, ids in groups.items():
            seq, counts = f.seq("aiv", key)
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
        aic: dict[int, CoreRun] = {}
        aic_cache: dict[tuple, tuple[CoreRun, list, dict]] = {}
        back: dict[int, list] = {ci: [] for ci in range(cores)}
        n_co = len(f.co_blocks)
        for a in range(f.n_aic):
            served = [int(name[3:]) for name in prog.cores[cores + a].serves]
            key = tuple(mine[ci] for ci in served)
            if key not in aic_cache:
                order = sorted(((ready[ci][k], pos, k) for pos, ci in enumerate(served)
                                for k in range(len(mine[ci]))))
                seq, counts = f.seq("aic", [mine[served[pos]][k] for _t, pos, k in order],
                                    [t for t, _pos, _k in order])
                aic_cache[key] = (_sim(seq, db), order, counts)
            run, order, counts = aic_cache[key]
            _add_counts(total, counts, 1)
            aic[a] = run
            if f.fix_epi:
                continue
            step_end, sync = run.step_end, f.sync_us
            for idx, (_t, pos, k) in enumerate(order):
                dst, t_k = back[served[pos]], mine[served[pos]][k]
                for q in range(n_co):
                    dst.append((step_end[idx * n_co + q] + sync, k, t_k, q))
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
                     timeline, f.l2)


def choose_engine(wl: DwSepWorkload, tile: TileConfig, soc: SocSpec) -> tuple[KernelPlan, KernelCost, str]:
    """Model the tile with PW on the vector unit and on the cube; keep the faster that fits."""
    results = {}
    for eng in ("vector", "cube"):
        plan = make_plan(wl, replace(tile, pw_engine=eng), soc)
        if plan.fits():
            results[eng] = (plan, model_fused(plan))
    if not results:
        check_budget(make_plan(wl, replace(tile, pw_engine="vector"), soc))
        raise UBOverflowError(f"no PW engine fits tile {tile.describe()}")  # pragma: no cover
    best = min(results, key=lambda e: results[e][1].time_us)
    plan, cost = results[best]
    other = "cube" if best == "vector" else "vector"
    if other in results:
        ocost = results[other][1]
        why = (f"pw on {best}: {cost.time_us:.2f} us modeled vs {other} {ocost.time_us:.2f} us")
        hand = results.get("cube", (None, None))[1]
        if hand is not None and hand.traffic["handoff"]:
            why += f" (cube pays {hand.traffic['handoff']:,} B of GM hand-off on {soc.name})"
    else:
        why = f"pw on {best}: {cost.time_us:.2f} us modeled; {other} does not fit the on-chip budget"
    return plan, cost, why


def _fused_candidates(wl: DwSepWorkload, soc: SocSpec, engines=("vector", "cube"),
                      max_tiles_per_axis: int = 16) -> list[TileConfig]:
    """(th, tw) from near-equal splits of each axis; per (th, tw, engine) the largest channel
    blocks that fit (all of C1 for the DW step when possible) and the smallest (cob = cib = 1)."""
    out = []
    for eng in engines:
        for th in _sizes(wl.out_height, max_tiles_per_axis):
            for tw in _sizes(wl.out_width, max_tiles_per_axis):
                small = TileConfig(th, tw, 1, 1, True, eng)
                if not make_plan(wl, small, soc).fits():
                    continue
                found = {small}
                for cib in (0, 1):
                    for cob in _desc(wl.co1):
                        t = TileConfig(th, tw, cob, cib, True, eng)
                        if make_plan(wl, t, soc).fits():
                            found.add(t)
                            break
                out += sorted(found, key=lambda t: (t.cob, t.cib))
    return out


def _desc(n: int) -> list[int]:
    vals = {n, 1}
    v = 1
    while v < n:
        vals.add(v)
        v *= 2
    return sorted(vals, reverse=True)


def _sizes(extent: int, max_tiles: int) -> list[int]:
    return sorted({ceil_div(extent, k) for k in range(1, min(extent, max_tiles) + 1)})


def tune_fused(wl: DwSepWorkload, soc: SocSpec, engines=("vector", "cube"),
               max_traffic_ratio: float | None = None, max_tiles_per_axis: int = 16,
               objective: str = "time", traffic: str = "dma") -> tuple[KernelPlan, KernelCost] | None:
    """The best modeled plan over a small tile space (fastest, or with objective="traffic" the
    least GM traffic, ties broken by time), optionally only among plans whose GM traffic stays
    within `max_traffic_ratio` of the minimal bytes; None when nothing qualifies. traffic="dma"
    counts every byte the DMA moves (gm_bytes, traffic_ratio), traffic="hbm" what reaches HBM
    after L2 hits (hbm_bytes, hbm_traffic_ratio)."""
    if traffic not in ("dma", "hbm"):
        raise ValueError(f"traffic must be 'dma' or 'hbm', not {traffic!r}")
    best = None
    for t in _fused_candidates(wl, soc, engines, max_tiles_per_axis):
        plan = make_plan(wl, t, soc)
        cost = model_fused(plan, timeline=False)
        nbytes, ratio = ((cost.gm_bytes, cost.traffic_ratio) if traffic == "dma"
                         else (cost.hbm_bytes, cost.hbm_traffic_ratio))
        if max_traffic_ratio is not None and ratio > max_traffic_ratio:
            continue
        key = (cost.time_us,) if objective == "time" else (nbytes, cost.time_us)
        if best is None or key < best[0]:
            best = (key, plan)
    if best is None:
        return None
    return best[1], model_fused(best[1])


# --------------------------------------------------------------------------------------------
# the unfused baseline: one kernel per op, intermediates through GM
# --------------------------------------------------------------------------------------------
def _ub_fits(soc: SocSpec, buffers: list[tuple[int, int]]) -> bool:
    """buffers: (bytes per copy, copies)."""
    return sum(align(nb, soc.ub_align) * cp for nb, cp in buffers) <= soc.ub_usable_bytes


def _pw_resident_loads(soc: SocSpec, cores: int, hit, w_pw: int, w_bias: int):
    """first_extra of the unfused PW kernels: a core's first tile (or block) loads the resident
    PW weights and the bias first (a 0-byte size means that tensor is not resident)."""
    def first_extra(acc):
        pre = [acc.dma(soc, "weights", nbytes, 1, "in", cores, 1, hit) for nbytes in (w_pw, w_bias) if nbytes]
        return tuple(pre), ()
    return first_extra


def _run_units(units: list, n_cores: int, build, db: bool = True,
               first_extra=None) -> tuple[dict[str, CoreRun], _Acc]:
    """Work units go round-robin to `n_cores` cores. build(acc, unit) -> (steps, comps): the
    compiled steps of a unit, and the durations whose sum (from 0.0, in this order) is its first
    stage's. first_extra(acc) -> (pre, post): durations a core's first unit adds to that sum
    before / after comps (the resident operands it loads). Each distinct unit is built once, each
    distinct core sequence simulated once."""
    cache: dict = {}
    firsts: dict = {}

    def blk(u):
        hit = cache.get(u)
        if hit is None:
            sub = _Acc()
            hit = cache[u] = (*build(sub, u), sub)
        return hit

    if first_extra is not None:
        extra_acc = _Acc()
        pre, post = first_extra(extra_acc)

    def first_blk(u):
        if first_extra is None:
            return blk(u)[0]
        hit = firsts.get(u)
        if hit is None:
            steps, comps, _sub = blk(u)
            us = 0.0
            for dt in (*pre, *comps, *post):
                us += dt
            s0 = steps[0][0]
            hit = firsts[u] = (((s0[0], us) + s0[2:],) + steps[0][1:],) + steps[1:]
        return hit

    groups: dict[tuple, list[int]] = {}
    for ci in range(n_cores):
        groups.setdefault(tuple(units[ci::n_cores]), []).append(ci)
    total: dict = {}
    n_first = 0
    by_core: dict[int, CoreRun] = {}
    for key, ids in groups.items():
        if not key:
            continue
        steps = {u: blk(u)[0] for u in set(key[1:])}
        seq = [(k, 0.0, steps[u]) for k, u in enumerate(key) if k]
        seq.insert(0, (0, 0.0, first_blk(key[0])))
        run = _sim(seq, db)
        for ci in ids:
            by_core[ci] = run
        for u, n in Counter(key).items():
            total[u] = total.get(u, 0) + n * len(ids)
        n_first += len(ids)
    acc = _Acc()
    for u, n in total.items():
        acc.merge(cache[u][2], n)
    if first_extra is not None:
        acc.merge(extra_acc, n_first)
    return {f"core{ci}": by_core[ci] for ci in range(n_cores) if ci in by_core}, acc


def _fold(durations) -> float:
    t = 0.0
    for dt in durations:
        t += dt
    return t


def _hit(l2: "_L2", kind: str, direction: str) -> float:
    return (l2.hit_in if direction == "in" else l2.hit_out).get(kind, 0.0)


@lru_cache(maxsize=512)
def _eltwise_kernel(name: str, soc: SocSpec, shape: tuple[int, int, int, int], dtype: str,
                    n_ops: int, n_inputs: int = 1) -> KernelCost:
    """Streaming elementwise kernel over an NC1HWC0 tensor (N, C1, H·W·C0 planes), in and out
    double-buffered in UB, chunks within one channel-block plane (per-channel operands broadcast)."""
    n, c1, h, w = shape
    b = itemsize(dtype)
    plane = h * w * C0
    total = n * c1 * plane
    cap = (soc.ub_usable_bytes - 2 * c1 * C0 * ACC_BYTES) // ((n_inputs + 1) * 2 * b)
    cap = max(C0, cap // 128 * 128)
    cands = {min(plane, cap)}
    for k in (1, 2, 4):
        cands.add(min(plane, cap, max(C0, align(ceil_div(total, soc.vector_cores * k), 128))))
    best = None
    for chunk in sorted(cands):
        cost = _eltwise_eval(name, soc, n, c1, plane, chunk, dtype, n_ops, n_inputs, timeline=False)
        if best is None or cost.time_us < best[0]:
            best = (cost.time_us, chunk)
    return _eltwise_eval(name, soc, n, c1, plane, best[1], dtype, n_ops, n_inputs)


def _eltwise_eval(name, soc, n, c1, plane, chunk, dtype, n_ops, n_inputs, timeline=True) -> KernelCost:
    b = itemsize(dtype)
    chunks = split(plane, chunk)
    units = [ch for _ in range(n * c1) for ch in chunks]
    cores = max(1, min(soc.vector_cores, len(units)))
    total = n * c1 * plane
    # every element is read once and written once: no re-reads, nothing for L2 to serve
    l2 = _l2_policy(soc, total * b * (n_inputs + 1), {})

    h_in, h_out = _hit(l2, "intermediate", "in"), _hit(l2, "intermediate", "out")

    def build(acc, ch):
        t_in = acc.dma(soc, "intermediate", ch * b, 1, "in", cores, n_inputs, h_in) * n_inputs
        t_v = acc.vec(soc, vec_op(soc, ch, b) * n_ops)
        t_out = acc.dma(soc, "intermediate", ch * b, 1, "out", cores, 1, h_out)
        return ((_st("MTE2", t_in, f"{name} in {ch * b}B", "x"),
                 _st("vector", t_v, f"{name} x{n_ops} ops", "y"),
                 _st("MTE3", t_out, f"{name} out")),), (t_in,)

    runs, acc = _run_units(units, cores, build)
    min_bytes = total * b * (n_inputs + 1)
    return _assemble(name, soc, runs, acc, cores, min_bytes, total * max(1, n_ops), 0, b, dtype,
                     {name: "vector"}, f"chunk {chunk} elems", timeline=timeline, l2=l2)


@lru_cache(maxsize=256)
def _dw_kernel(name: str, wl: DwSepWorkload, soc: SocSpec, epilogue: bool) -> KernelCost:
    """Standalone DW conv (optionally + bias + act1): work units are (tile, channel-block group).

    The tile space is searched exactly (the result is the first fastest tile in the order below),
    but tiles are modeled cheapest-bound first and a tile is skipped when a lower bound of its time
    (launch + the vector work averaged over its cores) already exceeds the best time found."""
    cands = []
    for th in _sizes(wl.out_height, 16):
        for tw in _sizes(wl.out_width, 8):
            tried_large = False
            for cib in _desc(wl.c1):  # the largest cib that fits, and cib = 1
                if tried_large and cib != 1:
                    continue
                if not _dw_fits(wl, soc, th, tw, cib):
                    continue
                tried_large = True
                cands.append((th, tw, cib))
    if not cands:
        raise UBOverflowError(f"no tile of the unfused DW kernel fits {soc.name}")
    bounds = [_dw_bound(wl, soc, *c, epilogue) for c in cands]
    best = None   # (time, index)
    for i in sorted(range(len(cands)), key=lambda i: (bounds[i], i)):
        if best is not None and (bounds[i] > best[0] or (bounds[i] == best[0] and i > best[1])):
            continue
        t = _dw_eval(name, wl, soc, *cands[i], epilogue, timeline=False).time_us
        if best is None or (t, i) < best:
            best = (t, i)
    return _dw_eval(name, wl, soc, *cands[best[1]], epilogue)


def _dw_fits(wl, soc, th, tw, cib) -> bool:
    """The unfused DW kernel's buffers fit UB and the tiling has at most 64 units per core."""
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    sh, sw = wl.stride
    ih, iw = (th - 1) * sh + kh, (tw - 1) * sw + kw
    c1 = wl.c1
    bufs = [(cib * ih * iw * C0 * b, 2), (cib * th * tw * C0 * ACC_BYTES, 1), (cib * th * tw * C0 * b, 2),
            (c1 * kh * kw * C0 * b, 1), (c1 * C0 * ACC_BYTES, 1)]
    if not _ub_fits(soc, bufs):
        return False
    units = wl.batch * ceil_div(c1, cib) * ceil_div(wl.out_height, th) * ceil_div(wl.out_width, tw)
    return units <= 64 * soc.vector_cores


def _dw_bound(wl, soc, th, tw, cib, epilogue) -> float:
    """A lower bound of _dw_eval(...).time_us: launch + the vector busy time averaged over the
    cores (the busiest core's vector pipe has at least the average); 1e-9 below it for rounding."""
    ih, iw = (th - 1) * wl.stride[0] + wl.kernel[0], (tw - 1) * wl.stride[1] + wl.kernel[1]
    rows, cols = _tile_axes(wl, th, tw)
    n_rows, n_cols, n_cb = Counter(r[1] for r in rows), Counter(c[1] for c in cols), Counter(split(wl.c1, cib))
    n_units = wl.batch * len(rows) * len(cols) * ceil_div(wl.c1, cib)
    cores = max(1, min(soc.vector_cores, n_units))
    cyc = 0.0
    for cb, a in n_cb.items():
        for ihv, r in n_rows.items():
            for iwv, c in n_cols.items():
                work = _dw_vector_work(soc, wl, th, tw, cb, (ih * iw - ihv * iwv) * C0, epilogue)
                cyc += a * r * c * wl.batch * work.cycles(soc)
    return (_launch_us(soc, cores) + cycles_to_us(soc, cyc) / cores) * (1 - 1e-9)


def _dw_eval(name, wl, soc, th, tw, cib, epilogue, timeline=True) -> KernelCost | None:
    if not _dw_fits(wl, soc, th, tw, cib):
        return None
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    ih, iw = (th - 1) * wl.stride[0] + kh, (tw - 1) * wl.stride[1] + kw
    c1 = wl.c1
    oh_, ow_ = wl.out_height, wl.out_width
    rows, cols = _tile_axes(wl, th, tw)
    units = [(cb, r, c) for _ in range(wl.batch) for cb in split(c1, cib) for r in rows for c in cols]
    cores = max(1, min(soc.vector_cores, len(units)))
    w_taps, w_bias = c1 * kh * kw * C0 * b, (c1 * C0 * ACC_BYTES if epilogue else 0)
    inter = wl.batch * c1 * oh_ * ow_ * C0 * b
    # L2: the input is read once per tile with its halo (re-reads: the halos), the taps and the
    # bias once per core (re-reads: all but the first); see _l2_policy
    u_in, d_in = _input_bytes(wl, th, tw)
    l2 = _l2_policy(soc, u_in + w_taps + w_bias + inter, {"input": u_in, "weights": w_taps + w_bias},
                    {"input": d_in, "weights": cores * (w_taps + w_bias)})
    h_in, h_w, h_out = _hit(l2, "input", "in"), _hit(l2, "weights", "in"), _hit(l2, "intermediate", "out")
    lab = "dw taps" + ("+bias+act" if epilogue else "")

    def build(acc, unit):
        cb, (ohv, ihv), (owv, iwv) = unit
        t_in = acc.dma(soc, "input", cb * ihv * iwv * C0 * b, _rows_bursts(cb, ihv, iwv == wl.width), "in", cores,
                       1, h_in)
        pad = (ih * iw - ihv * iwv) * C0
        t_v = acc.vec(soc, _dw_vector_work(soc, wl, th, tw, cb, pad, epilogue))
        t_out = acc.dma(soc, "intermediate", cb * ohv * owv * C0 * b, _rows_bursts(cb, ohv, owv == ow_),
                        "out", cores, 1, h_out)
        return ((_st("MTE2", t_in, "x tile", "x"), _st("vector", t_v, lab, "y"),
                 _st("MTE3", t_out, "dw out")),), (t_in,)

    def first_extra(acc):   # a core's first tile also loads the taps (and the bias): resident
        dts = [acc.dma(soc, "weights", w_taps, 1, "in", cores, 1, h_w)]
        if epilogue:
            dts.append(acc.dma(soc, "weights", w_bias, 1, "in", cores, 1, h_w))
        return (), tuple(dts)

    runs, acc = _run_units(units, cores, build, first_extra=first_extra)
    mins = fused_min_bytes(wl)
    min_bytes = mins["input"] + w_taps + w_bias + inter
    flops = 2 * wl.batch * oh_ * ow_ * wl.cin * kh * kw
    return _assemble(name, soc, runs, acc, cores, min_bytes, flops, 0, ACC_BYTES, wl.dtype,
                     {"dw": "vector"}, f"{th}x{tw} cib{cib}", timeline=timeline, l2=l2)


def _pw_weight_l2(soc, px_bytes_in, out_bytes, w_pw, w_bias, cores, units, resident, res_bytes):
    """L2 policy of a PW kernel: its input and the residual are read once; the weight matrix is
    read once per core (resident) or once per work unit (streamed), the bias once per core."""
    d_w = cores * (w_pw + w_bias) if resident else units * w_pw + cores * w_bias
    return _l2_policy(soc, px_bytes_in + w_pw + w_bias + out_bytes + res_bytes,
                      {"weights": w_pw + w_bias}, {"weights": d_w})


def _pw_vector_fits(wl, soc, th, tw, cob, residual) -> bool:
    b = itemsize(wl.dtype)
    c1, co1 = wl.c1, wl.co1
    bufs = [(c1 * th * tw * C0 * b, 2), (c1 * C0 * cob * C0 * b, 2), (cob * th * tw * C0 * ACC_BYTES, 1),
            (cob * th * tw * C0 * b, 2), (co1 * C0 * ACC_BYTES, 1)]
    if residual:
        bufs.append((cob * th * tw * C0 * b, 2))
    if not _ub_fits(soc, bufs):
        return False
    return wl.batch * ceil_div(wl.out_height, th) * ceil_div(wl.out_width, tw) <= 64 * soc.vector_cores


def _pw_vector_bound(wl, soc, th, tw, cob, bias_act, residual) -> float:
    """A lower bound of _pw_vector_eval(...).time_us: launch + the vector work (the same for every
    tile: MACs over the full tile) averaged over the cores; 1e-9 below it for rounding."""
    n_units = wl.batch * ceil_div(wl.out_height, th) * ceil_div(wl.out_width, tw)
    cores = max(1, min(soc.vector_cores, n_units))
    us = 0.0
    for cbo in split(wl.co1, cob):
        mac = vec_op(soc, th * tw * C0, ACC_BYTES, rows=wl.c1 * C0 * cbo)
        us += cycles_to_us(soc, (mac + _pw_epilogue_work(soc, wl, th, tw, cbo, bias_act, residual)).cycles(soc))
    return (_launch_us(soc, cores) + n_units * us / cores) * (1 - 1e-9)


def _pw_vector_eval(name, wl, soc, th, tw, cob, bias_act, residual, timeline=True) -> KernelCost | None:
    if not _pw_vector_fits(wl, soc, th, tw, cob, residual):
        return None
    b = itemsize(wl.dtype)
    c1, co1 = wl.c1, wl.co1
    oh_, ow_ = wl.out_height, wl.out_width
    rows = [min(th, oh_ - i * th) for i in range(ceil_div(oh_, th))]
    cols = [min(tw, ow_ - j * tw) for j in range(ceil_div(ow_, tw))]
    units = [(r, c) for _ in range(wl.batch) for r in rows for c in cols]
    cores = max(1, min(soc.vector_cores, len(units)))
    co_blocks = split(co1, cob)
    resident = len(co_blocks) == 1
    px = wl.batch * oh_ * ow_
    w_pw, w_bias = co1 * c1 * C0 * C0 * b, (co1 * C0 * ACC_BYTES if bias_act else 0)
    out_bytes = px * co1 * C0 * b
    l2 = _pw_weight_l2(soc, px * c1 * C0 * b, out_bytes, w_pw, w_bias, cores, len(units), resident,
                       out_bytes if residual else 0)
    h = {k: _hit(l2, k, "in") for k in ("weights", "intermediate", "residual")}
    h_out = _hit(l2, "output", "out")

    def build(acc, unit):
        ohv, owv = unit
        steps, comps0 = [], ()
        for q, cbo in enumerate(co_blocks):
            comps = []
            if q == 0:
                comps.append(acc.dma(soc, "intermediate", c1 * ohv * owv * C0 * b,
                                     _rows_bursts(c1, ohv, owv == ow_), "in", cores, 1, h["intermediate"]))
            if not resident:
                comps.append(acc.dma(soc, "weights", c1 * C0 * cbo * C0 * b, 1, "in", cores, 1, h["weights"]))
            io = (cbo * ohv * owv * C0 * b, _rows_bursts(cbo, ohv, owv == ow_))
            if residual:
                comps.append(acc.dma(soc, "residual", *io, "in", cores, 1, h["residual"]))
            mac = vec_op(soc, th * tw * C0, ACC_BYTES, rows=c1 * C0 * cbo)
            t_v = acc.vec(soc, mac + _pw_epilogue_work(soc, wl, th, tw, cbo, bias_act, residual))
            t_out = acc.dma(soc, "output", *io, "out", cores, 1, h_out)
            steps.append((_st("MTE2", _fold(comps), f"x/w co{q}", "w"), _st("vector", t_v, f"pw MACs co{q}", "y"),
                          _st("MTE3", t_out, f"y co{q}")))
            if q == 0:
                comps0 = tuple(comps)
        return tuple(steps), comps0

    first_extra = _pw_resident_loads(soc, cores, h["weights"], w_pw if resident else 0,
                                     w_bias if bias_act else 0)
    runs, acc = _run_units(units, cores, build, first_extra=first_extra)
    return _assemble(name, soc, runs, acc, cores, _pw_min_bytes(wl, bias_act, residual),
                     2 * wl.batch * oh_ * ow_ * wl.cin * wl.cout, 0, ACC_BYTES, wl.dtype,
                     {"pw": "vector"}, f"{th}x{tw} cob{cob}", timeline=timeline, l2=l2)


def _pw_min_bytes(wl, bias_act, residual) -> int:
    b = itemsize(wl.dtype)
    px = wl.batch * wl.out_height * wl.out_width
    return (px * wl.c1 * C0 * b + wl.co1 * wl.c1 * C0 * C0 * b + (wl.co1 * C0 * ACC_BYTES if bias_act else 0)
            + px * wl.co1 * C0 * b * (2 if residual else 1))


def _pw_cube_eval(name, wl, soc, m, nb, bias_act, residual, timeline=True) -> KernelCost | None:
    """GEMM on the cube cores: A (m pixels × C1·C0) stays in L1 while B blocks of nb·C0 output
    channels stream; 910B cube cores read GM directly (no hand-off)."""
    b = itemsize(wl.dtype)
    c1, co1 = wl.c1, wl.co1
    m_al = align(m, soc.cube_fractal[0])
    if (2 * c1 * m_al * C0 * b + 2 * c1 * C0 * nb * C0 * b > soc.l1_bytes
            or 2 * nb * m_al * C0 * ACC_BYTES > soc.l0c_bytes):
        return None
    vec_epi = soc.coupled
    if vec_epi:
        bufs = [(nb * m_al * C0 * ACC_BYTES, 1), (nb * m * C0 * b, 2), (co1 * C0 * ACC_BYTES, 1)]
        if residual:
            bufs.append((nb * m * C0 * b, 2))
        if not _ub_fits(soc, bufs):
            return None
    px_img = wl.out_height * wl.out_width
    units = [mm for _ in range(wl.batch) for mm in split(px_img, m)]
    if len(units) > 64 * soc.cube_cores:
        return None
    cores = max(1, min(soc.cube_cores, len(units)))
    co_blocks = split(co1, nb)
    resident = len(co_blocks) == 1
    px = wl.batch * px_img
    w_pw, w_bias = co1 * c1 * C0 * C0 * b, (co1 * C0 * ACC_BYTES if bias_act else 0)
    out_bytes = px * co1 * C0 * b
    l2 = _pw_weight_l2(soc, px * c1 * C0 * b, out_bytes, w_pw, w_bias, cores, len(units), resident,
                       out_bytes if (residual and vec_epi) else 0)
    h = {k: _hit(l2, k, "in") for k in ("weights", "intermediate", "residual")}
    h_out = _hit(l2, "output", "out")

    def build(acc, mv):
        steps, comps0 = [], ()
        for q, cbo in enumerate(co_blocks):
            comps = []
            if q == 0:
                comps.append(acc.dma(soc, "intermediate", c1 * mv * C0 * b, c1, "in", cores, 1, h["intermediate"]))
            if not resident:
                comps.append(acc.dma(soc, "weights", c1 * C0 * cbo * C0 * b, 1, "in", cores, 1, h["weights"]))
            if residual and vec_epi:
                comps.append(acc.dma(soc, "residual", cbo * mv * C0 * b, cbo, "in", cores, 1, h["residual"]))
            cyc = c1 * C0 * cbo * C0 * b / soc.l1_to_l0b_bytes_per_cycle
            if q == 0:
                cyc += c1 * align(mv, 16) * C0 * b / soc.l1_to_l0a_bytes_per_cycle
            t_c = cycles_to_us(soc, cyc) + acc.cube(soc, cube_fractals(soc, mv, c1, cbo), wl.dtype)
            t_out = acc.dma(soc, "output", cbo * mv * C0 * b, cbo, "out", cores, 1, h_out)
            stages = [_st("MTE2", _fold(comps), f"A/B co{q}", "l1"), _st("cube", t_c, f"mmad co{q}", "l0c")]
            if vec_epi:
                t_v = cycles_to_us(soc, cbo * align(mv, 16) * C0 * ACC_BYTES / soc.l0c_to_ub_bytes_per_cycle)
                t_v += acc.vec(soc, _pw_epilogue_work(soc, wl, mv, 1, cbo, bias_act, residual))
                stages.append(_st("vector", t_v, f"L0C->UB + epilogue co{q}", "y"))
            stages.append(_st("MTE3", t_out, f"y co{q}" + (" (Fixpipe)" if not vec_epi else "")))
            steps.append(tuple(stages))
            if q == 0:
                comps0 = tuple(comps)
        return tuple(steps), comps0

    first_extra = _pw_resident_loads(soc, cores, h["weights"], w_pw if resident else 0,
                                     w_bias if bias_act else 0)
    runs, acc = _run_units(units, cores, build, first_extra=first_extra)
    return _assemble(name, soc, runs, acc, cores,
                     _pw_min_bytes(wl, bias_act, residual and vec_epi),
                     0, 2 * wl.batch * px_img * wl.cin * wl.cout, ACC_BYTES, wl.dtype,
                     {"pw": "cube"}, f"m{m} nb{nb}", timeline=timeline, l2=l2)


@lru_cache(maxsize=256)
def _pw_kernels_cached(name: str, wl: DwSepWorkload, soc: SocSpec, bias_act: bool,
                       residual: bool) -> tuple[KernelCost, ...]:
    # vector PW: per (th, tw) the largest cob that fits; searched exactly, cheapest bound first
    # (as _dw_kernel)
    cands = []
    for th in _sizes(wl.out_height, 16):
        for tw in _sizes(wl.out_width, 8):
            for cob in _desc(wl.co1):
                if _pw_vector_fits(wl, soc, th, tw, cob, residual):
                    cands.append((th, tw, cob))
                    break
    bounds = [_pw_vector_bound(wl, soc, *c, bias_act, residual) for c in cands]
    best_v = None   # (time, index)
    for i in sorted(range(len(cands)), key=lambda i: (bounds[i], i)):
        if best_v is not None and (bounds[i] > best_v[0] or (bounds[i] == best_v[0] and i > best_v[1])):
            continue
        t = _pw_vector_eval(name, wl, soc, *cands[i], bias_act, residual, timeline=False).time_us
        if best_v is None or (t, i) < best_v:
            best_v = (t, i)
    options: list[list[KernelCost]] = []
    if best_v is not None:
        options.append([_pw_vector_eval(name, wl, soc, *cands[best_v[1]], bias_act, residual)])
    fix_epi = (not soc.coupled) and (not bias_act or wl.act2 in soc.fixpipe_acts) and not residual
    best_c = None
    px = wl.out_height * wl.out_width
    for m in sorted({min(px, v) for v in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)}):
        for nb in _desc(wl.co1):
            c = _pw_cube_eval(name, wl, soc, m, nb, bias_act, residual, timeline=False)
            if c is None:
                continue
            if best_c is None or c.time_us < best_c[0]:
                best_c = (c.time_us, m, nb)
            break
    if best_c is not None:
        chain = [_pw_cube_eval(name, wl, soc, *best_c[1:], bias_act, residual)]
        if not soc.coupled and not fix_epi:
            shape = (wl.batch, wl.co1, wl.out_height, wl.out_width)
            ops = (ACT_OPS[wl.act2] if bias_act else 0) + (1 if residual else 0)
            chain.append(_eltwise_kernel(f"{name}_epilogue", soc, shape, wl.dtype, max(1, ops),
                                         2 if residual else 1))
        options.append(chain)
    return tuple(min(options, key=lambda ks: sum(k.time_us for k in ks)))


def _pw_kernels(name: str, wl: DwSepWorkload, soc: SocSpec, bias_act: bool, residual: bool) -> list[KernelCost]:
    """The faster of a vector PW kernel and a cube GEMM kernel (plus, on a decoupled chip, a vector
    kernel for an epilogue Fixpipe cannot do)."""
    return list(_pw_kernels_cached(name, wl, soc, bias_act, residual))


def model_unfused(wl: DwSepWorkload, soc: SocSpec, variant: str = "framework") -> UnfusedCost:
    """One kernel per op with every intermediate written to and read back from GM.

    framework: DW conv, BN, act, PW conv, BN, act (+ Add) as separate launches;
    folded:    DW+bias+act, PW+bias+act(+residual) as two kernels.
    Every op kernel is modeled with the same DMA / vector / cube formulas, UB-sized streaming
    tiles and double buffering; each picks its fastest tile from a small space.

    L2: each kernel is modeled on its own. A kernel boundary flushes L2 (modeling assumption):
    the intermediate a kernel writes reaches HBM and the next kernel's first read of it comes from
    HBM; only re-reads inside one kernel (halos, weights read by every core) hit L2.

    Results are memoized per (workload, SoC, variant) (both are frozen dataclasses); the returned
    costs are shared between calls and must be treated as read-only."""
    if variant not in ("framework", "folded"):
        raise ValueError(f"unknown unfused variant {variant!r}")
    return _model_unfused(wl, soc, variant)


@lru_cache(maxsize=256)
def _model_unfused(wl: DwSepWorkload, soc: SocSpec, variant: str) -> UnfusedCost:
    inter = (wl.batch, wl.c1, wl.out_height, wl.out_width)
    out = (wl.batch, wl.co1, wl.out_height, wl.out_width)
    ks: list[KernelCost] = []
    if variant == "framework":
        ks.append(_dw_kernel("dw_conv", wl, soc, epilogue=False))
        ks.append(_eltwise_kernel("bn1", soc, inter, wl.dtype, 2))
        if wl.act1 != "none":
            ks.append(_eltwise_kernel(f"{wl.act1}1", soc, inter, wl.dtype, ACT_OPS[wl.act1]))
        ks += _pw_kernels("pw_conv", wl, soc, bias_act=False, residual=False)
        ks.append(_eltwise_kernel("bn2", soc, out, wl.dtype, 2))
        if wl.act2 != "none":
            ks.append(_eltwise_kernel(f"{wl.act2}2", soc, out, wl.dtype, ACT_OPS[wl.act2]))
        if wl.residual:
            ks.append(_eltwise_kernel("add", soc, out, wl.dtype, 1, n_inputs=2))
    else:
        ks.append(_dw_kernel("dw_bias_act", wl, soc, epilogue=True))
        ks += _pw_kernels("pw_bias_act" + ("_res" if wl.residual else ""), wl, soc, True, wl.residual)
    return UnfusedCost(variant, sum(k.time_us for k in ks), sum(k.gm_bytes for k in ks), tuple(ks))


def clear_caches() -> None:
    """Drop every memoized cost (tests; a long-running process that edits SoC tables)."""
    for fn in (_model_unfused, _pw_kernels_cached, _dw_kernel, _eltwise_kernel, _tile_axes,
               dw_vector_ops, epilogue_vector_ops, _input_bytes, _tile_loops_cached):
        fn.cache_clear()
    global _part_steps
    _PART_CACHES.clear()
    _part_steps = 0
