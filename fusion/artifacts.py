"""`megafuse compile -o DIR`: the compile summary, each fused block's KernelPlan and scheduled TIR.

The set is written into a fresh directory beside DIR and swapped onto DIR only when complete, so
DIR never holds a partial set or a mix of two runs; who may replace what, and when, is
fusion.outdir's job (one writer per DIR, the decision re-made at the swap, only megafuse's own
files ever deleted, leftovers of killed runs cleaned). Every file name is generated (block
identifiers from fusion.sanitize) and checked to stay inside the directory.
"""

from __future__ import annotations

import json
from pathlib import Path

from fusion.errors import MegafuseError
from fusion.outdir import MARKER, Reservation, reserve
from fusion.sanitize import display, inside

__all__ = ["MARKER", "write_artifacts"]


def write_artifacts(cm, out: Path, force: bool = False, reservation: Reservation | None = None) -> None:
    """Write cm's set to `out`; `reservation` is the hold `cmd_compile` took before compiling
    (without one, the hold is taken here)."""
    if reservation is None:
        with reserve(Path(out), force) as r:
            _write_reserved(cm, r)
    else:
        _write_reserved(cm, reservation)


def _write_reserved(cm, r: Reservation) -> None:
    tmp = r.new_partial()
    try:
        _write_set(cm, tmp)
        r.commit(tmp)
    except BaseException:
        r.discard(tmp)
        raise


def _write_set(cm, out: Path) -> None:
    from schedules.dwsep_schedule import schedule_dwsep

    def write(rel: str, text: str) -> None:
        path = inside(out, rel)
        try:
            path.write_text(text)
        except OSError as e:
            raise MegafuseError(f"cannot write '{display(rel)}' in the output directory: {e.strerror}") from None

    write("compile.json", json.dumps(cm.to_json(), indent=2))
    for block in cm.fused_blocks:
        write(f"{block.name}.plan.json", json.dumps(block.to_json(), indent=2))
        sch = schedule_dwsep(block.plan.workload, block.plan.tile)
        write(f"{block.name}.tir.py", sch.mod.script())
    if cm.target.kind == "ascend":  # Ascend C kernels, host code and the op package (fusion/ascendc)
        from fusion.ascendc import write_ascend_package
        write_ascend_package(cm, out)
    if cm.target.kind == "npuir":  # AscendNPU IR modules for the vendor compiler (fusion/npuir)
        from fusion.npuir import write_npuir
        write_npuir(cm, out)
