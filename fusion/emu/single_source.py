"""Single-source Ascend C (`.asc`, or `.cpp` with a host `main`) on the host emulator.

The devkit's current samples put the kernel and its host program in one file: `main` calls
aclrtSetDevice / aclrtMalloc / aclrtMemcpy ... and launches with `kernel<<<blockDim, nullptr,
stream>>>(args...)`. To build such a file with g++ the launch is rewritten (line numbers kept)
into a call of the emulator's launcher (include/megafuse_emu/launch.h):

    add_custom<<<8, nullptr, stream>>>(x, y, z)
    ->  ::megafuse_emu::MakeLaunch(&add_custom, "add_custom", MEGAFUSE_EMU_KERNEL_AIV_ONLY, 8, nullptr, stream)(x, y, z)

The kernel type comes from the kernel's definition: `__vector__` -> AIV_ONLY, `__cube__` ->
AIC_ONLY, and a KERNEL_TASK_TYPE_DEFAULT(...) in its body wins over both; it applies on arch
2201 only. `__NPU_ARCH__` is defined from the SoC, so a program is built per SoC.

    exe = build_program("add.asc", soc="ascend910b2")
    result = run_program(exe, cwd=workdir)    # ProgramResult(returncode, stdout, stderr, fault)
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fusion.emu import harness
from fusion.emu.harness import EmulationBuildError, EmulationError
from fusion.core.soc import SocSpec, get_soc
from fusion.emu.launch_rewrite import arch_flags, preprocess

FAULT_EXIT = 86  # launch.h kFaultExit
FAULT_PREFIX = "megafuse-emu fault: "


def build_program(source: str | os.PathLike, soc: str | SocSpec = "ascend910b2") -> Path:
    """Builds a single-source program (host main + kernels) for `soc`; returns the executable.

    Cached like build_kernel, by a hash of the emulator, the flags, the source and the headers
    next to it. Raises EmulationBuildError with g++'s first diagnostics."""
    spec = soc if isinstance(soc, SocSpec) else get_soc(soc)
    src_path = Path(source).resolve()
    try:
        text = src_path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise EmulationBuildError(f"cannot read {src_path.name}: {e}") from None
    rewritten = preprocess(text)
    flags = arch_flags(spec)
    parts = harness._emulator_parts() + [" ".join(flags).encode(), b"program", rewritten.encode()]
    for f in harness._header_files([src_path.parent], recursive=False):
        parts += [str(f).encode(), f.read_bytes()]
    digest = harness._digest(parts)
    exe = harness.cache_dir() / f"program-{digest}"
    if exe.exists():
        return exe
    runtime = harness._runtime_object()
    unit = harness.cache_dir() / f"program-{digest}.cpp"
    unit.parent.mkdir(parents=True, exist_ok=True)
    # #line keeps g++'s diagnostics and the emulator's source locations on the user's file.
    quoted = str(src_path).replace("\\", "\\\\").replace('"', '\\"')
    tmp = unit.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(f'#line 1 "{quoted}"\n' + rewritten)
    os.replace(tmp, unit)
    includes = ["-I", str(harness.INCLUDE_DIR), "-iquote", str(src_path.parent)]
    harness._atomic_build(
        exe, lambda out: [harness.CXX, *harness.CXX_FLAGS, *flags, *includes, "-x", "c++", str(unit), "-x", "none",
                          str(runtime), "-o", str(out)],
        f"program {src_path.name} for {spec.name}")
    return exe


@dataclass(frozen=True)
class ProgramResult:
    """One run of a built program: its exit status and output; `fault` is the emulator's message
    when a kernel broke a rule (the program then exits with FAULT_EXIT)."""

    returncode: int
    stdout: str
    stderr: str
    fault: str | None


def run_program(exe: Path, args: list[str] | tuple[str, ...] = (), cwd: str | os.PathLike | None = None,
                timeout: float = 120.0) -> ProgramResult:
    """Runs a program from build_program; a hang past `timeout` seconds is an EmulationError."""
    try:
        proc = subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              errors="replace")
    except subprocess.TimeoutExpired:
        raise EmulationError(f"program {exe.name} did not finish within {timeout:g} s") from None
    fault = None
    if proc.returncode == FAULT_EXIT:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(FAULT_PREFIX)]
        fault = lines[-1][len(FAULT_PREFIX):] if lines else "the program exited with the emulator's fault status"
    return ProgramResult(proc.returncode, proc.stdout, proc.stderr, fault)


def has_main(text: str) -> bool:
    """Whether a source defines a host `main` (single-source program)."""
    return re.search(r"^\s*(?:int|int32_t|auto)\s+main\s*\(", text, flags=re.M) is not None
