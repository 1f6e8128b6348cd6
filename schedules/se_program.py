"""The steps squeeze-and-excitation adds to a two-phase program (schedules/se_plan.py has the split
and the buffers): phase 1's sums and reduce-conv share per DW unit, and the SE phase between the
DW phase and the GEMM. Every step is a schedules/steps type, so the counts and the simulator see
the SE work as they see the rest. MODELED.

Vector work, exactly as the Ascend C kernel issues it (fusion/codegen/ascendc/templates/
twophase_se*.h; `check -t ascend` compares the counts; soc repeat = 256 B, count forms):
  sums      per channel block of the unit: one op per valid pixel row into se_acc (fp16: Cast,
            fp32: Adds 0), the pixel count halved by Adds (ceil log2 px), one Adds into se_sum
  fc1       Duplicate 0 over se_pad floats, then per channel one Axpy of its W1 row (se_pad floats)
            with the channel's sum as the scalar; the share goes to se_ws with an atomic add
  hidden    Muls (1/HW), Add (b1), se_act over se_pad floats
  fc2       per hidden channel one Axpy of its W2 row (the unit's channels) onto the bias, the gate
            (4 instructions), fp16: a Cast of the scales
  scale     per pixel chunk of a channel block one Mul of its 16 scales over every pixel (as the
            bias over pixels: isa.bias_halves fp32, isa.bias_block16 fp16)
"""

from __future__ import annotations

from fusion.core.ir import C0
from schedules.activations import vector_instructions
from schedules.isa import ACC_BYTES, VecWork, bias_block16, bias_halves, count_form, itemsize
from schedules.loops import block_len, halvings, round_robin, split
from schedules.plan import KernelPlan
from schedules.se_plan import se_blocks, se_chunk, se_pad, se_units, w1_rows, w2_rows
from schedules.se_math import gate_kind
from schedules.steps import Copy, Phase, VectorOp, stages

GATE_INSTRS = {"sigmoid": 4, "hardsigmoid": 4}


def _op(name: str, buffer: str, elements: int, w: VecWork) -> VectorOp:
    return VectorOp(name, buffer, elements, w.instrs, w.repeats)


def se_dw_steps(plan: KernelPlan, cb: int, rows: int, cols: int) -> tuple:
    """What a DW unit of cb channel blocks over `rows` x `cols` valid output pixels adds after its
    DW: the channel sums, its share of the reduce conv, the atomic add of that share into se_ws."""
    wl, soc = plan.workload, plan.soc
    rp = se_pad(wl)
    per_block = count_form(soc, cols * C0, ACC_BYTES, rows) + count_form(soc, C0, ACC_BYTES)
    for h in halvings(rows * cols):
        per_block += count_form(soc, h * C0, ACC_BYTES)
    ch = cb * C0
    steps = [_op("se_sum", "se_sum", cb * rows * cols * C0, per_block * cb),
             _op("se_zero", "se_hid", rp, count_form(soc, rp, ACC_BYTES))]
    for pc in split(ch, w1_rows(wl, ch)):   # the unit's rows of W1 transposed, piece by piece
        steps += [Copy("weights", "in", "se_w1", "w_se1", pc * rp * ACC_BYTES, 1),
                  _op("se_fc1", "se_hid", pc * rp, count_form(soc, rp, ACC_BYTES, pc))]
    steps.append(Copy("handoff", "out", "se_hid", "se_ws", rp * ACC_BYTES, 1))
    return tuple(steps)


def se_phase_units(plan: KernelPlan) -> tuple:
    """The SE phase's units, (image, group of se_blocks channel blocks), image-major."""
    wl, soc = plan.workload, plan.soc
    b = itemsize(wl.dtype)
    r, rp = wl.se_mid, se_pad(wl)
    gb = se_blocks(wl, plan.cores)
    px = wl.out_height * wl.out_width
    chunks = split(px, se_chunk(wl))
    units = []
    for _ in range(wl.batch):
        for g0 in range(0, wl.c1, gb):
            blocks = block_len(g0 // gb, gb, wl.c1)
            ch = blocks * C0
            hidden = count_form(soc, rp, ACC_BYTES, 2 + vector_instructions(wl.se_act))
            gate = count_form(soc, ch, ACC_BYTES, GATE_INSTRS[gate_kind(wl.se_gate)] + (b == 2))
            mlp = [Copy("handoff", "in", "se_hid", "se_ws", rp * ACC_BYTES, 1),
                   Copy("weights", "in", "se_b1", "b_se1", rp * ACC_BYTES, 1),
                   Copy("weights", "in", "se_scale", "b_se2", ch * ACC_BYTES, 1),
                   _op("se_hidden", "se_hid", rp, hidden)]
            for rows in split(r, w2_rows(wl, plan.cores)):   # W2 transposed, the unit's columns, piece by piece
                mlp += [Copy("weights", "in", "se_w2", "w_se2", rows * ch * ACC_BYTES, rows),
                        _op("se_fc2", "se_scale", rows * ch, count_form(soc, ch, ACC_BYTES, rows))]
            mlp.append(_op("se_gate", "se_scale", ch, gate))
            its = [tuple(mlp)]
            for _blk in range(blocks):
                for c in chunks:
                    mul = bias_block16(soc, c) if b == 2 else bias_halves(soc, c)
                    its.append((Copy("handoff", "in", "se_tile", "dw_ws", c * C0 * b, 1, plan.tile.copies),
                                _op("se_apply", "se_tile", c * C0, mul),
                                Copy("handoff", "out", "se_tile", "dw_ws", c * C0 * b, 1, plan.tile.copies)))
            units.append(tuple(its))
    assert len(units) == se_units(wl, plan.cores)
    return tuple(units)


def se_assignment(plan: KernelPlan, units: int) -> tuple:
    return round_robin(units, min(plan.cores, units))


def se_phase(plan: KernelPlan, role: str) -> Phase:
    """The SE phase: its units on the DW phase's cores, each chunk in, scaled, out through the one
    se_tile buffer in series (templates/twophase_se.h waits MTE3 -> MTE2 before each chunk)."""
    units = se_phase_units(plan)
    pipeline = stages(plan, ("MTE2", "SE sums / workspace chunk", "se_tile"), ("vector", "SE MLP / scale", "se_tile"),
                      ("MTE3", "scaled chunk -> GM workspace"))
    return Phase("se", role, units, se_assignment(plan, len(units)), (), pipeline=pipeline)
