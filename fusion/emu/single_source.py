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

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from fusion.emu import harness
from fusion.emu.confine import FAULT_EXIT, fault_line, run_confined
from fusion.emu.harness import EmulationBuildError, EmulationError
from fusion.core.soc import SocSpec, get_soc
from fusion.emu.launch_rewrite import arch_flags, preprocess

FAULT_PREFIX = "megafuse-emu fault: "

def build_program(source: str | os.PathLike | Sequence[str | os.PathLike], soc: str | SocSpec = "ascend910b2",
                  defines: Sequence[str] = ()) -> Path:
    """Builds a program (host main + kernels) for `soc`; returns the executable.

    `source` is one file, or several (a host main.cpp and the file with its kernels): each is
    its own translation unit, linked together with the runtime. `defines` are extra g++ flags
    such as "-DSCENARIO_NUM=2". Cached like build_kernel, by a hash of the emulator, the
    flags, the sources and the headers next to them. Raises EmulationBuildError with g++'s
    first diagnostics."""
    spec = soc if isinstance(soc, SocSpec) else get_soc(soc)
    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    src_paths = [Path(s).resolve() for s in sources]
    rewritten = []
    for src_path in src_paths:
        try:
            rewritten.append(preprocess(src_path.read_text()))
        except (OSError, UnicodeDecodeError) as e:
            raise EmulationBuildError(f"cannot read {src_path.name}: {e}") from None
    for d in defines:
        if not d.startswith("-D") or "\n" in d:
            raise EmulationBuildError(f"build_program: {d!r} is not a -DNAME[=VALUE] flag")
    flags = [*arch_flags(spec), *defines]
    # the include directory's path is baked into the program (aclrtc's compile command, below): a
    # program built from another checkout (since moved or deleted) must not be reused
    parts = harness._emulator_parts() + [" ".join(flags).encode(), b"program", str(harness.INCLUDE_DIR).encode()]
    for text in rewritten:
        parts.append(text.encode())
    dirs = list(dict.fromkeys(p.parent for p in src_paths))
    for f in harness._header_files(dirs, recursive=False):
        parts += [str(f).encode(), f.read_bytes()]
    digest = harness._digest(parts)
    exe = harness.cache_dir() / f"program-{digest}"
    if exe.exists():
        return exe
    runtime = harness._runtime_object()
    units = []
    for i, (src_path, text) in enumerate(zip(src_paths, rewritten)):
        unit = harness.cache_dir() / f"program-{digest}-{i}.cpp"
        unit.parent.mkdir(parents=True, exist_ok=True)
        # #line keeps g++'s diagnostics and the emulator's source locations on the user's file.
        quoted = str(src_path).replace("\\", "\\\\").replace('"', '\\"')
        tmp = unit.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(f'#line 1 "{quoted}"\n' + text)
        os.replace(tmp, unit)
        units.append(str(unit))
    includes = ["-I", str(harness.INCLUDE_DIR)] + [a for d in dirs for a in ("-iquote", str(d))]
    # aclrtc (acl/acl_rt_compile.h) compiles kernel strings at run time with this same build
    rtc_argv = [harness.CXX, *harness.CXX_FLAGS, *flags, "-I", str(harness.INCLUDE_DIR), str(runtime)]
    flags = [*flags, "-DMEGAFUSE_EMU_RTC_ARGV=" + ",".join(json.dumps(a) for a in rtc_argv)]
    names = " + ".join(p.name for p in src_paths)
    harness._atomic_build(
        exe, lambda out: [harness.CXX, *harness.CXX_FLAGS, *flags, *includes, "-x", "c++", *units, "-x", "none",
                          str(runtime), "-o", str(out)],
        f"program {names} for {spec.name}")
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
    """Runs a program from build_program, confined (confine.py); a hang past `timeout` seconds is
    an EmulationError, a crash or an out-of-bounds GM access a `fault`."""
    res = run_confined([str(exe), *args], cwd=cwd, timeout=timeout)
    if res.timed_out:
        raise EmulationError(f"program {exe.name} did not finish within {timeout:g} s")
    fault = None
    if res.returncode == FAULT_EXIT:
        fault = fault_line(res.stderr)
        if fault is None:
            lines = [ln for ln in res.stderr.splitlines() if ln.startswith(FAULT_PREFIX)]
            fault = lines[-1][len(FAULT_PREFIX):] if lines else "the program exited with the emulator's fault status"
    elif res.signal is not None:
        fault = f"program {exe.name} was killed by {res.signal}"
    return ProgramResult(res.returncode, res.stdout, res.stderr, fault)


def has_main(text: str) -> bool:
    """Whether a source defines a host `main` (single-source program)."""
    return re.search(r"^\s*(?:int|int32_t|auto)\s+main\s*\(", text, flags=re.M) is not None
