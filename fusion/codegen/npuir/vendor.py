"""The vendor's BiShengIR compiler (`bishengir-compile` from the `ascendnpu-ir` package): run its
HIVM pipeline on one module and read what it prints.

Without a CANN install the pipeline ends where it would call the back end `hivmc`; that hand-off
(the message "External hivmc run fails, returning module before running external compiler") is
success here. PlanMemory's placement of every UB buffer (`hivm.hir.pointer_cast(%c<addr>_i64)`)
gives the vendor's UB peak; the module after AppendTargetDeviceSpec carries the device spec.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from fusion.core.errors import MegafuseError

HANDOFF = "External hivmc run fails, returning module before running external compiler"
TIMEOUT_S = 300
ELEM_BITS = {"f16": 16, "bf16": 16, "f32": 32, "i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
_CAST = re.compile(r"hivm\.hir\.pointer_cast\(([^)]*)\)[^:]*:\s*memref<((?:\d+|\?)(?:x(?:\d+|\?))*)x"
                   r"([a-z]+\d+)(?:,[^#]*)?,\s*#hivm\.address_space<(\w+)>>")
_CONST = re.compile(r"(%[\w]+) = arith\.constant (-?\d+) : i64")
_SPEC = re.compile(r'#dlti\.dl_entry<"(\w+)", (\d+) : i\d+>')
_LOC = re.compile(r'^loc\("([^"]*)":(\d+):(\d+)\): ')


def compiler_path() -> Path:
    spec = importlib.util.find_spec("ascendnpuir")
    if spec is None or not spec.submodule_search_locations:
        raise MegafuseError("the vendor compiler is not installed: pip install -e '.[npuir]' "
                            "(package ascendnpu-ir)")
    path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "bishengir-compile"
    if not path.is_file():
        raise MegafuseError(f"the ascendnpu-ir package has no bishengir-compile at {path}")
    return path


def vendor_target(soc_name: str) -> str:
    """ascend910b2 -> Ascend910B2 (the compiler's --target spelling)."""
    return "Ascend" + soc_name.removeprefix("ascend").upper()


@dataclass(frozen=True)
class UBPlacement:
    addresses: tuple[int, ...]   # one per multi-buffer copy
    nbytes: int


@dataclass(frozen=True)
class VendorRun:
    reached_handoff: bool
    diagnostic: str              # the vendor's first error line ("" when it reached the hand-off)
    placements: tuple[UBPlacement, ...] = field(default=())
    device_spec: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ub_peak(self) -> int | None:
        """Highest UB byte PlanMemory uses (buffers at their addresses, reuse included)."""
        if not self.placements:
            return None
        return max(a + p.nbytes for p in self.placements for a in p.addresses)


def run_vendor(module: Path, soc_name: str, timeout_s: int = TIMEOUT_S) -> VendorRun:
    cmd = [str(compiler_path()), str(module), "-enable-hivm-compile=true",
           f"--target={vendor_target(soc_name)}", "-o", str(module.with_suffix(".o")),
           "--mlir-print-ir-after=hivm-plan-memory", "--mlir-print-ir-module-scope",
           "--mlir-disable-threading"]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return VendorRun(False, f"bishengir-compile ran past {timeout_s} s")
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    errors = [ln for ln in log.splitlines() if "error:" in ln and HANDOFF not in ln]
    reached = (proc.returncode == 0 or HANDOFF in log) and not errors
    diagnostic = "" if reached else _one_line(errors[0] if errors else _crash_line(log, proc.returncode))
    return VendorRun(reached, diagnostic, parse_placements(log), parse_device_spec(log), seconds)


def parse_placements(log: str) -> tuple[UBPlacement, ...]:
    """UB buffers of the last PlanMemory dump in `log`."""
    dump = log.rsplit("IR Dump After PlanMemory", 1)
    if len(dump) < 2:
        return ()
    text = dump[1]
    consts = {m.group(1): int(m.group(2)) for m in _CONST.finditer(text)}
    out = []
    for m in _CAST.finditer(text):
        args, dims, elem, space = m.groups()
        if space != "ub" or elem not in ELEM_BITS or "?" in dims:
            continue
        addrs = tuple(_const_value(a.strip(), consts) for a in args.split(",") if a.strip())
        nbits = ELEM_BITS[elem]
        for d in dims.split("x"):
            nbits *= int(d)
        out.append(UBPlacement(addrs, nbits // 8))
    return tuple(out)


def parse_device_spec(log: str) -> dict[str, int]:
    """The entries of the first #hacc.target_device_spec in `log` (sizes in bits, as printed)."""
    at = log.find("target_device_spec")
    if at < 0:
        return {}
    end = log.find(">>", at)
    return {k: int(v) for k, v in _SPEC.findall(log[at:end + 2])}


def _const_value(name: str, consts: dict[str, int]) -> int:
    if name in consts:
        return consts[name]
    m = re.fullmatch(r"%c(\d+)_i64(?:_\d+)?", name)
    if m:
        return int(m.group(1))
    raise MegafuseError(f"cannot read the PlanMemory address {name!r} from the vendor's output")


def _crash_line(log: str, rc: int) -> str:
    for ln in log.splitlines():
        if ln.startswith("LLVM ERROR") or "Segmentation fault" in ln:
            return ln
    if rc < 0:
        return f"bishengir-compile crashed (signal {-rc}) without a diagnostic"
    return f"bishengir-compile exited with status {rc} without a diagnostic"


def _one_line(line: str) -> str:
    m = _LOC.match(line)
    if m:   # the generated file's name, not its directory
        line = f"{Path(m.group(1)).name}:{m.group(2)}:{m.group(3)}: " + line[m.end():]
    return "".join(ch if ch.isprintable() else "?" for ch in line.strip())[:400]
