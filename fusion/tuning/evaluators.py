"""Evaluators of tile configurations.

modeled (sim/ascend targets): fusion.cost.model_block on the KernelPlan. The model replays
  every tile through the pipes of every core, which costs milliseconds per point (up to ~0.5 s
  for 1×1 tiles of a 112×112 image), so the sweep is a branch and bound: every legal point gets a
  cheap lower bound of its modeled latency from its lowered program's per-core totals on a
  per-pipe roofline (`modeled_lower_bound`), points are modeled in increasing order of their bound, and the sweep
  stops modeling once the bound reaches the K-th best modeled latency: no point it skips can
  enter the top K. Every modeled point re-checks bound ≤ model; a violation (a cost model that
  changed under the bound) switches the rest of the sweep to plain exhaustive modeling.

measured (llvm target): candidates are compiled with schedules.build.build_fused in spawned
  worker processes (in parallel); each worker runs its kernel once on random data and compares it
  with a NumPy reference of the block (max |y − ref| / max |ref| within 1e-4 fp32, 2e-2 fp16)
  and exports the library only when it checks. The main process then times the libraries one at
  a time (no compilation runs meanwhile) with TVM's time_evaluator under TVM_NUM_THREADS, after
  re-checking the output once more; median and min of the repeats are recorded.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass

import numpy as np

from fusion.core.tolerance import TOLERANCE  # noqa: F401  (one tolerance: the numerics check's)
from fusion.core.ir import C0
from fusion.core.soc import SocSpec, get_soc
from schedules.activations import needs_slope
from schedules.plan import KernelPlan, make_plan
from schedules.reference import from_blocked, reference_block, to_blocked  # noqa: F401
from schedules.workload import DwSepWorkload, TileConfig
from fusion.cost import model_block
from fusion.cost.roofline import memory_floor_us
from schedules.build import fused_params
from fusion import cost as cm
from schedules.program_totals import F, totals_for
from schedules.l2 import block_inputs_in_l2
from schedules.build import build_fused

MODELED = "modeled"
MEASURED = "measured"


# ------------------------------------------------------------------------------------------
# modeled
# ------------------------------------------------------------------------------------------
def model_tile(wl: DwSepWorkload, soc: SocSpec, tile: TileConfig) -> dict:
    """Model one point: {'latency_us', 'bottleneck', 'ub_bytes'}; raises if the tile overflows."""

    plan = make_plan(wl, tile, soc)
    over = plan.overflows()
    if over:
        raise ValueError(f"tile {tile.describe()} overflows {over[0][0]}")
    cost = model_block(plan)
    return {"latency_us": float(cost.time_us), "bottleneck": cost.bottleneck, "ub_bytes": plan.ub_bytes,
            "cores": plan.cores}


class _Bound:
    """Lower bound of model_block(plan).time_us, from the plan's lowered program: its totals per
    core (schedules/program_totals.py: the program's steps, summed per loop and cached across the
    tiles of one block) on a per-pipe roofline.

    The model replays every core's steps through its pipes (MTE2: GM -> chip copies; vector:
    vector ops and L0C -> UB; MTE1: L1 -> L0 loads; cube: the GEMM; MTE3: chip -> GM copies), so a core
    ends no earlier than the busiest of its pipes, or than their sum when single-buffered (the
    model serialises every stage then); the first core of each role is taken (round robin gives
    it the most tiles). Each pipe's busy time is bounded by its steps at the most any DMA byte
    gets (L2 hits and short-burst penalties left out). The kernel then takes launch + max(first
    cores, the roofline's memory term: the minimal bytes at L2 bandwidth, those not already in L2
    reaching HBM, reads and writes each at up to its bandwidth -- roofline.memory_floor_us). (The
    program's DMA bytes at L2 bandwidth would bound it too, but summing them needs the loops of
    every tile geometry, which costs more bound time than it saves model time.)"""

    def __init__(self, wl: DwSepWorkload, soc: SocSpec):

        self.cm, self.wl, self.soc = cm, wl, soc
        self.totals = totals_for(wl, soc)
        # the minimal bytes; what the kernel before left in L2 need not come from HBM (model_block's rule)
        in_l2 = block_inputs_in_l2(wl, soc)
        min_bytes = cm.fused_min_bytes(wl)
        self.min_floor = memory_floor_us(soc, sum(min_bytes.values()),
                                         sum(v for k, v in min_bytes.items() if k in in_l2))
        self.us_per_cycle = cm.cycles_to_us(soc, 1.0)
        self.setup = cm.cycles_to_us(soc, soc.dma_setup_cycles)
        self.bw: dict[int, tuple[float, float]] = {}   # active cores -> (in, out) bytes/us

    def __call__(self, wl: DwSepWorkload, tile: TileConfig) -> float:
        cm, soc = self.cm, self.soc
        firsts, _total, active = self.totals.sums(tile=tile, kernel=False)   # db twins: one entry
        bw = self.bw.get(active)
        if bw is None:
            bw = self.bw[active] = (cm.dma_bandwidth(soc, "in", active), cm.dma_bandwidth(soc, "out", active))
        bw_in, bw_out = bw
        cyc, setup = self.us_per_cycle, self.setup
        body = 0.0
        for _role, v in firsts:
            in_b, in_x, out_b, out_x, _bursts, instrs, reps, vec_move, _fractals, cube_cyc, mte3_move = v[:11].tolist()
            # MTE1 (L1 -> L0 loads) is a pipe of its own: as deep as the plan's L0 queues it overlaps
            # the Mmads or not (steps.l0_copies), so only its own busy time bounds the core
            mte1_move = float(v[F["mte1_move_cycles"]])
            pipes = (in_x * setup + in_b / bw_in,
                     cyc * (instrs * soc.vector_instr_cycles + reps / soc.vector_repeats_per_cycle + vec_move),
                     cyc * cube_cyc,
                     cyc * mte1_move,
                     out_x * setup + out_b / bw_out + cyc * mte3_move)
            body = max(body, max(pipes) if tile.double_buffer else sum(pipes))
        return cm._launch_us(soc, active) + max(body, self.min_floor)


@functools.lru_cache(maxsize=64)
def _bound_for(wl: DwSepWorkload, soc_name: str) -> _Bound:
    return _Bound(wl, get_soc(soc_name))


def modeled_lower_bound(wl: DwSepWorkload, soc: SocSpec, tile: TileConfig) -> float:
    if tile.pw_engine == "twophase":   # not in the swept space (the tile policy compares it): no bound
        return 0.0
    return _bound_for(wl, soc.name)(wl, tile)


def _model_chunk(wl: DwSepWorkload, soc_name: str, tiles: list[TileConfig]) -> list[dict]:
    """Worker entry: model a chunk of points (returns one result dict per tile, in order)."""
    soc = get_soc(soc_name)
    out = []
    for t in tiles:
        t0 = time.perf_counter()
        try:
            r = model_tile(wl, soc, t)
        except Exception as e:  # noqa: BLE001 - a point the model refuses is reported, not fatal
            r = {"latency_us": None, "error": f"{type(e).__name__}: {e}"}
        r["eval_s"] = time.perf_counter() - t0
        out.append(r)
    return out


# ------------------------------------------------------------------------------------------
# measured (llvm)
# ------------------------------------------------------------------------------------------
def block_data(wl: DwSepWorkload, seed: int = 0) -> dict[str, np.ndarray]:
    """Random logical (NCHW) input, weights and biases of one block; fp16 values pre-rounded."""
    rng = np.random.default_rng(seed)
    kh, kw = wl.kernel

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(wl.dtype).astype(np.float32)

    d = {"x": r(wl.batch, wl.cin, wl.height, wl.width),
         "w_dw": r(wl.cin, 1, kh, kw, scale=1 / 3), "b_dw": r(wl.cin, scale=0.1),
         "w_pw": r(wl.cout, wl.cin, 1, 1, scale=1 / np.sqrt(wl.cin)), "b_pw": r(wl.cout, scale=0.1)}
    for key, act, c in (("s_dw", wl.act1, wl.cin), ("s_pw", wl.act2, wl.cout)):
        if needs_slope(act):   # per-channel PRelu slopes on both sides of 1
            d[key] = rng.uniform(-0.5, 2.0, c).astype(np.float32)
    return d


@dataclass(frozen=True)
class MeasureSettings:
    number: int = 3           # runs per repeat (raised by min_repeat_ms for short kernels)
    repeat: int = 5           # repeats: the median is the record's latency, the min is kept too
    min_repeat_ms: int = 20


def build_and_check(wl: DwSepWorkload, soc, tile: TileConfig, lib_path: str, seed: int = 0) -> dict:
    """Worker entry (a spawned process): build the fused kernel with schedules.build.build_fused,
    run it once on random data, compare with the NumPy reference, and export the library for
    timing only when the numbers check. Never raises."""
    t0 = time.perf_counter()
    out = {"lib": None, "check_rel_err": None, "error": None}
    try:

        plan = make_plan(wl, tile, soc if isinstance(soc, SocSpec) else get_soc(soc))  # llvm: the CPU's spec
        if not plan.fits():
            raise ValueError(f"tile {tile.describe()} does not fit the budget")
        ex = build_fused(plan, disk_cache=False)
        out["build_s"] = time.perf_counter() - t0
        args, y = kernel_args(wl, seed)
        ex["main"](*args, y)
        rel = check_output(wl, y.numpy(), seed)
        out["check_rel_err"] = rel
        if not rel <= TOLERANCE[wl.dtype]:
            out["error"] = f"check failed: max rel err {rel:.3e} > {TOLERANCE[wl.dtype]:.0e}"
        else:
            ex.export_library(lib_path)
            out["lib"] = lib_path
    except Exception as e:  # noqa: BLE001 - a candidate that fails is reported, not fatal
        msg = str(e).strip().splitlines()
        out["error"] = f"{type(e).__name__}: {msg[-1] if msg else ''}"[:300]
    out["eval_s"] = time.perf_counter() - t0
    return out


@functools.lru_cache(maxsize=4)
def _block_arrays(wl: DwSepWorkload, seed: int):

    d = block_data(wl, seed)
    params = fused_params(d["w_dw"], d["b_dw"], d["w_pw"], d["b_pw"], wl.dtype,
                          [d[k] for k in ("s_dw", "s_pw") if k in d])
    return d, [to_blocked(d["x"], wl.dtype)] + params


@functools.lru_cache(maxsize=4)
def _reference(wl: DwSepWorkload, seed: int) -> np.ndarray:
    return reference_block(wl, _block_arrays(wl, seed)[0])


def kernel_args(wl: DwSepWorkload, seed: int = 0, dev=None):
    """TVM tensors in the kernel's call order (x, w_dw, b_dw, w_pw, b_pw, [s_dw], [s_pw], [res]) and the
    output, on `dev` (default this CPU; an RPC session's device for remote timing)."""
    import tvm

    dev = tvm.cpu(0) if dev is None else dev
    arrays = _block_arrays(wl, seed)[1]
    args = [tvm.runtime.tensor(a, dev) for a in arrays]
    if wl.residual:
        args.append(args[0])
    y = tvm.runtime.tensor(np.zeros((wl.batch, wl.co1, wl.out_height, wl.out_width, C0), wl.dtype), dev)
    return args, y


def check_output(wl: DwSepWorkload, y_blocked: np.ndarray, seed: int = 0) -> float:
    """max |y − ref| / max |ref| of a kernel output (NC1HWC0) against the NumPy reference."""
    got = from_blocked(np.asarray(y_blocked, np.float64), wl.cout)
    ref = _reference(wl, seed)
    scale = float(np.abs(ref).max()) or 1.0
    return float(np.abs(got - ref).max()) / scale


def time_library(wl: DwSepWorkload, lib_path: str, settings: MeasureSettings, seed: int = 0) -> dict:
    """In the main process, one kernel at a time: load the checked library, re-check its output
    and time it with time_evaluator (median and min over the repeats, µs)."""
    import tvm

    r = time_module(tvm.runtime.load_module(lib_path), tvm.cpu(0), wl, settings, seed)
    if r.get("latency_us") is not None:
        r["threads"] = int(os.environ.get("TVM_NUM_THREADS", "0") or 0) or os.cpu_count()
    return r


def time_module(mod, dev, wl: DwSepWorkload, settings: MeasureSettings, seed: int = 0) -> dict:
    """Re-check a loaded kernel's output and time it on `dev` (this CPU, or an RPC session's:
    fusion/tuning/rpc.py) with time_evaluator: median and min over the repeats, µs."""
    args, y = kernel_args(wl, seed, dev)
    mod["main"](*args, y)
    rel = check_output(wl, y.numpy(), seed)
    if not rel <= TOLERANCE[wl.dtype]:
        return {"latency_us": None, "error": f"check failed after export: {rel:.3e}", "check_rel_err": rel}
    f = mod.time_evaluator("main", dev, number=settings.number, repeat=settings.repeat,
                           min_repeat_ms=settings.min_repeat_ms)
    times = np.asarray(f(*args, y).results, dtype=np.float64) * 1e6
    return {"latency_us": float(np.median(times)), "min_us": float(times.min()), "check_rel_err": rel}
