"""`megafuse compile -o DIR`: the compile summary, each fused block's KernelPlan and scheduled TIR.

The set is written into a fresh directory beside DIR and swapped onto DIR only when complete, so
DIR never holds a partial set or a mix of two runs; who may replace what, and when, is
fusion.core.outdir's job (one writer per DIR, the decision re-made at the swap, only megafuse's own
files ever deleted, leftovers of killed runs cleaned). Every file name is generated (block
identifiers from fusion.core.sanitize) and checked to stay inside the directory.
"""

from __future__ import annotations

import json
from pathlib import Path

from fusion.core.errors import MegafuseError
from fusion.driver.onnx_export import write_fused_onnx
from fusion.core.sanitize import display, inside
from schedules.dwsep_schedule import schedule_dwsep
from fusion.codegen.ascendc import write_ascend_package
from fusion.codegen.npuir import write_npuir
from fusion.core.outdir import MARKER, Reservation, reserve

__all__ = ["MARKER", "write_artifacts"]


def write_artifacts(cm, out: Path, force: bool = False, reservation: Reservation | None = None,
                    fused_onnx_from=None) -> None:
    """Write cm's set to `out`; `reservation` is the hold `cmd_compile` took before compiling
    (without one, the hold is taken here). fused_onnx_from: the model cm was compiled from; when
    given, DIR/model.fused.onnx too (fusion/driver/onnx_export.py)."""
    if reservation is None:
        with reserve(Path(out), force) as r:
            _write_reserved(cm, r, fused_onnx_from)
    else:
        _write_reserved(cm, reservation, fused_onnx_from)


def _write_reserved(cm, r: Reservation, fused_onnx_from=None) -> None:
    tmp = r.new_partial()
    try:
        _write_set(cm, tmp)
        if fused_onnx_from is not None:
            write_fused_onnx(cm, fused_onnx_from, tmp)
        r.commit(tmp)
    except BaseException:
        r.discard(tmp)
        raise


def _write_set(cm, out: Path) -> None:

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
        if cm.int8_blocks:
            raise MegafuseError("the Ascend op package has no int8 (QDQ) kernels yet; `check -t ascend:ascend310p3` "
                                "runs them on the emulator")
        write_ascend_package(cm, out)
    if cm.target.kind == "npuir":  # AscendNPU IR modules for the vendor compiler (fusion/npuir)
        write_npuir(cm, out)
