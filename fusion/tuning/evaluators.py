"""Evaluators of tile configurations.

modeled (sim/ascend targets): fusion.costmodel.model_fused on the KernelPlan. The model replays
  every tile through the pipes of every core, which costs milliseconds per point (up to ~0.5 s
  for 1×1 tiles of a 112×112 image), so the sweep is a branch and bound: every legal point gets a
  cheap lower bound of its modeled latency, built from the cost model's own primitives
  (`modeled_lower_bound`), points are modeled in increasing order of their bound, and the sweep
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

from fusion.check import TOLERANCE  # noqa: F401  (one tolerance: the numerics check's)
from fusion.ir import C0
from fusion.soc import SocSpec, get_soc
from schedules.plan import KernelPlan, align, make_plan
from schedules.reference import from_blocked, reference_block, to_blocked  # noqa: F401
from schedules.program import split, tile_axes
from schedules.workload import DwSepWorkload, TileConfig

MODELED = "modeled"
MEASURED = "measured"


# ------------------------------------------------------------------------------------------
# modeled
# ------------------------------------------------------------------------------------------
def model_tile(wl: DwSepWorkload, soc: SocSpec, tile: TileConfig) -> dict:
    """Model one point: {'latency_us', 'bottleneck', 'ub_bytes'}; raises if the tile overflows."""
    from fusion.costmodel import model_fused

    plan = make_plan(wl, tile, soc)
    over = plan.overflows()
    if over:
        raise ValueError(f"tile {tile.describe()} overflows {over[0][0]}")
    cost = model_fused(plan)
    return {"latency_us": float(cost.time_us), "bottleneck": cost.bottleneck, "ub_bytes": plan.ub_bytes,
            "cores": plan.cores}


class _Bound:
    """Lower bound of model_fused(plan).time_us for the tiles of one block (cached per shape)."""

    def __init__(self, wl: DwSepWorkload, soc: SocSpec):
        from fusion import costmodel as cm

        self.cm, self.wl, self.soc = cm, wl, soc
        self.b = np.dtype(wl.dtype).itemsize
        mins = cm.fused_min_bytes(wl)
        self.floor = sum(mins.values()) / (soc.hbm_gbps * 1e3)
        self.setup = cm.cycles_to_us(soc, soc.dma_setup_cycles)
        self._dw = functools.lru_cache(maxsize=None)(self._dw_us)
        self._pw = functools.lru_cache(maxsize=None)(self._pw_us)

    def _vec(self, work) -> float:
        return self.cm.cycles_to_us(self.soc, work.cycles(self.soc))

    def _dw_us(self, th: int, tw: int, cb: int) -> float:
        return self._vec(self.cm._dw_vector_work(self.soc, self.wl, th, tw, cb, 0, True))

    def _pw_us(self, th: int, tw: int, cbo: int, mode: str) -> tuple[float, float]:
        """(vector µs, cube µs) of one co-step of one tile (the A-operand move excluded)."""
        cm, soc, wl = self.cm, self.soc, self.wl
        c1, thw, b = wl.c1, th * tw, self.b
        thw_al = align(thw, soc.cube_fractal[0])
        epi = cm._pw_epilogue_work(soc, wl, th, tw, cbo)
        cube_cyc = c1 * C0 * cbo * C0 * b / soc.l1_to_l0b_bytes_per_cycle
        cube = cm.cycles_to_us(soc, cube_cyc) + cm.cycles_to_us(
            soc, cm.cube_cycles(soc, cm.cube_fractals(soc, thw, c1, cbo), wl.dtype))
        if mode == "vector":
            mac = cm.vec_op(soc, thw * C0, cm.ACC_BYTES, rows=c1 * C0 * cbo)
            return self._vec(mac + epi), 0.0
        if mode == "coupled":
            l0c = cm.cycles_to_us(soc, cbo * thw_al * C0 * cm.ACC_BYTES / soc.l0c_to_ub_bytes_per_cycle)
            return l0c + self._vec(epi), cube
        return self._vec(epi), cube  # decoupled: the AIV epilogue (when not in Fixpipe)

    @functools.cache
    def _rows(self, th: int) -> np.ndarray:
        """(valid output rows, valid input rows) of every tile row index."""
        wl = self.wl
        return np.array(tile_axes(self.wl, th, 1)[0], dtype=np.int64)

    @functools.cache
    def _cols(self, tw: int) -> np.ndarray:
        return np.array(tile_axes(self.wl, 1, tw)[1], dtype=np.int64)

    @functools.cache
    def _core0_pixels(self, th: int, tw: int, cores: int) -> tuple[int, int, int]:
        """(tiles, Σ valid input pixels, Σ valid output pixels) of the tiles core 0 gets."""
        rows, cols = self._rows(th), self._cols(tw)
        nh, nw = len(rows), len(cols)
        idx = np.arange(0, self.wl.batch * nh * nw, cores) % (nh * nw)
        i, j = idx // nw, idx % nw
        return (int(idx.size), int((rows[i, 1] * cols[j, 1]).sum()), int((rows[i, 0] * cols[j, 0]).sum()))

    def __call__(self, wl: DwSepWorkload, tile: TileConfig) -> float:
        """Kernel time ≥ launch + max(GM floor, core 0's pipes): the busy time of each pipe of core
        0 (round-robin: the most tiles) without padding fills, short-burst penalties and extra
        DMA transfers; the sum of the pipes when single-buffered (the model serialises every
        stage then), their maximum otherwise. On 910B with the cube, the AIV side is bounded the
        same way and the AIC side by the average cube time per AIC."""
        cm, soc, b = self.cm, self.soc, self.b
        plan = KernelPlan(wl, tile, soc)   # loop structure only: the buffers are not needed here
        th, tw = plan.th, plan.tw
        ci_blocks = split(wl.c1, plan.cib)
        co_blocks = split(wl.co1, plan.cob)
        cores = plan.cores
        decoupled = plan.handoff_via_gm
        n_aic = plan.aic_cores
        active = cores + n_aic
        bw_in = cm.dma_bandwidth(soc, "in", active)
        bw_out = cm.dma_bandwidth(soc, "out", active)
        m0, in_px, out_px = self._core0_pixels(th, tw, cores)
        c1, co1, kh, kw = wl.c1, wl.co1, *wl.kernel
        dw = sum(self._dw(th, tw, cb) for cb in ci_blocks)
        resident = plan.pw_weights_resident
        n_ci, n_co = len(ci_blocks), len(co_blocks)
        x_bytes = c1 * in_px * C0 * b                      # every ci block of every tile of core 0
        y_bytes = co1 * out_px * C0 * b
        dw_res = (c1 * kh * kw * C0 * b + c1 * C0 * 4) / bw_in + 2 * self.setup
        if not decoupled:
            mode = "coupled" if plan.pw_on_cube else "vector"
            vec = cube = 0.0
            for cbo in co_blocks:
                v, c = self._pw(th, tw, cbo, mode)
                vec += v
                cube += c
            w_bytes = c1 * C0 * co1 * C0 * b                 # all PW weight blocks, per tile unless resident
            mte2 = (m0 * n_ci * self.setup + x_bytes / bw_in + dw_res
                    + (co1 * C0 * 4) / bw_in + self.setup
                    + (w_bytes / bw_in + self.setup if resident else m0 * (w_bytes / bw_in + n_co * self.setup)))
            if wl.residual:
                mte2 += m0 * n_co * self.setup + y_bytes / bw_in
            mte3 = m0 * n_co * self.setup + y_bytes / bw_out
            pipes = (mte2, m0 * (dw + vec), m0 * cube, mte3)
        else:
            fix_epi = plan.fixpipe_epilogue
            vec = cube = 0.0
            for cbo in co_blocks:
                v, c = self._pw(th, tw, cbo, "decoupled")
                vec += 0.0 if fix_epi else v
                cube += c
            # the busiest AIC has at least the average of every pipe (and of their sum)
            nt, thw = plan.n_tiles, th * tw
            w_all = c1 * C0 * co1 * C0 * b
            aic_mte2 = nt * (c1 * thw * C0 * b / bw_in + self.setup)
            aic_mte2 += w_all / bw_in + self.setup if resident else nt * (w_all / bw_in + n_co * self.setup)
            out_all = wl.batch * co1 * wl.out_height * wl.out_width * C0 * b
            aic_mte3 = nt * n_co * self.setup + (out_all if fix_epi else nt * co1 * thw * C0 * b) / bw_out
            aic_pipes = (aic_mte2 / n_aic, nt * cube / n_aic, aic_mte3 / n_aic)
            aic = sum(aic_pipes) if not tile.double_buffer else max(aic_pipes)
            hand = c1 * m0 * th * tw * C0 * b / bw_out + m0 * n_ci * self.setup
            mte2 = m0 * n_ci * self.setup + x_bytes / bw_in + dw_res
            mte3 = hand
            if not fix_epi:
                mte2 += m0 * n_co * self.setup + co1 * m0 * th * tw * C0 * b / bw_in
                mte2 += (co1 * C0 * 4) / bw_in + self.setup
                if wl.residual:
                    mte2 += y_bytes / bw_in
                mte3 += m0 * n_co * self.setup + y_bytes / bw_out
            pipes = (mte2, m0 * (dw + vec), mte3)
            if not tile.double_buffer:
                return cm._launch_us(soc, cores + n_aic) + max(sum(pipes), aic, self.floor)
            return cm._launch_us(soc, cores + n_aic) + max(max(pipes), aic, self.floor)
        body = sum(pipes) if not tile.double_buffer else max(pipes)
        return cm._launch_us(soc, cores) + max(body, self.floor)


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

    return {"x": r(wl.batch, wl.cin, wl.height, wl.width),
            "w_dw": r(wl.cin, 1, kh, kw, scale=1 / 3), "b_dw": r(wl.cin, scale=0.1),
            "w_pw": r(wl.cout, wl.cin, 1, 1, scale=1 / np.sqrt(wl.cin)), "b_pw": r(wl.cout, scale=0.1)}


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
        from schedules.build import build_fused

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
    from schedules.build import fused_params

    d = block_data(wl, seed)
    params = fused_params(d["w_dw"], d["b_dw"], d["w_pw"], d["b_pw"], wl.dtype)
    return d, [to_blocked(d["x"], wl.dtype)] + params


@functools.lru_cache(maxsize=4)
def _reference(wl: DwSepWorkload, seed: int) -> np.ndarray:
    return reference_block(wl, _block_arrays(wl, seed)[0])


def kernel_args(wl: DwSepWorkload, seed: int = 0):
    """TVM tensors in the kernel's call order (x, w_dw, b_dw, w_pw, b_pw, [res]) and the output."""
    import tvm

    dev = tvm.cpu(0)
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

    mod = tvm.runtime.load_module(lib_path)
    args, y = kernel_args(wl, seed)
    mod["main"](*args, y)
    rel = check_output(wl, y.numpy(), seed)
    if not rel <= TOLERANCE[wl.dtype]:
        return {"latency_us": None, "error": f"check failed after export: {rel:.3e}", "check_rel_err": rel}
    f = mod.time_evaluator("main", tvm.cpu(0), number=settings.number, repeat=settings.repeat,
                           min_repeat_ms=settings.min_repeat_ms)
    times = np.asarray(f(*args, y).results, dtype=np.float64) * 1e6
    return {"latency_us": float(np.median(times)), "min_us": float(times.min()), "check_rel_err": rel,
            "threads": int(os.environ.get("TVM_NUM_THREADS", "0") or 0) or os.cpu_count()}
