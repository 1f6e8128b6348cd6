"""The confined child of a kernel-only `megafuse emu run`: `python -m fusion.emu.kernel_child JOB.json`.

The parent (emu_cli.py) builds the kernel library, writes every buffer argument as a .npy file
and the job as JSON, and starts this module under confine.run_confined. Here each buffer is
copied into a guarded GM buffer (megafuse_emu_guard_alloc: guard pages on both sides, named
"argI"), the kernel runs, and the buffers go back into their .npy files. result.json holds the
counters, or the emulator's error message. Exit status: 0 ran, 1 the emulator stopped the
kernel, 86 a fatal signal (the runtime's one-line report is on stderr).
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import numpy as np

from fusion.emu.harness import EmuKernel, EmulationError
from fusion.core.soc import get_soc


def _guarded(lib: ctypes.CDLL, a: np.ndarray, label: str) -> np.ndarray:
    alloc = lib.megafuse_emu_guard_alloc
    alloc.restype = ctypes.c_void_p
    alloc.argtypes = [ctypes.c_uint64, ctypes.c_char_p]
    ptr = alloc(max(1, a.nbytes), label.encode())
    if not ptr:
        raise MemoryError(f"cannot allocate {a.nbytes} bytes for {label}")
    raw = (ctypes.c_uint8 * a.nbytes).from_address(ptr) if a.nbytes else bytearray()
    out = np.frombuffer(raw, dtype=a.dtype, count=a.size).reshape(a.shape)
    out[...] = a
    return out


def main(argv: list[str]) -> int:
    job_path = Path(argv[0])
    job = json.loads(job_path.read_text())
    result_path = job_path.with_name("result.json")
    spec = get_soc(job["soc"])
    try:
        kernel = EmuKernel(Path(job["lib"]), job["kernel"], job["label"], spec)
    except EmulationError as e:
        result_path.write_text(json.dumps({"error": e.message, "kernel_fault": False}))
        return 1
    kernel.keyword_type = job.get("keyword_type")
    args: list[object] = []
    files: dict[int, Path] = {}
    for i, a in enumerate(job["args"]):
        if a is None:
            args.append(None)
        elif "int" in a:
            args.append(int(a["int"]))
        else:
            files[i] = Path(a["npy"])
            args.append(_guarded(kernel._lib, np.load(files[i]), f"arg{i}"))
    try:
        res = kernel.run(args, block_dim=job["block_dim"], soc=spec, kernel_type=job.get("kernel_type"))
    except EmulationError as e:
        result_path.write_text(json.dumps({"error": e.message, "kernel_fault": e.kernel is not None}))
        return 1
    for i, path in files.items():
        np.save(path, np.ascontiguousarray(args[i]))
    result_path.write_text(json.dumps({"counters": res.counters}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
