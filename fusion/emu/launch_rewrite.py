"""Source rewriting for the host emulator: `kernel<<<...>>>(...)` launches into calls of the
emulator's launcher (line numbers kept), the kernel types read from the definitions (and the
`__mix__(aic, aiv)` keyword), and the -D flags that build a source for one SoC (see
single_source.py for the whole story)."""

from __future__ import annotations

import re

from fusion.core.soc import SocSpec


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
