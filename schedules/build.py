"""Compile kernels with TVM/LLVM: fused DW→PW blocks from their KernelPlan and unfused op kernels.

Compiled kernels are cached by a key over everything that changes the code (workload, tile,
target), in-process (identical layers of a network compile once) and on disk
(fusion/kernel_cache: a second compile of the same model loads them).
"""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import s_tir

from schedules import kernel_cache
from fusion.core.ir import C0
from schedules.targets import llvm_target
from schedules.cpu_conv import schedule_conv, schedule_conv_blocked, schedule_conv_to_blocked
from schedules.cpu_dense import schedule_dense
from schedules.cpu_elementwise import schedule_elementwise
from schedules.dwsep_schedule import schedule_dwsep
from schedules.op_spec import KernelSpec, blocked_bias, blocked_pw_weights
from schedules.plan import KernelPlan
from schedules.quant_schedule import schedule_quant
from schedules.quant_nhwc_schedule import schedule_nhwc
from schedules.quant_vnni import vnni_target
from schedules.se import schedule_se
from schedules.se_math import blocked_se
from schedules.ub_check import cross_check
from schedules.workload import ceil_div
from schedules.plan import make_plan

_CACHE: dict[str, object] = {}


def _cached(kind: str, ident: str, make_mod, disk: bool = True, target: dict | None = None) -> object:
    """In-process first, then the on-disk kernel cache, then schedule (make_mod) and compile."""
    target = target or llvm_target()
    key = f"{kind}:{ident}:{target}"
    ex = _CACHE.get(key)
    if ex is None:
        def build():
            return tvm.compile(make_mod(), target=target)
        ex = kernel_cache.load_or_build(kind, ident, target, build) if disk else build()
        _CACHE[key] = ex
    return ex


def _tir_plan(plan: KernelPlan) -> KernelPlan:
    """The plan the CPU build's TIR mirrors: a two-phase plan's numerics are built as the
    vector-PW loop nest of the same tile (same math; the phases exist on the Ascend side only)."""
    if not plan.two_phase:
        return plan
    from dataclasses import replace

    return make_plan(plan.workload, replace(plan.tile, pw_engine="vector", norm_phase=False, b_stream=False, gemm_bm=0), plan.soc)


def build_fused(plan: KernelPlan, disk_cache: bool = True):
    """Schedule the plan's tile, cross-check the TIR's UB allocations against the plan, compile.
    disk_cache=False for throw-away candidates (the tuner's), which would only fill the cache.
    A block with squeeze-and-excitation builds the CPU kernel of schedules/se.py (two passes: the
    image-wide mean needs the whole DW result first), whatever the tile."""
    if plan.workload.se:
        return _cached("fused", f"{plan.workload.key()}:se2pass", lambda: schedule_se(plan.workload).mod, disk_cache)

    def make_mod():
        sch = schedule_dwsep(plan.workload, plan.tile)
        cross_check(_tir_plan(plan), sch.mod)
        return sch.mod
    return _cached("fused", f"{plan.workload.key()}:{plan.tile.key()}", make_mod, disk_cache)


def fused_params(w_dw: np.ndarray, b_dw: np.ndarray, w_pw: np.ndarray, b_pw: np.ndarray, dtype: str,
                 slopes=(), se=()):
    """NCHW-shaped weights (C,1,kh,kw), (C,), (O,C,1,1), (O,) → the kernel's blocked layouts;
    `slopes`: the per-channel activation slopes the block reads ((C,) then (O,), FUSED_SLOPES
    order), blocked like the biases; `se`: the SE weights in FUSED_SE order (schedules/se.py)."""
    c, _, kh, kw = w_dw.shape
    c1 = ceil_div(c, C0)
    wd = np.zeros((c1 * C0, kh, kw), np.float32)
    wd[:c] = w_dw[:, 0]
    wd = wd.reshape(c1, C0, kh, kw).transpose(0, 2, 3, 1).astype(dtype).copy()
    return [wd, blocked_bias(np.asarray(b_dw, np.float32), c),
            blocked_pw_weights(np.asarray(w_pw, np.float32), dtype),
            blocked_bias(np.asarray(b_pw, np.float32), w_pw.shape[0])] + \
        [blocked_bias(np.asarray(s, np.float32), np.size(s)) for s in slopes] + (blocked_se(*se) if se else [])


def build_op(spec: KernelSpec):
    mod = tvm.IRModule({"main": spec.prim_func})
    return _cached("op", f"{tvm_ffi.structural_hash(mod)}:{spec.schedule}", lambda: _schedule_op(mod, spec),
                   target=vnni_target() if spec.schedule.endswith("_vnni") else None)


def _schedule_op(mod, spec: KernelSpec):
    """A light CPU schedule: parallel outer loop of the output block, vectorized inner loop."""
    sch = s_tir.Schedule(mod)
    if spec.schedule.startswith("quant_nhwc_"):
        return schedule_nhwc(sch, spec.schedule)
    if spec.schedule.startswith("quant_"):
        return schedule_quant(sch, spec.schedule)
    if spec.schedule in ("cpu_conv", "cpu_dw"):
        schedule_conv(sch, depthwise=spec.schedule == "cpu_dw")
        return sch.mod
    if spec.schedule == "conv_blocked":
        schedule_conv_blocked(sch)
        return sch.mod
    if spec.schedule == "conv_to_blocked":
        schedule_conv_to_blocked(sch)
        return sch.mod
    if spec.schedule == "cpu_dense":
        schedule_dense(sch)
        return sch.mod
    if spec.schedule == "layout":
        return _schedule_layout(sch)
    if spec.schedule == "generic" and len(spec.out_shape) == 5:  # NC1HWC0 (on NCHW the light one is faster)
        try:
            if schedule_elementwise(sch):
                return sch.mod
        except Exception:  # noqa: BLE001 - a kernel this schedule does not fit: the light one below
            pass
        sch = s_tir.Schedule(mod)
    try:
        out = sch.get_sblock("y")
        loops = sch.get_loops(out)
        if len(loops) >= 2:
            sch.parallel(sch.fuse(*loops[:2]) if spec.schedule != "dense" else loops[0])
        for name in ("conv", "mm", "sum"):
            try:
                blk = sch.get_sblock(name)
            except Exception:  # noqa: BLE001 - block absent in this kernel
                continue
            sch.compute_at(blk, sch.get_loops(out)[0])
    except Exception:  # noqa: BLE001 - fall back to the unscheduled kernel; it is still correct
        return mod
    return sch.mod


def _schedule_layout(sch):
    """NCHW → NC1HWC0: walk the source contiguously (c0 outside the width loop), rows in parallel."""
    loops = sch.get_loops(sch.get_sblock("y"))
    if len(loops) == 5:
        b, c1, i, j, c0 = loops
        sch.reorder(b, c1, i, c0, j)
        sch.parallel(sch.fuse(b, c1, i))
    else:
        b, c, i, j = loops
        sch.parallel(sch.fuse(b, c, i))
    return sch.mod
