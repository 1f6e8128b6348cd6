"""Build emitted Ascend C kernels on the host emulator and run them on NumPy buffers (shared by
`check -t ascend` for blocks and for chains)."""

from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from fusion.codegen.ascendc import EmittedKernel
from fusion.core.errors import MegafuseError
from fusion.emu import EmuKernel, build_kernel, cache_dir


# ---------------------------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------------------------
def kernel_dir(ek: EmittedKernel, root: Path | None = None) -> Path:
    """Where the kernel's sources are written for the emulator build (content-addressed)."""
    digest = hashlib.sha256((ek.source + "\0" + ek.tiling_header).encode()).hexdigest()[:16]
    return (root or cache_dir() / "ascendc") / f"{ek.symbol}-{digest}"


def write_sources(ek: EmittedKernel, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / ek.source_name
    hdr = directory / ek.tiling_header_name
    for path, text in ((src, ek.source), (hdr, ek.tiling_header)):
        if not path.exists() or path.read_text() != text:
            tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
    return src


def build_emitted(ek: EmittedKernel, root: Path | None = None) -> dict[str, EmuKernel]:
    """g++ build of the generated kernel against the emulation (cached); one EmuKernel per launch."""
    src = write_sources(ek, kernel_dir(ek, root))
    return {ln.symbol: build_kernel(src, ln.symbol) for ln in ek.launches}


def build_all(kernels: list[EmittedKernel], jobs: int | None = None) -> tuple[list[dict], list[float]]:
    """Builds in parallel (each build is a g++ process); kernels with the same text (plans that
    differ only in their tiling data) are built once."""
    distinct = list({(ek.source, ek.tiling_header): ek for ek in kernels}.values())
    jobs = jobs or max(1, min(len(distinct), os.cpu_count() or 1))

    def one(ek):
        t0 = time.perf_counter()
        return build_emitted(ek), time.perf_counter() - t0

    if jobs == 1 or len(distinct) <= 1:
        done = [one(ek) for ek in distinct]
    else:
        with ThreadPoolExecutor(jobs) as pool:
            done = list(pool.map(one, distinct))
    by_text = {(ek.source, ek.tiling_header): d for ek, d in zip(distinct, done)}
    out = [by_text[ek.source, ek.tiling_header] for ek in kernels]
    return [o[0] for o in out], [o[1] for o in out]


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------
def run_emitted(ek: EmittedKernel, built: dict[str, EmuKernel], arrays: dict[str, np.ndarray],
                x_slack: int = 0):
    """Runs the block's launches on NumPy buffers. arrays: x, w_dw, b_dw, w_pw, b_pw[, s_dw][, s_pw][, res]
    (NC1HWC0 / blocked layouts, contiguous). x_slack: x is followed by that many readable zero
    bytes (a chain boundary tensor's slack, fusion/codegen/ascendc/emit_chain.BOUNDARY_SLACK). Returns (y,
    summed counters, per-launch results)."""
    wl = ek.plan.workload
    y_spec = ek.arg("y")
    y = np.full(y_spec.shape, np.nan, dtype=np.dtype(wl.dtype))  # unwritten outputs show up as NaN
    # the 910B hand-off slots (GetUserWorkspace returns the pointer itself on the emulator: no
    # system workspace in front); NaN-filled so a slot read before it is written shows
    ws = np.full(ek.workspace_bytes // 2, np.nan, np.float16).view(np.uint8) if ek.workspace_bytes else None
    if ws is not None:
        ws[:ek.workspace_zeroed_bytes] = 0   # the soft SyncAll's flags start at 0
    bufs = {"y": y, "tiling": ek.tiling_bytes(), "workspace": ws}
    for name, arr in arrays.items():
        spec = ek.arg(name)
        a = np.ascontiguousarray(arr, dtype=np.dtype(spec.dtype))
        if a.shape != spec.shape:
            raise MegafuseError(f"kernel {ek.symbol}: argument {name} has shape {a.shape}, expected {spec.shape}")
        if name == "x" and x_slack:
            a = np.concatenate([a.reshape(-1).view(np.uint8), np.zeros(x_slack, np.uint8)])
        bufs[name] = a
    totals: dict[str, int] = {}
    results = []
    for ln in ek.launches:
        res = built[ln.symbol].run([bufs[a] for a in ln.args], block_dim=ln.block_dim, soc=ek.plan.soc,
                                   kernel_type=ln.kernel_type)
        results.append(res)
        for k, v in res.counters.items():
            totals[k] = totals.get(k, 0) + v
    return y, totals, results
