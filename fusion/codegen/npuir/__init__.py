"""AscendNPU IR (HIVM dialect MLIR) for the fused blocks, checked by the vendor's BiShengIR compiler.

  emit      one module per fused block, from its KernelPlan
  vendor    runs bishengir-compile (the `ascendnpu-ir` package) and reads what it prints
  check     `megafuse check -t npuir`: every module through the vendor pipeline, UB peak vs plan
"""

from __future__ import annotations

from pathlib import Path

from fusion.codegen.npuir.emit import emit_module


def module_file(index: int) -> str:
    """The generated file name of block `index` (never derived from model strings)."""
    return f"npuir_block{index}.mlir"


def write_npuir(cm, out: Path) -> list[Path]:
    """Write one module per fused block of a compiled model into `out`."""
    paths = []
    for i, block in enumerate(cm.fused_blocks):
        path = out / module_file(i)
        path.write_text(emit_module(block.plan, i, block.plan.soc.name))
        paths.append(path)
    return paths
