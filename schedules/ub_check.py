"""Cross-check the KernelPlan against the allocations of the lowered TIR.

The plan is what the budget check trusts; this proves the scheduled kernel allocates exactly the
on-chip buffers the plan lists (per-copy sizes equal; a TIR buffer is either single or carries
the plan's ping/pong copies), so the two cannot drift apart.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import s_tir, tirx

from fusion.core.errors import MegafuseError
from schedules.dwsep_schedule import CPU_FOLDED, REGISTER_TILES, TIR_TO_PLAN
from schedules.plan import KernelPlan

# The s_tir lowering passes up to FlattenBuffer: one AllocBuffer per buffer, before
# StorageRewrite merges same-scope buffers (after it, per-buffer sizes can no longer be read off).
_LOWER_TO_FLAT = [
    s_tir.transform.CanonicalizeLoop(), s_tir.transform.LowerCrossThreadReduction(),
    s_tir.transform.LowerInitBlock(), s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
    s_tir.transform.ConvertBlocksToOpaque(), s_tir.transform.LiftThreadBinding(),
    s_tir.transform.ManifestSharedMemoryLocalStage(), s_tir.transform.CompactBufferAllocation(),
    s_tir.transform.LowerAutoCopy(), s_tir.transform.UnifyThreadBinding(),
    s_tir.transform.LowerMatchBuffer(), s_tir.transform.StmtSimplify(),
    s_tir.transform.InjectPermutedLayout(), s_tir.transform.AnnotateIrregularLoop(),
    s_tir.transform.InjectSoftwarePipeline(), s_tir.transform.TransformMmaBufferLayout(),
    s_tir.transform.LowerOpaqueBlock(), tirx.transform.FlattenBuffer(),
]


def lower_flat(mod: tvm.IRModule) -> tvm.IRModule:
    return tvm.ir.transform.Sequential(_LOWER_TO_FLAT)(mod)


def tir_allocations(mod: tvm.IRModule) -> dict[str, int]:
    """Buffer name → bytes of every allocation in the lowered TIR."""
    table: dict[str, int] = {}
    for _gv, func in lower_flat(mod).functions_items():
        if not isinstance(func, tirx.PrimFunc):
            continue

        def on_alloc(stmt):
            b = stmt.buffer
            n = 1
            for s in b.shape:
                n *= int(s)
            table[b.name] = table.get(b.name, 0) + n * tvm.DataType(str(b.dtype)).bits // 8

        tvm_ffi.structural_walk(func.body, (tirx.AllocBuffer, on_alloc))
    return table


class PlanMismatchError(MegafuseError):
    """Internal: the scheduled TIR does not allocate what the plan says (a compiler bug)."""


def cross_check(plan: KernelPlan, mod: tvm.IRModule) -> dict[str, int]:
    allocs = tir_allocations(mod)
    expected = {b.name: b for b in plan.buffers if b.in_tir}
    seen = set()
    for tir_name, nbytes in allocs.items():
        if tir_name in REGISTER_TILES:
            continue
        plan_name = TIR_TO_PLAN.get(tir_name)
        if plan_name is None or plan_name not in expected:
            raise PlanMismatchError(f"TIR allocates '{tir_name}' ({nbytes} B) which the plan does not list")
        b = expected[plan_name]
        if nbytes not in {b.tir_bytes_per_copy, b.tir_bytes_per_copy * b.copies}:
            raise PlanMismatchError(
                f"TIR buffer '{tir_name}' has {nbytes} B but plan buffer '{plan_name}' has "
                f"{b.tir_bytes_per_copy} B × {b.copies}")
        seen.add(plan_name)
    missing = set(expected) - seen - set(CPU_FOLDED)
    if missing:
        raise PlanMismatchError(f"plan buffers {sorted(missing)} are not allocated by the TIR")
    return allocs
