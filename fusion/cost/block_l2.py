"""The L2 rule of one fused block's kernel (one-phase and two-phase alike): what it reads from HBM
for the first time, what L2 serves of its re-reads, and whether its hand-off stays in L2
(schedules/l2.py: the policy and its assumptions)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from schedules.l2 import _L2, _l2_policy
from schedules.plan import KernelPlan
from schedules.traffic import _input_bytes, weight_bytes

WEIGHT_TENSORS = ("w_dw", "b_dw", "w_pw", "b_pw")   # weight_bytes' order


def block_l2(plan: KernelPlan, reads: Mapping[str, int], output: int, residual: int, handoff: int,
             absorb_handoff: bool, in_l2: tuple[str, ...] = (), weight_reads: Mapping[str, int] | None = None,
             handoff_reads: int = 0) -> _L2:
    """reads: DMA bytes read per kind (input, weights, residual); output / residual: the bytes of
    those tensors; handoff: the footprint of the GM hand-off slots (each written once, read once),
    absorbed by L2 when `absorb_handoff`. in_l2: kinds (input, residual) already in L2 when the
    kernel starts -- written by the kernel before it (fusion/driver/chain.py, and the rule the
    vendor-like baseline applies to every kernel's input): no first touch from HBM.
    weight_reads: DMA bytes read per weight tensor (w_dw, b_dw, w_pw, b_pw); where given, each of
    those tensors gets its own hit fraction 1 - its bytes / its DMA bytes (hit_in "weights:w_pw"...),
    the same first-touch rule per tensor instead of one average over the kind: the taps every
    core re-reads hit, the PW weights read once per N tile miss. The HBM bytes do not change.
    handoff_reads: DMA bytes read of the hand-off, where it is read more than once (the two-phase
    GEMM's A block once per N tile): the re-reads a hand-off too large for L2 still hits."""
    wl = plan.workload
    u_in = _input_bytes(wl, plan.th, plan.tw)[0]
    # a chain member's reads ahead (plan.prefetch: another member's bytes, first touched here) and
    # the part of its own w_pw an earlier member read ahead (plan.w_pw_warm: no first touch here)
    weights = sum(weight_bytes(wl)) + plan.prefetch - plan.w_pw_warm
    unique = {"input": u_in, "weights": weights, "residual": residual}
    dma_reads = {"input": reads["input"], "weights": reads["weights"]}
    for k in in_l2:
        unique[k] = 0
        dma_reads[k] = reads[k]
    if handoff_reads:
        dma_reads["handoff"] = handoff_reads
    l2 = _l2_policy(plan.soc, u_in + weights + residual + output + handoff, unique, dma_reads,
                    ("handoff",) if absorb_handoff else (), {"output": output, "handoff": handoff})
    if "weights" not in l2.rereads or not weight_reads:
        return l2
    hit = dict(l2.hit_in)
    for t, u in zip(WEIGHT_TENSORS, weight_bytes(wl)):
        d = weight_reads.get(t, 0)
        if t == "w_pw":
            u = max(0, u - plan.w_pw_warm)
        if d > 0:
            hit[f"weights:{t}"] = max(0.0, 1.0 - u / d)
    if plan.prefetch:   # every byte read ahead is its first touch: from HBM
        hit["weights:w_pf"] = 0.0
    return replace(l2, hit_in=hit)
