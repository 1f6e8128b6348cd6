"""`megafuse compile -o DIR`: the compile summary, each fused block's KernelPlan and scheduled TIR."""

from __future__ import annotations

import json
from pathlib import Path

from fusion.errors import MegafuseError
from schedules.dwsep_schedule import schedule_dwsep


def write_artifacts(cm, out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MegafuseError(f"cannot create output directory '{out}': {e.strerror}") from None
    (out / "compile.json").write_text(json.dumps(cm.to_json(), indent=2))
    for block in cm.fused_blocks:
        (out / f"{block.name}.plan.json").write_text(json.dumps(block.to_json(), indent=2))
        sch = schedule_dwsep(block.plan.workload, block.plan.tile)
        (out / f"{block.name}.tir.py").write_text(sch.mod.script())
    if cm.target.kind == "ascend":  # Ascend C kernels, host code and the op package (fusion/ascendc)
        from fusion.ascendc import write_ascend_package
        write_ascend_package(cm, out)
    if cm.target.kind == "npuir":  # AscendNPU IR modules for the vendor compiler (fusion/npuir)
        from fusion.npuir import write_npuir
        write_npuir(cm, out)
