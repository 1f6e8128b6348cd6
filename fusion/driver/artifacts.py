"""`megafuse compile -o DIR`: the compile summary, each fused block's KernelPlan and scheduled TIR.

The set is written into a fresh temporary directory beside DIR and renamed onto DIR only when
complete, so DIR never holds a partial set or a mix of two runs. An existing non-empty DIR is
replaced only when `force` is given and it is an earlier run's output (it holds the MARKER
file; anything else is never deleted, whatever the flags); it is renamed aside, then deleted. Every file name
is generated (block identifiers from fusion.core.sanitize) and checked to stay inside the directory.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from fusion.core.errors import MegafuseError
from fusion.driver.onnx_export import write_fused_onnx
from fusion.core.sanitize import display, inside
from schedules.dwsep_schedule import schedule_dwsep
from fusion.codegen.ascendc import write_ascend_package
from fusion.codegen.npuir import write_npuir

MARKER = ".megafuse-output"   # marks a directory this module wrote (and may replace with --force)


def write_artifacts(cm, out: Path, force: bool = False, fused_onnx_from=None) -> None:
    """fused_onnx_from: the model cm was compiled from; when given, DIR/model.fused.onnx too
    (fusion/driver/onnx_export.py)."""
    out = Path(out)
    _check_target(out, force)
    parent = out.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name[:40]}.partial-", dir=parent))
    except OSError as e:
        raise MegafuseError(f"cannot create output directory '{display(out)}': {e.strerror}") from None
    try:
        _write_set(cm, tmp)
        if fused_onnx_from is not None:
            write_fused_onnx(cm, fused_onnx_from, tmp)
        _replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _check_target(out: Path, force: bool) -> None:
    for parent in out.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise MegafuseError(f"cannot create output directory '{display(out)}': '{display(parent)}' "
                                    f"is not a directory")
            break
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise MegafuseError(f"output '{display(out)}' exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise MegafuseError(f"output directory '{display(out)}' is not empty and not a megafuse output; "
                                f"refusing to replace it (choose another -o)")
        if not force:
            raise MegafuseError(f"output directory '{display(out)}' holds an earlier run's output; "
                                f"pass --force to replace it")


def _write_set(cm, out: Path) -> None:

    def write(rel: str, text: str) -> None:
        path = inside(out, rel)
        try:
            path.write_text(text)
        except OSError as e:
            raise MegafuseError(f"cannot write '{display(rel)}' in the output directory: {e.strerror}") from None

    write(MARKER, "written by megafuse compile -o; replaced by the next run with --force\n")
    write("compile.json", json.dumps(cm.to_json(), indent=2))
    for block in cm.fused_blocks:
        write(f"{block.name}.plan.json", json.dumps(block.to_json(), indent=2))
        sch = schedule_dwsep(block.plan.workload, block.plan.tile)
        write(f"{block.name}.tir.py", sch.mod.script())
    if cm.target.kind == "ascend":  # Ascend C kernels, host code and the op package (fusion/ascendc)
        write_ascend_package(cm, out)
    if cm.target.kind == "npuir":  # AscendNPU IR modules for the vendor compiler (fusion/npuir)
        write_npuir(cm, out)


def _replace(tmp: Path, out: Path) -> None:
    """tmp onto out: a rename when out is absent or empty; else out is renamed aside first
    (two renames; a crash between them leaves the old set beside, never mixed)."""
    try:
        os.chmod(tmp, 0o755 & ~_umask())
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name[:40]}.old-", dir=tmp.parent))
            os.rename(out, old / "set")
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except OSError as e:
        raise MegafuseError(f"cannot move the output into '{display(out)}': {e.strerror}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
