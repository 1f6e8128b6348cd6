"""The steps squeeze-and-excitation adds to a two-phase program (schedules/se_plan.py has the split
and the buffers): phase 1's sums and reduce-conv share per DW unit, and the SE phase between the
DW phase and the GEMM. Every step is a schedules/steps type, so the counts and the simulator see
the SE work as they see the rest. MODELED.

Vector work, as the ops would issue (fusion/core/soc repeat = 256 B):
  sums      fp16: one count-form Cast of the block to fp32 (se_acc); then halving Adds of the
            pixel rows (log2 px instructions, about px x C0 fp32 of repeats in all), then one Add
            into se_sum -- per channel block of the unit
  fc1       per hidden channel one Mul of its cb x C0 columns by the sums (count form), then one
            reduce instruction per 64 fp32 of a row, se_mid repeats each
  hidden    Muls (1/HW), Add (b1), se_act over se_mid floats (count form)
  fc2       one Axpy per hidden channel over the unit's gb x C0 channels (count form), Add (b2),
            the gate (sigmoid: Muls, Exp, Adds, Div; hardsigmoid: 4), fp16: a Cast of the scales
  scale     per pixel chunk one Mul of a 16-channel scale over every pixel (as the bias over
            pixels: isa.bias_halves fp32, isa.bias_block16 fp16)
"""

from __future__ import annotations

import math

from fusion.core.ir import C0
from schedules.activations import vector_instructions
from schedules.isa import ACC_BYTES, VecWork, bias_block16, bias_halves, count_form, itemsize
from schedules.loops import block_len, round_robin, split
from schedules.plan import KernelPlan
from schedules.se_plan import se_blocks, se_chunk, se_units, w1_rows, w2_chans
from schedules.steps import Copy, VectorOp
from schedules.se_math import gate_kind

GATE_INSTRS = {"sigmoid": 4, "hardsigmoid": 4}
REDUCE_LANES = 64      # fp32 a reduce instruction sums per repeat (one 256 B repeat)


def _op(name: str, buffer: str, elements: int, w: VecWork) -> VectorOp:
    return VectorOp(name, buffer, elements, w.instrs, w.repeats)


def se_dw_steps(plan: KernelPlan, cb: int, pixels: int) -> tuple:
    """What a DW unit of cb channel blocks over `pixels` output pixels adds after its DW: the
    channel sums, its share of the reduce conv, the atomic add of that share into se_ws."""
    wl, soc = plan.workload, plan.soc
    rep = soc.vector_repeat_bytes
    n = pixels * C0
    sums = VecWork(cb * max(1, math.ceil(math.log2(max(pixels, 1)))), cb * math.ceil(n * ACC_BYTES / rep)) \
        + count_form(soc, C0, ACC_BYTES, cb)
    if itemsize(wl.dtype) == 2:
        sums += count_form(soc, n, ACC_BYTES, cb)
    cols = cb * C0
    r = wl.se_mid
    steps = [_op("se_sum", "se_sum", cb * n, sums)]
    for rows in split(r, w1_rows(wl, cols)):   # W1's columns of the unit, piece by piece
        fc1 = count_form(soc, cols, ACC_BYTES, rows) + VecWork(math.ceil(cols / REDUCE_LANES),
                                                             rows * math.ceil(cols / REDUCE_LANES))
        steps += [Copy("weights", "in", "se_w1", "w_se1", rows * cols * ACC_BYTES, rows),
                  _op("se_fc1", "se_hid", rows * cols, fc1)]
    steps.append(Copy("handoff", "out", "se_hid", "se_ws", r * ACC_BYTES, 1))
    return tuple(steps)


def se_phase_units(plan: KernelPlan) -> tuple:
    """The SE phase's units, (image, group of se_blocks channel blocks), image-major."""
    wl, soc = plan.workload, plan.soc
    b = itemsize(wl.dtype)
    r = wl.se_mid
    gb = se_blocks(wl, plan.cores)
    px = wl.out_height * wl.out_width
    chunks = split(px, se_chunk(wl))
    slots = plan.tile.copies
    units = []
    for _ in range(wl.batch):
        for g0 in range(0, wl.c1, gb):
            blocks = block_len(g0 // gb, gb, wl.c1)
            ch = blocks * C0
            hidden = count_form(soc, r, ACC_BYTES, 2 + vector_instructions(wl.se_act))
            gate = count_form(soc, ch, ACC_BYTES, 1 + GATE_INSTRS[gate_kind(wl.se_gate)] + (b == 2))
            mlp = [Copy("handoff", "in", "se_hid", "se_ws", r * ACC_BYTES, 1),
                   Copy("weights", "in", "se_hid", "b_se1", r * ACC_BYTES, 1),
                   Copy("weights", "in", "se_scale", "b_se2", ch * ACC_BYTES, 1),
                   _op("se_hidden", "se_hid", r, hidden)]
            for cc in split(ch, w2_chans(wl, ch)):   # W2's rows of the unit (channel-major), piece by piece
                fc2 = count_form(soc, r, ACC_BYTES, cc) + VecWork(math.ceil(r / REDUCE_LANES),
                                                                cc * math.ceil(r / REDUCE_LANES))
                mlp += [Copy("weights", "in", "se_w2", "w_se2", cc * r * ACC_BYTES, 1),
                        _op("se_fc2", "se_scale", cc * r, fc2)]
            mlp.append(_op("se_gate", "se_scale", ch, gate))
            its = [tuple(mlp)]
            for _blk in range(blocks):
                for c in chunks:
                    mul = bias_block16(soc, c) if b == 2 else bias_halves(soc, c)
                    its.append((Copy("handoff", "in", "se_tile", "dw_ws", c * C0 * b, 1, slots),
                                _op("se_apply", "se_tile", c * C0, mul),
                                Copy("handoff", "out", "se_tile", "dw_ws", c * C0 * b, 1)))
            units.append(tuple(its))
    assert len(units) == se_units(wl, plan.cores)
    return tuple(units)


def se_assignment(plan: KernelPlan, units: int) -> tuple:
    return round_robin(units, min(plan.cores, units))
