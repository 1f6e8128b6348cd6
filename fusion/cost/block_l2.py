"""The L2 rule of one fused block's kernel (one-phase and two-phase alike): what it reads from HBM
for the first time, what L2 serves of its re-reads, and whether its hand-off stays in L2
(schedules/l2.py: the policy and its assumptions)."""

from __future__ import annotations

from collections.abc import Mapping

from schedules.l2 import _L2, _l2_policy
from schedules.plan import KernelPlan
from schedules.traffic import _input_bytes, weight_bytes


def block_l2(plan: KernelPlan, reads: Mapping[str, int], output: int, residual: int, handoff: int,
             absorb_handoff: bool, in_l2: tuple[str, ...] = ()) -> _L2:
    """reads: DMA bytes read per kind (input, weights, residual); output / residual: the bytes of
    those tensors; handoff: the footprint of the GM hand-off slots (each written once, read once),
    absorbed by L2 when `absorb_handoff`. in_l2: kinds (input, residual) already in L2 when the
    kernel starts -- written by the kernel before it (fusion/driver/chain.py, and the rule the
    vendor-like baseline applies to every kernel's input): no first touch from HBM."""
    wl = plan.workload
    u_in = _input_bytes(wl, plan.th, plan.tw)[0]
    weights = sum(weight_bytes(wl))
    unique = {"input": u_in, "weights": weights, "residual": residual}
    dma_reads = {"input": reads["input"], "weights": reads["weights"]}
    for k in in_l2:
        unique[k] = 0
        dma_reads[k] = reads[k]
    return _l2_policy(plan.soc, u_in + weights + residual + output + handoff, unique, dma_reads,
                      ("handoff",) if absorb_handoff else ())
