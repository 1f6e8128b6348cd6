"""Analytic cost model of the simulated Ascend target. Every figure it produces is MODELED.

Everything is derived from a KernelPlan (tile sizes, loop trip counts, buffers and their copies,
the PW engine) and the SoC table in fusion/soc.py; nothing is written per shape.

Primitive costs (cycles -> µs at `soc.clock_ghz`):

  DMA     t = ceil(bursts / dma_max_bursts) · dma_setup_cycles
              + bytes / (bw · eff)
          bw  = min(per-core bw of the direction, hbm_gbps / active DMA cores)
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
            + max(busiest core, total GM bytes / hbm bandwidth).
Bottleneck classes (after the seed's table, 000_*): launch-bound (launch >= body), memory-bound,
compute-bound (vector|cube), pipeline-bubbles (the busiest core idles > 10 % with no pipe busy).

Not modeled: L2 hits (a weight block or halo row re-read by another core is charged as GM
traffic and at GM bandwidth), bank conflicts, scalar overhead, K-streaming through L0A (the plan
keeps all of C1 of the cube's A operand in L0A).

Roofline bound = max(minimal GM bytes / hbm bandwidth, FLOPs / peak of the units used), where
minimal GM bytes = input + all weights and biases + residual + output, each once (NC1HWC0,
channel tails padded).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Iterable

import numpy as np

from fusion.errors import UBOverflowError
from fusion.ir import C0
from fusion.soc import SocSpec
from schedules.plan import KernelPlan, align, check_budget, make_plan
from schedules.workload import DwSepWorkload, TileConfig, ceil_div

PIPES = ("MTE2", "vector", "cube", "MTE3")
MODELED = "modeled"
ACC_BYTES = 4
# vector instructions per activation as the Ascend C emitter issues them:
# relu = Relu; relu6 = Maxs + Mins; hardswish = Adds, Maxs, Mins, Mul, Muls(1/6)
ACT_OPS = {"none": 0, "relu": 1, "relu6": 2, "hardswish": 5}
TIMELINE_TILES = 2  # timeline events are recorded for the first N tiles of every core


# --------------------------------------------------------------------------------------------
# primitive costs
# --------------------------------------------------------------------------------------------
def itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def cycles_to_us(soc: SocSpec, cycles: float) -> float:
    return cycles / (soc.clock_ghz * 1e3)


def dma_bandwidth(soc: SocSpec, direction: str, active_cores: int) -> float:
    """Bytes per µs one core gets: its own DMA limit, or its share of the HBM bandwidth."""
    gib = soc.gm_to_ub_gibps if direction == "in" else soc.ub_to_gm_gibps
    per_core = gib * 2**30 / 1e6
    share = soc.hbm_gbps * 1e3 / max(1, active_cores)
    return min(per_core, share)


def dma_us(soc: SocSpec, nbytes: int, bursts: int, direction: str, active_cores: int) -> float:
    if nbytes <= 0:
        return 0.0
    bursts = max(1, bursts)
    transfers = ceil_div(bursts, soc.dma_max_bursts)
    eff = soc.dma_short_burst_efficiency if nbytes / bursts < soc.dma_short_burst_bytes else 1.0
    return (cycles_to_us(soc, transfers * soc.dma_setup_cycles)
            + nbytes / (dma_bandwidth(soc, direction, active_cores) * eff))


@dataclass(frozen=True)
class VecWork:
    instrs: int = 0
    repeats: int = 0

    def __add__(self, other: "VecWork") -> "VecWork":
        return VecWork(self.instrs + other.instrs, self.repeats + other.repeats)

    def __mul__(self, k: int) -> "VecWork":
        return VecWork(self.instrs * k, self.repeats * k)

    def cycles(self, soc: SocSpec) -> float:
        return self.instrs * soc.vector_instr_cycles + self.repeats / soc.vector_repeats_per_cycle


def vec_op(soc: SocSpec, row_elems: int, elem_bytes: int, rows: int = 1) -> VecWork:
    """One vector op over `rows` contiguous rows of `row_elems` elements of the widest operand."""
    if rows <= 0 or row_elems <= 0:
        return VecWork()
    rep_row = ceil_div(row_elems * elem_bytes, soc.vector_repeat_bytes)
    return VecWork(rows * ceil_div(rep_row, soc.max_repeat), rows * rep_row)


def cube_fractals(soc: SocSpec, m: int, k_blocks: int, n_blocks: int) -> int:
    return ceil_div(m, soc.cube_fractal[0]) * k_blocks * n_blocks


def cube_cycles(soc: SocSpec, fractals: int, dtype: str) -> float:
    return fractals * (soc.cube_fp32_cycles_per_fractal if itemsize(dtype) == 4 else 1.0)


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

    def copy(self) -> "CoreRun":
        return CoreRun(self.end, dict(self.busy), list(self.events), list(self.step_end),
                       dict(self.pipe_free), {k: list(v) for k, v in self.rings.items()},
                       self.last_end, list(self.intervals))

    @property
    def idle(self) -> float:
        """Time up to `end` when no pipe of the core is busy (timeline gaps)."""
        covered, cur_s, cur_e = 0.0, None, None
        for s, e in sorted(self.intervals):
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

    @property
    def gm_bytes(self) -> int:
        return self.gm_read_bytes + self.gm_write_bytes

    @property
    def traffic_ratio(self) -> float:
        return self.gm_bytes / self.min_gm_bytes if self.min_gm_bytes else float("nan")

    def as_dict(self) -> dict:
        return {
            "name": self.name, "label": self.label, "soc": self.soc, "tile": self.tile,
            "time_us": self.time_us, "launch_us": self.launch_us, "body_us": self.body_us,
            "per_pipe_us": dict(self.per_pipe_us), "per_core": {k: dict(v) for k, v in self.per_core.items()},
            "gm_read_bytes": self.gm_read_bytes, "gm_write_bytes": self.gm_write_bytes,
            "gm_bytes": self.gm_bytes, "traffic": dict(self.traffic), "min_gm_bytes": self.min_gm_bytes,
            "traffic_ratio": self.traffic_ratio, "flops": self.flops, "roofline_us": self.roofline_us,
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

    def as_dict(self) -> dict:
        return {"variant": self.variant, "label": self.label, "time_us": self.time_us,
                "gm_bytes": self.gm_bytes, "launch_us": self.launch_us,
                "kernels": [k.as_dict() for k in self.kernels]}


class _Acc:
    """Accumulates traffic and instruction counts while steps are built."""

    def __init__(self):
        self.traffic = {"input": 0, "weights": 0, "residual": 0, "output": 0,
                        "handoff": 0, "intermediate": 0}
        self.reads = 0
        self.writes = 0
        self.counts = {"dma_transfers": 0, "dma_bursts": 0, "vector_instrs": 0,
                       "vector_repeats": 0, "cube_fractals": 0}

    def dma(self, soc, kind, nbytes, bursts, direction, active, times=1) -> float:
        if nbytes <= 0:
            return 0.0
        self.traffic[kind] += nbytes * times
        if direction == "in":
            self.reads += nbytes * times
        else:
            self.writes += nbytes * times
        self.counts["dma_transfers"] += ceil_div(max(1, bursts), soc.dma_max_bursts) * times
        self.counts["dma_bursts"] += max(1, bursts) * times
        return dma_us(soc, nbytes, bursts, direction, active)

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


def _classify(launch: float, body: float, floor: float, runs: dict[str, CoreRun]) -> tuple[str, str]:
    """Bottleneck class after the seed's table (000_*): 调度开销 (launch), 调度空洞 (idle > 10 %),
    访存受限 (memory), 计算受限 (vector / cube)."""
    if launch >= body:
        return "launch-bound", f"launch/head cost {launch:.2f} us >= kernel body {body:.2f} us (调度开销)"
    crit = max(runs, key=lambda c: runs[c].end)
    run = runs[crit]
    if floor >= run.end:
        return "memory-bound", (f"total GM bytes at HBM bandwidth ({floor:.2f} us) exceed the busiest "
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


def _assemble(name: str, soc: SocSpec, runs: dict[str, CoreRun], acc: _Acc, launched: int,
              min_bytes: int, vec_flops: int, cube_flops: int, vec_elem_bytes: int, dtype: str,
              engine: dict[str, str], tile: str = "", notes: Iterable[str] = (),
              timeline: bool = True) -> KernelCost:
    launch = _launch_us(soc, launched)
    core_max = max(r.end for r in runs.values())
    total = acc.reads + acc.writes
    floor = total / (soc.hbm_gbps * 1e3)
    body = max(core_max, floor)
    time = launch + body
    per_pipe = {p: max(r.busy[p] for r in runs.values()) for p in PIPES}
    per_core = {c: {**{p: r.busy[p] for p in PIPES}, "end": r.end} for c, r in runs.items()}
    mem_us = min_bytes / (soc.hbm_gbps * 1e3)
    comp_us = max(vec_flops / _vector_peak_flops_per_us(soc, vec_elem_bytes),
                  cube_flops / _cube_peak_flops_per_us(soc, dtype) if cube_flops else 0.0)
    roof = max(mem_us, comp_us)
    cls, detail = _classify(launch, body, floor, runs)
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
        timeline=events, timeline_note=note, tile=tile, notes=tuple(notes))


def _simulate_cores(core_steps: dict[str, list[Step]], sigs: dict[str, tuple], db: bool) -> dict[str, CoreRun]:
    """Simulate every core; cores whose step lists have the same signature share one run."""
    cache: dict[tuple, CoreRun] = {}
    out = {}
    for core, steps in core_steps.items():
        key = sigs[core]
        if key not in cache:
            cache[key] = simulate(steps, db)
        out[core] = cache[key]
    return out


# --------------------------------------------------------------------------------------------
# geometry helpers
# --------------------------------------------------------------------------------------------
def _axis(start_out: int, t: int, out_total: int, stride: int, k: int, pad_lo: int, in_total: int):
    """(valid outputs, valid input rows read, touches padding) of one tile along one axis.
    The kernel computes the full tile; the input window is clipped to the image."""
    out_valid = min(t, out_total - start_out)
    lo = start_out * stride - pad_lo
    hi = lo + (t - 1) * stride + k
    in_valid = max(0, min(hi, in_total) - max(lo, 0))
    return out_valid, in_valid, (lo < 0 or hi > in_total)


@lru_cache(maxsize=4096)
def _needed(out_total: int, stride: int, k: int, pad_lo: int, in_total: int) -> int:
    """Input rows (or columns) some output actually reads."""
    mark = np.zeros(in_total, dtype=bool)
    for o in range(out_total):
        lo = o * stride - pad_lo
        mark[max(lo, 0):max(0, min(lo + k, in_total))] = True
    return int(mark.sum())


def _rows_bursts(blocks: int, rows: int, full_width: bool) -> int:
    """NC1HWC0: one burst per row, or one per channel block when rows span the full width."""
    return blocks if full_width else blocks * rows


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


def _split(total: int, step: int) -> list[int]:
    return [min(step, total - i) for i in range(0, total, step)]


# --------------------------------------------------------------------------------------------
# the fused kernel
# --------------------------------------------------------------------------------------------
def pw_weights_resident(plan: KernelPlan) -> bool:
    """With one co-step the PW weight block is the same for every tile: the kernel loads it once
    per core (loop-invariant hoist) instead of once per tile."""
    return plan.co_steps == 1


def _dw_vector_work(soc: SocSpec, wl: DwSepWorkload, th: int, tw: int, cb: int, pad_elems: int,
                    epilogue: bool) -> VecWork:
    """Per ci-step: padding fill, kh·kw multiply-adds (one instruction per fp32 row of tw·C0),
    then (epilogue) bias, act1 and the cast to the storage dtype."""
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    work = vec_op(soc, pad_elems, b, rows=cb) if pad_elems else VecWork()
    work += vec_op(soc, tw * C0, ACC_BYTES, rows=cb * th) * (kh * kw)
    n = th * tw * C0
    if epilogue:
        work += vec_op(soc, n, ACC_BYTES, rows=cb)                          # + bias (per block)
        work += vec_op(soc, cb * n, ACC_BYTES) * ACT_OPS[wl.act1]
    if b != ACC_BYTES:
        work += vec_op(soc, cb * n, ACC_BYTES)                              # cast fp32 -> dtype
    return work


def _pw_epilogue_work(soc: SocSpec, wl: DwSepWorkload, th: int, tw: int, cbo: int,
                      bias_act: bool = True, residual: bool | None = None) -> VecWork:
    b = itemsize(wl.dtype)
    n = th * tw * C0
    residual = wl.residual if residual is None else residual
    work = VecWork()
    if bias_act:
        work += vec_op(soc, n, ACC_BYTES, rows=cbo)                         # + bias (per block)
        work += vec_op(soc, cbo * n, ACC_BYTES) * ACT_OPS[wl.act2]
    if b != ACC_BYTES:
        work += vec_op(soc, cbo * n, ACC_BYTES)                             # cast fp32 -> dtype
    if residual:
        work += vec_op(soc, cbo * n, b)                                     # + residual (dtype)
    return work


class _Fused:
    """Builds the per-core step lists of the fused kernel from a KernelPlan (the loop nest of
    schedules/dwsep_schedule.py)."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        wl, soc = plan.workload, plan.soc
        self.wl, self.soc = wl, soc
        self.b = itemsize(wl.dtype)
        self.th, self.tw = plan.th, plan.tw
        self.thw = plan.th * plan.tw
        self.thw_al = align(self.thw, soc.cube_fractal[0])
        self.ci_blocks = _split(wl.c1, plan.cib)
        self.co_blocks = _split(wl.co1, plan.cob)
        self.copies = 2 if plan.tile.double_buffer else 1
        self.decoupled = plan.handoff_via_gm
        self.coupled_cube = plan.pw_on_cube and soc.coupled
        self.ratio = max(1, soc.vector_cores // max(1, soc.cube_cores))
        self.n_aic = ceil_div(plan.cores, self.ratio) if self.decoupled else 0
        self.active = plan.cores + self.n_aic
        self.resident_w = pw_weights_resident(plan)
        self.fix_epi = self.decoupled and wl.act2 in soc.fixpipe_acts and not wl.residual
        self.sync_us = cycles_to_us(soc, soc.cross_core_sync_cycles)
        kh, kw = wl.kernel
        rows = [_axis(i * plan.th, plan.th, wl.out_height, wl.stride[0], kh, wl.pads[0], wl.height)
                for i in range(plan.tiles_h)]
        cols = [_axis(j * plan.tw, plan.tw, wl.out_width, wl.stride[1], kw, wl.pads[1], wl.width)
                for j in range(plan.tiles_w)]
        self.tiles = [(r, c) for _n in range(wl.batch) for r in rows for c in cols]
        self._cache: dict[tuple, tuple] = {}

    # --- per-tile pieces -------------------------------------------------------------------
    def x_load(self, acc, cb, r, c) -> tuple[float, int]:
        (_, ihv, _), (_, iwv, _) = r, c
        nb = cb * ihv * iwv * C0 * self.b
        return acc.dma(self.soc, "input", nb, _rows_bursts(cb, ihv, iwv == self.wl.width), "in", self.active), nb

    def out_io(self, cbo, r, c) -> tuple[int, int]:
        ohv, owv = r[0], c[0]
        return cbo * ohv * owv * C0 * self.b, _rows_bursts(cbo, ohv, owv == self.wl.out_width)

    def pad_elems(self, r, c) -> int:
        return (self.plan.in_tile_h * self.plan.in_tile_w - r[1] * c[1]) * C0

    def resident(self, acc, w_pw: bool, b_pw: bool, dw: bool) -> float:
        soc, wl, b, a = self.soc, self.wl, self.b, self.active
        kh, kw = wl.kernel
        t = 0.0
        if dw:
            t += acc.dma(soc, "weights", wl.c1 * kh * kw * C0 * b, 1, "in", a)
            t += acc.dma(soc, "weights", wl.c1 * C0 * ACC_BYTES, 1, "in", a)
        if b_pw:
            t += acc.dma(soc, "weights", wl.co1 * C0 * ACC_BYTES, 1, "in", a)
        if w_pw:
            t += acc.dma(soc, "weights", wl.co1 * wl.c1 * C0 * C0 * b, 1, "in", a)
        return t

    def dw_steps(self, acc, k, r, c, handoff: bool) -> list[Step]:
        soc, wl = self.soc, self.wl
        steps = []
        for j, cb in enumerate(self.ci_blocks):
            t_load, nb = self.x_load(acc, cb, r, c)
            t_vec = acc.vec(soc, _dw_vector_work(soc, wl, self.th, self.tw, cb, self.pad_elems(r, c), True))
            stages = [Stage("MTE2", t_load, f"x tile ci{j} {nb}B", "x", self.copies),
                      Stage("vector", t_vec, f"dw ci{j} {wl.kernel[0]}x{wl.kernel[1]} taps+bias+{wl.act1}")]
            if handoff:
                hb = cb * self.thw * C0 * self.b
                # ci-steps fill distinct slices of dw_out; with one ci-step the slice is reused per tile
                stages[-1].buf, stages[-1].copies = "dw_out", (2 if len(self.ci_blocks) > 1 else 1)
                stages.append(Stage("MTE3", acc.dma(soc, "handoff", hb, cb, "out", self.active),
                                    f"dw result ci{j} -> GM hand-off {hb}B"))
            steps.append(Step(k, stages))
        return steps

    def pw_in(self, acc, cbo, r, c) -> float:
        t = 0.0
        if not self.resident_w:
            t += acc.dma(self.soc, "weights", self.wl.c1 * C0 * cbo * C0 * self.b, 1, "in", self.active)
        if self.wl.residual:
            t += acc.dma(self.soc, "residual", *self.out_io(cbo, r, c), "in", self.active)
        return t

    # --- one core (vector PW, or cube PW on a coupled chip) --------------------------------
    def _cached(self, key, build):
        """Stage lists and traffic of one tile shape are built once and shared."""
        if key not in self._cache:
            sub = _Acc()
            self._cache[key] = (build(sub), sub)
        return self._cache[key]

    def _tile_block(self, acc, r, c, first: bool) -> list[list[Stage]]:
        soc, wl, b = self.soc, self.wl, self.b
        res = " + res" if wl.residual else ""
        blocks = [st.stages for st in self.dw_steps(acc, 0, r, c, False)]
        if first:  # resident weights ride on the core's first load
            s0 = blocks[0][0]
            blocks[0][0] = replace(s0, us=s0.us + self.resident(acc, self.resident_w, True, True),
                                   label=s0.label + " + resident weights")
        for q, cbo in enumerate(self.co_blocks):
            t_in = self.pw_in(acc, cbo, r, c)
            nb, bursts = self.out_io(cbo, r, c)
            t_out = acc.dma(soc, "output", nb, bursts, "out", self.active)
            epi = _pw_epilogue_work(soc, wl, self.th, self.tw, cbo)
            if self.coupled_cube:
                cyc = wl.c1 * C0 * cbo * C0 * b / soc.l1_to_l0b_bytes_per_cycle
                if q == 0:  # dw_out UB -> L1 -> L0A once per tile; A stays in L0A
                    cyc += wl.c1 * self.thw * C0 * b / soc.ub_to_l1_bytes_per_cycle
                    cyc += wl.c1 * self.thw_al * C0 * b / soc.l1_to_l0a_bytes_per_cycle
                t_cube = cycles_to_us(soc, cyc) + acc.cube(
                    soc, cube_fractals(soc, self.thw, wl.c1, cbo), wl.dtype)
                t_v = cycles_to_us(soc, cbo * self.thw_al * C0 * ACC_BYTES / soc.l0c_to_ub_bytes_per_cycle)
                t_v += acc.vec(soc, epi)
                blocks.append([
                    Stage("MTE2", t_in, f"w_pw co{q}{res}", "w", self.copies),
                    Stage("cube", t_cube, f"pw mmad co{q}", "l0c", 1, after=-(q + 1)),  # after the DW
                    Stage("vector", t_v, f"L0C->UB + bias+{wl.act2} co{q}", "y", self.copies),
                    Stage("MTE3", t_out, f"y co{q} {nb}B")])
            else:
                mac = vec_op(soc, self.thw * C0, ACC_BYTES, rows=wl.c1 * C0 * cbo)
                t_v = acc.vec(soc, mac + epi)
                blocks.append([
                    Stage("MTE2", t_in, f"w_pw co{q}{res}", "w", self.copies),
                    Stage("vector", t_v, f"pw MACs + bias+{wl.act2} co{q}", "y", self.copies),
                    Stage("MTE3", t_out, f"y co{q} {nb}B")])
        return blocks

    def core_steps(self, acc, tiles) -> list[Step]:
        steps: list[Step] = []
        for k, (r, c) in enumerate(tiles):
            blocks, sub = self._cached(("core", r, c, k == 0), lambda a: self._tile_block(a, r, c, k == 0))
            acc.merge(sub, 1)
            steps += [Step(k, st) for st in blocks]
        return steps

    # --- 910B: AIV (DW) -> GM -> AIC (PW) [-> GM -> AIV epilogue] ----------------------------
    def _aiv_block(self, acc, r, c, first):
        blocks = [st.stages for st in self.dw_steps(acc, 0, r, c, True)]
        if first:
            s0 = blocks[0][0]
            blocks[0][0] = replace(s0, us=s0.us + self.resident(acc, False, not self.fix_epi, True),
                                   label=s0.label + " + resident weights")
        return blocks

    def aiv_dw(self, acc, tiles) -> tuple[list[Step], list[int]]:
        steps, ends = [], []
        for k, (r, c) in enumerate(tiles):
            blocks, sub = self._cached(("aiv", r, c, k == 0), lambda a: self._aiv_block(a, r, c, k == 0))
            acc.merge(sub, 1)
            steps += [Step(k, st) for st in blocks]
            ends.append(len(steps) - 1)
        return steps, ends

    def _aic_block(self, acc, r, c, first):
        soc, wl, b = self.soc, self.wl, self.b
        blocks = []
        for q, cbo in enumerate(self.co_blocks):
            t_in = self.resident(acc, self.resident_w, self.fix_epi, False) if first and q == 0 else 0.0
            if q == 0:
                t_in += acc.dma(soc, "handoff", wl.c1 * self.thw * C0 * b, wl.c1, "in", self.active)
            if not self.resident_w:
                t_in += acc.dma(soc, "weights", wl.c1 * C0 * cbo * C0 * b, 1, "in", self.active)
            cyc = wl.c1 * C0 * cbo * C0 * b / soc.l1_to_l0b_bytes_per_cycle
            if q == 0:
                cyc += wl.c1 * self.thw_al * C0 * b / soc.l1_to_l0a_bytes_per_cycle
            t_cube = cycles_to_us(soc, cyc) + acc.cube(soc, cube_fractals(soc, self.thw, wl.c1, cbo), wl.dtype)
            if self.fix_epi:
                t_out = acc.dma(soc, "output", *self.out_io(cbo, r, c), "out", self.active)
                lab = f"Fixpipe y (+bias,{wl.act2}) co{q}"
            else:
                t_out = acc.dma(soc, "handoff", cbo * self.thw * C0 * b, cbo, "out", self.active)
                lab = f"Fixpipe pre-act -> GM hand-off co{q}"
            blocks.append([
                Stage("MTE2", t_in, "dw hand-off + w_pw co0" if q == 0 else f"w_pw co{q}", "a", self.copies),
                Stage("cube", t_cube, f"pw mmad co{q}", "l0c", 1),
                Stage("MTE3", t_out, lab)])
        return blocks

    def aic_steps(self, acc, work) -> list[Step]:
        """work: (ready time, tile) in processing order."""
        steps = []
        for idx, (ready, (r, c)) in enumerate(work):
            blocks, sub = self._cached(("aic", r, c, idx == 0), lambda a: self._aic_block(a, r, c, idx == 0))
            acc.merge(sub, 1)
            steps += [Step(idx, st, ready if q == 0 else 0.0) for q, st in enumerate(blocks)]
        return steps

    def _epi_block(self, acc, r, c, q, cbo):
        soc, wl = self.soc, self.wl
        t_in = acc.dma(soc, "handoff", cbo * self.thw * C0 * self.b, cbo, "in", self.active)
        if wl.residual:
            t_in += acc.dma(soc, "residual", *self.out_io(cbo, r, c), "in", self.active)
        t_v = acc.vec(soc, _pw_epilogue_work(soc, wl, self.th, self.tw, cbo))
        t_out = acc.dma(soc, "output", *self.out_io(cbo, r, c), "out", self.active)
        return [Stage("MTE2", t_in, f"pre-act co{q}" + (" + res" if wl.residual else ""), "e", self.copies),
                Stage("vector", t_v, f"bias+{wl.act2} co{q}", "y", self.copies),
                Stage("MTE3", t_out, f"y co{q}")]

    def aiv_epilogue(self, acc, work) -> list[Step]:
        """work: (ready time, local tile index, tile, q, cbo)."""
        steps = []
        for ready, k, (r, c), q, cbo in work:
            st, sub = self._cached(("epi", r, c, q), lambda a: self._epi_block(a, r, c, q, cbo))
            acc.merge(sub, 1)
            steps.append(Step(k, st, ready))
        return steps


def model_fused(plan: KernelPlan, name: str = "fused_dwsep", timeline: bool = True) -> KernelCost:
    """Walk the plan's loop nest tile by tile and replay it through the pipes of every core.
    Cores that get the same sequence of tile shapes are simulated once."""
    wl, soc, tile = plan.workload, plan.soc, plan.tile
    f = _Fused(plan)
    db = tile.double_buffer
    cores = plan.cores
    acc = _Acc()
    mine = {ci: tuple(f.tiles[ci::cores]) for ci in range(cores)}
    groups: dict[tuple, list[int]] = {}
    for ci in range(cores):
        groups.setdefault(mine[ci], []).append(ci)
    notes = []
    if f.resident_w:
        notes.append("PW weights resident: one co-step, loaded once per core")
    runs: dict[str, CoreRun] = {}
    if not f.decoupled:
        for key, ids in groups.items():
            sub = _Acc()
            run = simulate(f.core_steps(sub, key), db)
            acc.merge(sub, len(ids))
            for ci in ids:
                runs[f"core{ci}"] = run
        launched = cores
    else:
        aiv: dict[int, CoreRun] = {}
        ready: dict[int, list[float]] = {}
        for key, ids in groups.items():
            sub = _Acc()
            steps, ends = f.aiv_dw(sub, key)
            run = simulate(steps, db)
            acc.merge(sub, len(ids))
            for ci in ids:
                aiv[ci] = run
                ready[ci] = [run.step_end[e] + f.sync_us for e in ends]
        aic: dict[int, CoreRun] = {}
        aic_cache: dict[tuple, tuple[CoreRun, list, _Acc]] = {}
        back: dict[int, list] = {ci: [] for ci in range(cores)}
        for a in range(f.n_aic):
            served = [ci for ci in range(a * f.ratio, min(cores, (a + 1) * f.ratio))]
            key = tuple(mine[ci] for ci in served)
            if key not in aic_cache:
                order = sorted(((ready[ci][k], pos, k) for pos, ci in enumerate(served)
                                for k in range(len(mine[ci]))))
                sub = _Acc()
                work = [(t, mine[served[pos]][k]) for t, pos, k in order]
                aic_cache[key] = (simulate(f.aic_steps(sub, work), db), order, sub)
            run, order, sub = aic_cache[key]
            acc.merge(sub, 1)
            aic[a] = run
            n_co = len(f.co_blocks)
            for idx, (_t, pos, k) in enumerate(order):
                for q, cbo in enumerate(f.co_blocks):
                    back[served[pos]].append((run.step_end[idx * n_co + q] + f.sync_us, k,
                                              mine[served[pos]][k], q, cbo))
        if not f.fix_epi:  # the AIV finishes act2 / residual after the cube
            for ci in range(cores):
                sub = _Acc()
                aiv[ci] = simulate(f.aiv_epilogue(sub, back[ci]), db, prev=aiv[ci].copy())
                acc.merge(sub, 1)
        runs = {**{f"aiv{ci}": aiv[ci] for ci in range(cores)},
                **{f"aic{a}": aic[a] for a in range(f.n_aic)}}
        launched = cores + f.n_aic
        notes.append(f"910B split: {cores} AIV (DW) + {f.n_aic} AIC (PW) exchange the DW result "
                     f"through GM; epilogue in {'Fixpipe' if f.fix_epi else 'the AIV (second hand-off)'}")

    mins = fused_min_bytes(wl)
    kh, kw = wl.kernel
    px = wl.batch * wl.out_height * wl.out_width
    dw_flops = 2 * px * wl.cin * kh * kw
    pw_flops = 2 * px * wl.cin * wl.cout
    vec_flops = dw_flops + (0 if plan.pw_on_cube else pw_flops)
    cube_flops = pw_flops if plan.pw_on_cube else 0
    return _assemble(name, soc, runs, acc, launched, sum(mins.values()), vec_flops, cube_flops,
                     ACC_BYTES, wl.dtype, {"dw": "vector", "pw": tile.pw_engine}, tile.describe(), notes,
                     timeline)


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
               objective: str = "time") -> tuple[KernelPlan, KernelCost] | None:
    """The best modeled plan over a small tile space (fastest, or with objective="traffic" the
    least GM traffic, ties broken by time), optionally only among plans whose GM traffic stays
    within `max_traffic_ratio` of the minimal bytes; None when nothing qualifies."""
    best = None
    for t in _fused_candidates(wl, soc, engines, max_tiles_per_axis):
        plan = make_plan(wl, t, soc)
        cost = model_fused(plan, timeline=False)
        if max_traffic_ratio is not None and cost.traffic_ratio > max_traffic_ratio:
            continue
        key = (cost.time_us,) if objective == "time" else (cost.gm_bytes, cost.time_us)
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
        cost = _eltwise_eval(name, soc, n, c1, plane, chunk, dtype, n_ops, n_inputs)
        if best is None or cost.time_us < best.time_us:
            best = cost
    return best


def _eltwise_eval(name, soc, n, c1, plane, chunk, dtype, n_ops, n_inputs) -> KernelCost:
    b = itemsize(dtype)
    chunks = _split(plane, chunk)
    units = [ch for _ in range(n * c1) for ch in chunks]
    cores = max(1, min(soc.vector_cores, len(units)))
    acc = _Acc()
    core_steps, sigs = {}, {}
    for ci in range(cores):
        mine = units[ci::cores]
        steps = []
        for k, ch in enumerate(mine):
            t_in = acc.dma(soc, "intermediate", ch * b, 1, "in", cores, times=n_inputs) * n_inputs
            t_v = acc.vec(soc, vec_op(soc, ch, b) * n_ops)
            t_out = acc.dma(soc, "intermediate", ch * b, 1, "out", cores)
            steps.append(Step(k, [Stage("MTE2", t_in, f"{name} in {ch * b}B", "x"),
                                  Stage("vector", t_v, f"{name} x{n_ops} ops", "y"),
                                  Stage("MTE3", t_out, f"{name} out")]))
        core_steps[f"core{ci}"] = steps
        sigs[f"core{ci}"] = tuple(mine)
    runs = _simulate_cores(core_steps, sigs, True)
    total = n * c1 * plane
    min_bytes = total * b * (n_inputs + 1)
    return _assemble(name, soc, runs, acc, cores, min_bytes, total * max(1, n_ops), 0, b, dtype,
                     {name: "vector"}, f"chunk {chunk} elems")


def _dw_kernel(name: str, wl: DwSepWorkload, soc: SocSpec, epilogue: bool) -> KernelCost:
    """Standalone DW conv (optionally + bias + act1): work units are (tile, channel-block group)."""
    best = None
    for th in _sizes(wl.out_height, 16):
        for tw in _sizes(wl.out_width, 8):
            tried_large = False
            for cib in _desc(wl.c1):  # the largest cib that fits, and cib = 1
                if tried_large and cib != 1:
                    continue
                cost = _dw_eval(name, wl, soc, th, tw, cib, epilogue)
                if cost is None:
                    continue
                tried_large = True
                if best is None or cost.time_us < best.time_us:
                    best = cost
    if best is None:
        raise UBOverflowError(f"no tile of the unfused DW kernel fits {soc.name}")
    return best


def _dw_eval(name, wl, soc, th, tw, cib, epilogue) -> KernelCost | None:
    b = itemsize(wl.dtype)
    kh, kw = wl.kernel
    sh, sw = wl.stride
    ih, iw = (th - 1) * sh + kh, (tw - 1) * sw + kw
    c1 = wl.c1
    bufs = [(cib * ih * iw * C0 * b, 2), (cib * th * tw * C0 * ACC_BYTES, 1), (cib * th * tw * C0 * b, 2),
            (c1 * kh * kw * C0 * b, 1), (c1 * C0 * ACC_BYTES, 1)]
    if not _ub_fits(soc, bufs):
        return None
    oh_, ow_ = wl.out_height, wl.out_width
    th_n, tw_n = ceil_div(oh_, th), ceil_div(ow_, tw)
    rows = [_axis(i * th, th, oh_, sh, kh, wl.pads[0], wl.height) for i in range(th_n)]
    cols = [_axis(j * tw, tw, ow_, sw, kw, wl.pads[1], wl.width) for j in range(tw_n)]
    units = [(cb, r, c) for _ in range(wl.batch) for cb in _split(c1, cib) for r in rows for c in cols]
    if len(units) > 64 * soc.vector_cores:
        return None
    cores = max(1, min(soc.vector_cores, len(units)))
    acc = _Acc()
    core_steps, sigs = {}, {}
    for ci in range(cores):
        mine = units[ci::cores]
        steps = []
        for k, (cb, r, c) in enumerate(mine):
            (ohv, ihv, _), (owv, iwv, _) = r, c
            t_in = acc.dma(soc, "input", cb * ihv * iwv * C0 * b, _rows_bursts(cb, ihv, iwv == wl.width), "in", cores)
            if k == 0:
                t_in += acc.dma(soc, "weights", c1 * kh * kw * C0 * b, 1, "in", cores)
                if epilogue:
                    t_in += acc.dma(soc, "weights", c1 * C0 * ACC_BYTES, 1, "in", cores)
            pad = (ih * iw - ihv * iwv) * C0
            t_v = acc.vec(soc, _dw_vector_work(soc, wl, th, tw, cb, pad, epilogue))
            t_out = acc.dma(soc, "intermediate", cb * ohv * owv * C0 * b, _rows_bursts(cb, ohv, owv == ow_),
                            "out", cores)
            steps.append(Step(k, [Stage("MTE2", t_in, "x tile", "x"),
                                  Stage("vector", t_v, "dw taps" + ("+bias+act" if epilogue else ""), "y"),
                                  Stage("MTE3", t_out, "dw out")]))
        core_steps[f"core{ci}"] = steps
        sigs[f"core{ci}"] = tuple(mine)
    runs = _simulate_cores(core_steps, sigs, True)
    mins = fused_min_bytes(wl)
    inter = wl.batch * c1 * oh_ * ow_ * C0 * b
    min_bytes = mins["input"] + c1 * kh * kw * C0 * b + (c1 * C0 * ACC_BYTES if epilogue else 0) + inter
    flops = 2 * wl.batch * oh_ * ow_ * wl.cin * kh * kw
    return _assemble(name, soc, runs, acc, cores, min_bytes, flops, 0, ACC_BYTES, wl.dtype,
                     {"dw": "vector"}, f"{th}x{tw} cib{cib}")


def _pw_vector_eval(name, wl, soc, th, tw, cob, bias_act, residual) -> KernelCost | None:
    b = itemsize(wl.dtype)
    c1, co1 = wl.c1, wl.co1
    oh_, ow_ = wl.out_height, wl.out_width
    bufs = [(c1 * th * tw * C0 * b, 2), (c1 * C0 * cob * C0 * b, 2), (cob * th * tw * C0 * ACC_BYTES, 1),
            (cob * th * tw * C0 * b, 2), (co1 * C0 * ACC_BYTES, 1)]
    if residual:
        bufs.append((cob * th * tw * C0 * b, 2))
    if not _ub_fits(soc, bufs):
        return None
    rows = [(min(th, oh_ - i * th),) for i in range(ceil_div(oh_, th))]
    cols = [(min(tw, ow_ - j * tw),) for j in range(ceil_div(ow_, tw))]
    units = [(r[0], c[0]) for _ in range(wl.batch) for r in rows for c in cols]
    if len(units) > 64 * soc.vector_cores:
        return None
    cores = max(1, min(soc.vector_cores, len(units)))
    co_blocks = _split(co1, cob)
    resident = len(co_blocks) == 1
    acc = _Acc()
    core_steps, sigs = {}, {}
    for ci in range(cores):
        mine = units[ci::cores]
        steps = []
        for k, (ohv, owv) in enumerate(mine):
            for q, cbo in enumerate(co_blocks):
                t_in = 0.0
                if k == 0 and q == 0:
                    if resident:
                        t_in += acc.dma(soc, "weights", co1 * c1 * C0 * C0 * b, 1, "in", cores)
                    if bias_act:
                        t_in += acc.dma(soc, "weights", co1 * C0 * ACC_BYTES, 1, "in", cores)
                if q == 0:
                    t_in += acc.dma(soc, "intermediate", c1 * ohv * owv * C0 * b,
                                    _rows_bursts(c1, ohv, owv == ow_), "in", cores)
                if not resident:
                    t_in += acc.dma(soc, "weights", c1 * C0 * cbo * C0 * b, 1, "in", cores)
                io = (cbo * ohv * owv * C0 * b, _rows_bursts(cbo, ohv, owv == ow_))
                if residual:
                    t_in += acc.dma(soc, "residual", *io, "in", cores)
                mac = vec_op(soc, th * tw * C0, ACC_BYTES, rows=c1 * C0 * cbo)
                t_v = acc.vec(soc, mac + _pw_epilogue_work(soc, wl, th, tw, cbo, bias_act, residual))
                t_out = acc.dma(soc, "output", *io, "out", cores)
                steps.append(Step(k, [Stage("MTE2", t_in, f"x/w co{q}", "w"),
                                      Stage("vector", t_v, f"pw MACs co{q}", "y"),
                                      Stage("MTE3", t_out, f"y co{q}")]))
        core_steps[f"core{ci}"] = steps
        sigs[f"core{ci}"] = tuple(mine)
    runs = _simulate_cores(core_steps, sigs, True)
    return _assemble(name, soc, runs, acc, cores, _pw_min_bytes(wl, bias_act, residual),
                     2 * wl.batch * oh_ * ow_ * wl.cin * wl.cout, 0, ACC_BYTES, wl.dtype,
                     {"pw": "vector"}, f"{th}x{tw} cob{cob}")


def _pw_min_bytes(wl, bias_act, residual) -> int:
    b = itemsize(wl.dtype)
    px = wl.batch * wl.out_height * wl.out_width
    return (px * wl.c1 * C0 * b + wl.co1 * wl.c1 * C0 * C0 * b + (wl.co1 * C0 * ACC_BYTES if bias_act else 0)
            + px * wl.co1 * C0 * b * (2 if residual else 1))


def _pw_cube_eval(name, wl, soc, m, nb, bias_act, residual) -> KernelCost | None:
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
    units = [mm for _ in range(wl.batch) for mm in _split(px_img, m)]
    if len(units) > 64 * soc.cube_cores:
        return None
    cores = max(1, min(soc.cube_cores, len(units)))
    co_blocks = _split(co1, nb)
    resident = len(co_blocks) == 1
    acc = _Acc()
    core_steps, sigs = {}, {}
    for ci in range(cores):
        mine = units[ci::cores]
        steps = []
        for k, mv in enumerate(mine):
            for q, cbo in enumerate(co_blocks):
                t_in = 0.0
                if k == 0 and q == 0:
                    if resident:
                        t_in += acc.dma(soc, "weights", co1 * c1 * C0 * C0 * b, 1, "in", cores)
                    if bias_act:
                        t_in += acc.dma(soc, "weights", co1 * C0 * ACC_BYTES, 1, "in", cores)
                if q == 0:
                    t_in += acc.dma(soc, "intermediate", c1 * mv * C0 * b, c1, "in", cores)
                if not resident:
                    t_in += acc.dma(soc, "weights", c1 * C0 * cbo * C0 * b, 1, "in", cores)
                if residual and vec_epi:
                    t_in += acc.dma(soc, "residual", cbo * mv * C0 * b, cbo, "in", cores)
                cyc = c1 * C0 * cbo * C0 * b / soc.l1_to_l0b_bytes_per_cycle
                if q == 0:
                    cyc += c1 * align(mv, 16) * C0 * b / soc.l1_to_l0a_bytes_per_cycle
                t_c = cycles_to_us(soc, cyc) + acc.cube(soc, cube_fractals(soc, mv, c1, cbo), wl.dtype)
                t_out = acc.dma(soc, "output", cbo * mv * C0 * b, cbo, "out", cores)
                stages = [Stage("MTE2", t_in, f"A/B co{q}", "l1"),
                          Stage("cube", t_c, f"mmad co{q}", "l0c")]
                if vec_epi:
                    t_v = cycles_to_us(soc, cbo * align(mv, 16) * C0 * ACC_BYTES / soc.l0c_to_ub_bytes_per_cycle)
                    t_v += acc.vec(soc, _pw_epilogue_work(soc, wl, mv, 1, cbo, bias_act, residual))
                    stages.append(Stage("vector", t_v, f"L0C->UB + epilogue co{q}", "y"))
                stages.append(Stage("MTE3", t_out, f"y co{q}" + (" (Fixpipe)" if not vec_epi else "")))
                steps.append(Step(k, stages))
        core_steps[f"core{ci}"] = steps
        sigs[f"core{ci}"] = tuple(mine)
    runs = _simulate_cores(core_steps, sigs, True)
    return _assemble(name, soc, runs, acc, cores,
                     _pw_min_bytes(wl, bias_act, residual and vec_epi),
                     0, 2 * wl.batch * px_img * wl.cin * wl.cout, ACC_BYTES, wl.dtype,
                     {"pw": "cube"}, f"m{m} nb{nb}")


def _pw_kernels(name: str, wl: DwSepWorkload, soc: SocSpec, bias_act: bool, residual: bool) -> list[KernelCost]:
    """The faster of a vector PW kernel and a cube GEMM kernel (plus, on a decoupled chip, a vector
    kernel for an epilogue Fixpipe cannot do)."""
    options: list[list[KernelCost]] = []
    best_v = None
    for th in _sizes(wl.out_height, 16):
        for tw in _sizes(wl.out_width, 8):
            for cob in _desc(wl.co1):
                c = _pw_vector_eval(name, wl, soc, th, tw, cob, bias_act, residual)
                if c is None:
                    continue
                if best_v is None or c.time_us < best_v.time_us:
                    best_v = c
                break
    if best_v is not None:
        options.append([best_v])
    fix_epi = (not soc.coupled) and (not bias_act or wl.act2 in soc.fixpipe_acts) and not residual
    best_c = None
    px = wl.out_height * wl.out_width
    for m in sorted({min(px, v) for v in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)}):
        for nb in _desc(wl.co1):
            c = _pw_cube_eval(name, wl, soc, m, nb, bias_act, residual)
            if c is None:
                continue
            if best_c is None or c.time_us < best_c.time_us:
                best_c = c
            break
    if best_c is not None:
        chain = [best_c]
        if not soc.coupled and not fix_epi:
            shape = (wl.batch, wl.co1, wl.out_height, wl.out_width)
            ops = (ACT_OPS[wl.act2] if bias_act else 0) + (1 if residual else 0)
            chain.append(_eltwise_kernel(f"{name}_epilogue", soc, shape, wl.dtype, max(1, ops),
                                         2 if residual else 1))
        options.append(chain)
    return min(options, key=lambda ks: sum(k.time_us for k in ks))


def model_unfused(wl: DwSepWorkload, soc: SocSpec, variant: str = "framework") -> UnfusedCost:
    """One kernel per op with every intermediate written to and read back from GM.

    framework: DW conv, BN, act, PW conv, BN, act (+ Add) as separate launches;
    folded:    DW+bias+act, PW+bias+act(+residual) as two kernels.
    Every op kernel is modeled with the same DMA / vector / cube formulas, UB-sized streaming
    tiles and double buffering; each picks its fastest tile from a small space."""
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
    elif variant == "folded":
        ks.append(_dw_kernel("dw_bias_act", wl, soc, epilogue=True))
        ks += _pw_kernels("pw_bias_act" + ("_res" if wl.residual else ""), wl, soc, True, wl.residual)
    else:
        raise ValueError(f"unknown unfused variant {variant!r}")
    return UnfusedCost(variant, sum(k.time_us for k in ks), sum(k.gm_bytes for k in ks), tuple(ks))
