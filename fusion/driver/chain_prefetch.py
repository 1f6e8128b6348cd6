"""Reads ahead into L2 inside a chain (schedules/prefetch.py): which member's DW phase reads which
later member's PW weights. MODELED.

Pattern: a chain on a SoC whose cores run both phases (310P: one launch of AI cores, the chain
kernel's host blocks call SetPrefetch); a later member (the consumer) whose first read of its PW
weights comes from HBM, and an earlier member (the host) with a DW phase.
Legality (chain_prefetch_ok): the host's DW phase can read ahead (schedules/prefetch.prefetch_ok)
and its L1 holds the scratch (KernelPlan.fits); every distinct byte the chain touches from the
host's start to the consumer's end -- inputs, residuals made before the span, workspaces, outputs,
weights, every byte read ahead by the members in it -- fits in L2, so under the L2 model's LRU rule (schedules/l2.py, the rule a kernel's own re-reads
get: the chain is one kernel) the bytes are still there when the consumer reads them; each host
reads for one consumer.
Rewrite: by the same simulator, greedily, STEPS bytes at a time: the (host, consumer) pair whose
host body grows least against the consumer body's saving, while the sum shrinks; the plans carry
prefetch / prefetch_to (host) and w_pw_warm (consumer), the chain kernel the ranges
(prefetch_ranges).

Not on 910B: the vendor's own torch_npu.npu_prefetch reads weights ahead into L2 for its kernels on
Atlas A2 (and not on the Atlas inference series, 310P), so there the lever would not be fusion's;
and 910B chains run in image chunks, whose steps this rule does not time.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from schedules.footprint import fused_min_bytes
from schedules.l2 import input_tensor_bytes
from schedules.prefetch import prefetch_ok, prefetch_ranges
from schedules.traffic import weight_bytes
from schedules.twophase import workspace_bytes

log = logging.getLogger("megafuse.chain")

STEPS = (128 * 1024, 64 * 1024, 32 * 1024, 16 * 1024)   # bytes per greedy step: each search goes on from the one before


def _touched(plan, first: bool, residual_outside: bool) -> int:
    """Distinct bytes a member touches: its input (the span's first member only: later ones are the
    member before's output), a residual produced before the span, its DW workspace, output, weights
    and what it reads ahead itself."""
    wl = plan.workload
    mins = fused_min_bytes(wl)
    y = mins["output"]
    return ((input_tensor_bytes(wl) if first else 0) + (y if residual_outside else 0)
            + workspace_bytes(wl, plan.soc)["dw_ws"] + y + mins["weights"] + plan.prefetch)


def resident_span(plans: list, h: int, c: int, ahead: int, residual_from=()) -> int:
    """Distinct bytes from member h's start to member c's end, member h reading `ahead` bytes ahead
    (the others what their plans read ahead). residual_from: per member its residual's producer
    (Chain.residual_from: -1 the chain's x, None none); one made before member h - 1 is read from
    outside the span (member h - 1's output is member h's input, counted)."""
    res = tuple(residual_from) or (None,) * len(plans)
    return sum(_touched(replace(plans[k], prefetch=ahead) if k == h else plans[k], k == h,
                        res[k] is not None and res[k] < h - 1) for k in range(h, c + 1))


def chain_prefetch_ok(plans: list, h: int, c: int, ahead: int, residual_from=()) -> str | None:
    """Why member h cannot read `ahead` bytes for member c (None: it can; residual_from: resident_span)."""
    p = replace(plans[h], prefetch=ahead, prefetch_to=c - h)
    why = prefetch_ok(p)
    if why:
        return why
    if not p.fits():
        return "its L1 does not hold the read-ahead scratch"
    span = resident_span(plans, h, c, ahead, residual_from)
    if span > p.soc.l2_bytes:
        return f"{span} distinct bytes between the two reads exceed L2 ({p.soc.l2_bytes})"
    return None


def read_ahead(names: tuple[str, ...], plans: dict, body, step: int, residual_from=()) -> dict:
    """`plans` (member name -> plan) with reads ahead where the simulator finds them faster (the
    module's rewrite), `step` bytes at a time; body(name, plan) -> the member's body in the chain, µs."""
    seq = [plans[n] for n in names]
    if not seq or not seq[0].soc.coupled:
        return plans
    ahead = [p.prefetch for p in seq]     # bytes member k reads ahead (a search may go on from another's)
    to = [p.prefetch_to for p in seq]     # for member k + to[k]
    warm = [p.w_pw_warm for p in seq]     # bytes of member k's w_pw read ahead
    cur = [body(n, p) for n, p in zip(names, seq)]
    while True:
        best = None
        for c in range(1, len(seq)):
            w_pw = weight_bytes(seq[c].workload)[2]
            if warm[c] + step > w_pw:
                continue
            gain = body(names[c], replace(seq[c], w_pw_warm=warm[c] + step)) - cur[c]
            if gain >= 0:
                continue
            for h in range(c):
                if ahead[h] and h + to[h] != c:
                    continue
                if chain_prefetch_ok(seq, h, c, ahead[h] + step, residual_from) is not None:
                    continue
                cost = body(names[h], replace(seq[h], prefetch=ahead[h] + step, prefetch_to=c - h)) - cur[h]
                if best is None or cost + gain < best[0]:
                    best = (cost + gain, h, c)
        if best is None or best[0] >= 0:
            break
        _, h, c = best
        ahead[h] += step
        to[h] = c - h
        warm[c] += step
        seq[h] = replace(seq[h], prefetch=ahead[h], prefetch_to=to[h])
        seq[c] = replace(seq[c], w_pw_warm=warm[c])
        cur[h], cur[c] = body(names[h], seq[h]), body(names[c], seq[c])
    out = dict(plans)
    for n, p in zip(names, seq):
        out[n] = p
    return out


def describe_reads(names: tuple[str, ...], plans: dict) -> list[str]:
    """One line per read ahead of the chain whose members are `names`."""
    return [f"{names[h]} reads {nbytes // 1024} KiB of {names[c]}'s PW weights ahead into L2 (bytes {start}-"
            f"{start + nbytes})" for h, c, start, nbytes in prefetch_ranges([plans[n] for n in names])]
