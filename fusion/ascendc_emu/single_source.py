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
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from fusion.ascendc_emu import harness
from fusion.ascendc_emu.confine import FAULT_EXIT, fault_line, run_confined
from fusion.ascendc_emu.harness import EmulationBuildError, EmulationError
from fusion.soc import SocSpec, get_soc

FAULT_PREFIX = "megafuse-emu fault: "

_QUALS = r"(?:(?:__mix__\s*\(\s*\d+\s*,\s*\d+\s*\)|__\w+__|extern\s+\"C\"|inline|static)\s*)*"
# __mix__(aic, aiv) -> the MIX kernel type it declares
_MIX = re.compile(r"__mix__\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_MIX_TYPES = {("1", "2"): "MIX_AIC_1_2", ("1", "1"): "MIX_AIC_1_1", ("1", "0"): "MIX_AIC_1_0", ("0", "1"): "MIX_AIV_1_0"}
# `__global__ __vector__ void k(` and the samples' `__vector__ __global__ void k(` alike
_KERNEL_DEF = re.compile(rf"(?P<pre>{_QUALS})__global__\s+(?P<quals>{_QUALS})void\s+(?P<name>[A-Za-z_]\w*)\s*\(")
_LAUNCH = re.compile(
    r"(?P<callee>[A-Za-z_][\w:]*(?:\s*<(?:[^<>;]|<[^<>;]*>)*>)?)\s*<<<(?P<cfg>(?:(?!>>>)[^;])*)>>>\s*\(")
_TASK_TYPE = re.compile(r"KERNEL_TASK_TYPE_DEFAULT\s*\(\s*(?:\w+::)?KERNEL_TYPE_(?P<type>\w+)\s*\)")
_C_TYPES = {"AIV_ONLY", "AIC_ONLY", "MIX_AIV_1_0", "MIX_AIC_1_0", "MIX_AIC_1_1", "MIX_AIC_1_2"}


def _body(text: str, start: int) -> str:
    """The brace-balanced body of the function whose parameter list starts at `start`."""
    open_ = text.find("{", start)
    if open_ < 0:
        return ""
    depth = 0
    for i in range(open_, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_:i + 1]
    return text[open_:]


def keyword_types(text: str) -> dict[str, str]:
    """Kernel name -> the type its keywords give: "AIV_ONLY" (__vector__), "AIC_ONLY" (__cube__)
    or "UNSPECIFIED"."""
    found: dict[str, str] = {}
    for m in _KERNEL_DEF.finditer(text):
        quals = m.group("pre") + " " + m.group("quals")
        mix = _MIX.search(quals)
        found[m.group("name")] = ("AIV_ONLY" if "__vector__" in quals else "AIC_ONLY" if "__cube__" in quals
                                  else _MIX_TYPES.get(mix.groups(), "UNSPECIFIED") if mix else "UNSPECIFIED")
    return found


def kernel_types(text: str) -> dict[str, str]:
    """Kernel name -> emulator kernel-type macro suffix (e.g. "AIV_ONLY", "UNSPECIFIED"): the
    keyword's, or the kernel's KERNEL_TASK_TYPE_DEFAULT when it has one."""
    found: dict[str, str] = {}
    keywords = keyword_types(text)
    for m in _KERNEL_DEF.finditer(text):
        kind = keywords[m.group("name")]
        declared = _TASK_TYPE.search(_body(text, m.end()))
        if declared and declared.group("type") in _C_TYPES:
            kind = declared.group("type")
        found[m.group("name")] = kind
    return found


def declare_mix(text: str) -> str:
    """A `__mix__(1, 2)` kernel declares its MIX type by keyword: the body gets the equivalent
    KERNEL_TASK_TYPE_DEFAULT(...) as its first statement (on the same line)."""
    inserts = []
    for m in _KERNEL_DEF.finditer(text):
        mix = _MIX.search(m.group("pre") + " " + m.group("quals"))
        kind = _MIX_TYPES.get(mix.groups()) if mix else None
        open_ = text.find("{", m.end())
        if kind and open_ >= 0 and ";" not in text[m.end():open_]:
            inserts.append((open_ + 1, f" KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_{kind});"))
    for pos, stmt in reversed(inserts):
        text = text[:pos] + stmt + text[pos:]
    return text


def preprocess(text: str) -> str:
    """Rewrites every `K<<<cfg>>>(` launch into the emulator's launcher and declares __mix__
    kernels' types (declare_mix), keeping line numbers."""
    types = kernel_types(text)
    text = declare_mix(text)

    def launch(m: re.Match) -> str:
        callee = m.group("callee").strip()
        base = re.sub(r"\s*<.*$", "", callee, flags=re.S).split("::")[-1]
        kind = types.get(base, "UNSPECIFIED")
        cfg = " ".join(m.group("cfg").split())
        newlines = m.group(0).count("\n")
        return (f'::megafuse_emu::MakeLaunch(&{" ".join(callee.split())}, "{base}", MEGAFUSE_EMU_KERNEL_{kind}, {cfg})('
                + "\n" * newlines)

    return _LAUNCH.sub(launch, text)


def arch_flags(spec: SocSpec) -> list[str]:
    """-D flags that build a source for one SoC: __NPU_ARCH__ and the launcher's SoC table."""
    soc = (f'{{"{spec.name}",{int(spec.arch)},{spec.ub_bytes}ull,{spec.ub_usable_bytes}ull,{spec.l1_bytes}ull,'
           f'{spec.l0a_bytes}ull,{spec.l0b_bytes}ull,{spec.l0c_bytes}ull,{spec.bt_bytes}ull,'
           f'{int(spec.cube_cores)},{int(spec.vector_cores)}}}')
    return [f"-D__NPU_ARCH__={int(spec.arch)}", f"-DMEGAFUSE_EMU_HOST_SOC={soc}"]


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
    parts = harness._emulator_parts() + [" ".join(flags).encode(), b"program"]
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
