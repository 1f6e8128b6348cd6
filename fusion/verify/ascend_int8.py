"""`check -t ascend[:SOC]` on an int8 (QDQ) model (310P3 and 910B2): each fused int8 DW->PW block (QDwSep)
runs its generated Ascend C kernel (fusion/codegen/ascendc/emit_int8.py) on the host emulator,
on the int8 tensor the model run gives it, and is compared with the compiled graph's CPU int8
kernel of the block on the same input: exact required (the kernel's arithmetic is ORT's
QLinearConv step for step). Its emulator counters (GM bytes read/written, vector instructions and
repeats, cube fractals) are compared with the modeled program's (schedules/quant_program.
program_counts) for the same plan. The emulated output feeds the rest of the model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fusion.codegen.ascendc.emit_int8 import Int8Kernel, emit_int8, from_nc1hwc0, to_nc1hwc0
from fusion.core.errors import MegafuseError
from fusion.cost.int8 import best_int8_plan
from fusion.emu import build_kernel
from schedules.quant_plan import int8_workload
from schedules.quant_program import program_counts

# the emulator's counter -> the program's figure
COUNTERS = ("gm_read_bytes", "gm_write_bytes", "vector_instructions", "vector_repeats", "cube_fractals")


def model_counters(k: Int8Kernel) -> dict[str, int]:
    """The modeled program's counts in the emulator's terms (GM bytes include the 910B kernel's
    workspace traffic: the int8 hand-off and the int32 accumulators, written and read once)."""
    pc = program_counts(k.plan)
    return {"gm_read_bytes": pc["gm_in"], "gm_write_bytes": pc["gm_out"], "vector_instructions": pc["vector_instrs"],
            "vector_repeats": pc["vector_repeats"], "cube_fractals": pc["fractals"]}


@dataclass(frozen=True)
class Int8BlockCheck:
    name: str                 # the QDwSep node (display with display_message)
    symbol: str
    soc: str
    tile: str
    cores: int
    max_steps: int            # max |kernel - CPU| in quantization steps (integers)
    mismatches: int
    elements: int
    counters: dict[str, int]
    model: dict[str, int]
    build_s: float
    run_s: float

    @property
    def counters_match(self) -> bool:
        return all(self.counters.get(k, 0) == self.model[k] for k in COUNTERS)

    def to_json(self) -> dict:
        return {"name": self.name, "kernel": self.symbol, "soc": self.soc, "variant": "int8-dwsep",
                "tile": self.tile, "block_dim": self.cores, "max_steps": self.max_steps,
                "mismatches": self.mismatches, "elements": self.elements,
                "counters": {k: self.counters.get(k, 0) for k in COUNTERS}, "cost_model": self.model,
                "counters_match": self.counters_match, "build_s": round(self.build_s, 3),
                "run_s": round(self.run_s, 3)}

    def describe(self) -> str:
        c, m = self.counters, self.model
        num = (f"exact ({self.elements:,} int8 outputs)" if self.max_steps == 0 else
               f"{self.mismatches:,} of {self.elements:,} outputs differ, up to {self.max_steps} step(s)")
        return (f"{self.name:<14} {self.soc} int8-dwsep {self.tile:<26} vs CPU int8: {num}  "
                f"GM r/w {c.get('gm_read_bytes', 0):,}/{c.get('gm_write_bytes', 0):,} B  "
                f"vec {c.get('vector_instructions', 0):,} instr / {c.get('vector_repeats', 0):,} rep  "
                f"cube {c.get('cube_fractals', 0):,} fractals  "
                f"({'equal to the model' if self.counters_match else 'model: ' + str(m)})")


def int8_kernels(cm) -> dict[str, Int8Kernel]:
    """The emitted kernel of every QDwSep of cm's graph, by node name."""
    soc = cm.target.soc
    out = {}
    for i, n in enumerate(x for x in cm.graph.nodes if x.op_type == "QDwSep"):
        best = best_int8_plan(int8_workload(cm.graph, n), soc)
        if best is None:
            raise MegafuseError(f"int8 block {len(out)}: no plan fits {soc.name}")
        out[n.name] = emit_int8(cm.graph, n, best[0], soc, i)
    return out


def build_int8(kernels: dict[str, Int8Kernel]) -> dict[str, tuple[object, float]]:
    """g++ builds against the emulator (cached by fusion.emu), by node name: (EmuKernel, seconds)."""
    built, by_text = {}, {}
    for name, k in kernels.items():
        if k.source not in by_text:
            t0 = time.perf_counter()
            by_text[k.source] = (build_kernel(k.source, k.symbol, soc=k.plan.soc), time.perf_counter() - t0)
        built[name] = by_text[k.source]
    return built


def run_int8_block(k: Int8Kernel, kern, x: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """The kernel on NCHW int8/uint8 x: (y NCHW, counters)."""
    wl = k.plan.wl
    y = np.zeros((wl.batch, wl.co1, wl.out_h, wl.out_w, 32), k.y_dtype)
    # the 910B workspace filled with 0x5A, not zeros: a slot read before it is written shows in y
    ws = [np.full(k.workspace_bytes, 0x5A, np.uint8)] if k.workspace_bytes else []
    res = kern.run([to_nc1hwc0(np.asarray(x, k.x_dtype), wl.c1), *k.consts, y, *ws], block_dim=k.block_dim,
                   soc=k.plan.soc, kernel_type=k.kernel_type)
    return from_nc1hwc0(y, k.cout), dict(res.counters)


def check_int8_block(name: str, k: Int8Kernel, built: tuple[object, float], x: np.ndarray,
                     cpu: np.ndarray) -> tuple[Int8BlockCheck, np.ndarray]:
    kern, build_s = built
    t0 = time.perf_counter()
    y, counters = run_int8_block(k, kern, x)
    run_s = time.perf_counter() - t0
    d = np.abs(y.astype(np.int32) - np.asarray(cpu).astype(np.int32))
    chk = Int8BlockCheck(name, k.symbol, k.plan.soc.name, k.plan.describe(), k.block_dim, int(d.max(initial=0)),
                         int((d > 0).sum()), int(d.size), counters, model_counters(k), build_s, run_s)
    return chk, y
