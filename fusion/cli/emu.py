"""`megafuse emu run`: a user's Ascend C file on the host emulator.

  megafuse emu run add.asc [--soc ascend910b2|ascend310p3] [--workdir DIR] [--program-arg ARG ...]
  megafuse emu run main.cpp kernel.asc [-D NAME[=VAL] ...]
      a program (.asc, or a .cpp with a host main; or a host main.cpp plus the file with its
      kernels): built for the SoC (__NPU_ARCH__ 2201 or 2002) with the -D definitions, run in
      DIR (default: the current directory; the devkit samples read ./input and write ./output
      there); the program's own output is printed.
  megafuse emu run kernel.cpp [--kernel NAME] --block-dim N --arg SPEC ... [--json] [--out DIR]
          [--tiling-header op_host/op_tiling.h] [--tiling-key N] [-D DTYPE_X=half ...]
      a kernel-only file: the extern "C" __global__ kernel (the only one, or --kernel) runs on N
      blocks with one --arg per parameter:
        f32:1024        1024 random float32 (also f16, i8/u8, i16/u16, i32/u32, i64/u64)
        f32:1024=0      1024 float32 filled with 0 (an output buffer)
        u32[64,8]       the values given (a tiling struct of two uint32)
        int:5           an integer scalar      null    a null pointer
      prints the emulator's counters and a summary of every buffer; --out DIR writes each
      buffer after the run as DIR/argI.bin.
The given code is executed on the host, as a compiler's test runner does: in a child process
with its own process group, CPU / memory / file-size limits and --timeout (for every kind of
input); SIGTERM / SIGINT are passed on, and the whole group is killed and reaped at the end.
Every GM buffer has guard pages: a raw __gm__ access out of it stops the kernel with the
buffer and offset. A kernel-only file needs one --arg per kernel parameter.
Exit status: 0 ran; 1 the emulator stopped a kernel (a broken rule, an uninitialized read, an
ascendc_assert, an out-of-bounds GM access, a crash, the timeout), or the program exited
non-zero; 2 usage or build errors. Errors are one line.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

from fusion.core.errors import MegafuseError
from fusion.cli.options import check_output_dir, float_in, int_in
from fusion.emu import EmulationBuildError, EmulationError
from fusion.emu.single_source import has_main
from fusion.core.soc import get_soc
from fusion.emu.confine import FAULT_EXIT, fault_line
from fusion.emu.confine import run_confined
from fusion.emu.single_source import build_program
from fusion.emu.harness import _digest, cache_dir
from fusion.emu.harness import build_library

_DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u32": np.uint32, "i16": np.int16,
           "u16": np.uint16, "i8": np.int8, "u8": np.uint8, "i64": np.int64, "u64": np.uint64}
_SPEC = re.compile(r"^(?P<dt>[a-z]\w*):(?P<n>\d+)(?:=(?P<fill>[-+0-9.eE]+|nan|inf|-inf))?$")
_LIST = re.compile(r"^(?P<dt>[a-z]\w*)\[(?P<vals>[^\]]*)\]$")
_EXTERN_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+(?:__\w+__\s+)*void\s+([A-Za-z_]\w*)\s*\(')


_DEFINE = re.compile(r"^(?P<name>[A-Za-z_]\w*)(?:=(?P<val>[^\x00-\x1f]*))?$")
DEFAULT_MEM_MB = 8192
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


class EmuFault(MegafuseError):
    """The emulator stopped a kernel: exit status 1."""


def register(sub, add_model_args=None) -> None:
    p = sub.add_parser("emu", help="run a user's Ascend C kernel file on the host emulator",
                       description=__doc__.splitlines()[0])
    esub = p.add_subparsers(dest="emu_command", required=True)
    r = esub.add_parser("run", help="build and run KERNEL.cpp | PROGRAM.asc on the emulator",
                        description=__doc__, formatter_class=_raw_formatter())
    r.add_argument("files", nargs="+", metavar="FILE",
                   help="Ascend C source: .asc / .cpp with a host main (optionally plus the file with its kernels), "
                        "or a kernel-only .cpp")
    r.add_argument("-D", action="append", default=[], dest="defines", metavar="NAME[=VAL]",
                   help="a preprocessor definition for the build (repeatable; e.g. -D SCENARIO_NUM=2)")
    r.add_argument("--tiling-header", metavar="FILE",
                   help="kernel-only op file: the op's tiling definition (BEGIN_TILING_DATA_DEF ... "
                        "REGISTER_TILING_DATA_CLASS) that GET_TILING_DATA reads")
    r.add_argument("--tiling-key", type=int, metavar="N", help="the tiling key TILING_KEY_IS(N) tests")
    r.add_argument("--mem-limit", type=int, default=DEFAULT_MEM_MB, metavar="MB",
                   help=f"address-space limit of the child process (default {DEFAULT_MEM_MB})")
    r.add_argument("--soc", default="ascend910b2", help="ascend910b2 (default), ascend910b3 or ascend310p3")
    r.add_argument("--workdir", metavar="DIR", help="program: directory to run in (default: current)")
    r.add_argument("--timeout", type=float_in(0.0, 86400.0, "--timeout"), default=300.0, metavar="S", help="stop a program after S seconds")
    r.add_argument("--kernel", metavar="NAME", help="kernel-only file: which extern \"C\" kernel")
    r.add_argument("--block-dim", type=int_in(1, 65535, "--block-dim"), default=1, metavar="N", help="kernel-only file: blocks (default 1)")
    r.add_argument("--kernel-type", metavar="TYPE", help="kernel-only file: aiv_only, aic_only, mix_aic_1_2, ...")
    r.add_argument("--arg", action="append", default=[], metavar="SPEC", help="kernel-only file: one per parameter")
    r.add_argument("--seed", type=int_in(0, 2**32 - 1, "--seed"), default=0, help="random inputs' seed (default 0)")
    r.add_argument("--out", metavar="DIR", help="kernel-only file: write every buffer argument here after the run")
    r.add_argument("--json", action="store_true", help="kernel-only file: counters and buffers as JSON")
    r.add_argument("--program-arg", action="append", default=[], dest="program_args", metavar="ARG",
                   help="program: an argument for its main (repeatable; --program-arg=-1.5 for negatives)")
    r.set_defaults(func=cmd_emu_run)


def _raw_formatter():
    import argparse

    return argparse.RawDescriptionHelpFormatter


def _clean(text: str) -> str:
    """One printable line: control characters escaped, runs of whitespace collapsed."""
    text = " ".join(text.split())
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def _build_error_line(message: str) -> str:
    """g++'s diagnostics -> the first line that says 'error'."""
    lines = message.splitlines()
    for ln in lines[1:]:
        if " error: " in ln or ln.startswith("error: "):
            return f"{lines[0].rstrip(':')}: {ln.strip()}"
    return lines[0] if lines else message


def cmd_emu_run(args) -> int:
    try:
        return _run(args)
    except EmuFault as e:
        print(f"megafuse: error: {_clean(str(e))}", file=sys.stderr)
        return 1


def _defines(args) -> list[str]:
    """-D NAME[=VAL] -> g++ flags (they are part of the build cache key)."""
    flags = []
    for d in args.defines:
        m = _DEFINE.match(d)
        if not m:
            raise MegafuseError(f"-D '{_clean(d)}' is not NAME or NAME=VALUE")
        flags.append(f"-D{d}")
    return flags


def _run(args) -> int:

    paths = [Path(f) for f in args.files]
    texts = []
    for path in paths:
        if path.suffix not in (".asc", ".cpp", ".cc", ".cxx"):
            raise MegafuseError(f"{_clean(path.name)}: expected an Ascend C source (.asc or .cpp)")
        try:
            texts.append(path.read_text())
        except (OSError, UnicodeDecodeError) as e:
            raise MegafuseError(f"cannot read {_clean(str(path))}: {_clean(e.strerror or str(e))}") from None
    if not args.timeout > 0:
        raise MegafuseError("--timeout must be > 0")
    if args.mem_limit < 256:
        raise MegafuseError("--mem-limit must be >= 256 (MB)")
    spec = get_soc(args.soc)
    defines = _defines(args)
    try:
        mains = [p for p, t in zip(paths, texts) if p.suffix == ".asc" or has_main(t)]
        if len(paths) > 1 and not any(p.suffix == ".asc" or has_main(t) for p, t in zip(paths, texts)):
            raise MegafuseError("of several files, one must be the host program (a main)")
        if mains:
            return _run_program(paths, spec, args, defines)
        return _run_kernel(paths[0], texts[0], spec, args, defines)
    except EmulationBuildError as e:
        raise MegafuseError(_clean(_build_error_line(str(e)))) from None
    except EmulationError as e:
        if e.kernel is not None:  # a rule the kernel broke while running
            raise EmuFault(str(e)) from None
        raise MegafuseError(_clean(str(e))) from None


def _ended(what: str, res, timeout: float) -> None:
    """A confined child that did not end normally -> EmuFault (exit 1) with one line."""

    if res.forwarded:
        raise EmuFault(f"{what}: stopped, megafuse received {res.forwarded}")
    if res.timed_out:
        raise EmuFault(f"{what} did not finish within {timeout:g} s: stopped")
    if res.returncode == FAULT_EXIT:
        line = fault_line(res.stderr)
        if line is not None:
            raise EmuFault(line)
        faults = [ln for ln in res.stderr.splitlines() if ln.startswith("megafuse-emu fault: ")]
        if faults:
            raise EmuFault(faults[-1][len("megafuse-emu fault: "):])
    if res.signal is not None:
        hint = " (past --mem-limit?)" if res.signal == "SIGKILL" else ""
        raise EmuFault(f"{what} was killed by {res.signal}{hint}")


def _run_program(paths: list[Path], spec, args, defines: list[str]) -> int:

    if args.arg or args.kernel:
        raise MegafuseError("--arg / --kernel are for kernel-only files; a program's main launches its kernels")
    workdir = Path(args.workdir) if args.workdir else Path.cwd()
    if not workdir.is_dir():
        raise MegafuseError(f"--workdir {_clean(str(workdir))} is not a directory")
    exe = build_program(paths if len(paths) > 1 else paths[0], spec, defines=defines)
    res = run_confined([str(exe), *args.program_args], cwd=workdir, timeout=args.timeout,
                       mem_bytes=args.mem_limit << 20)
    sys.stdout.write(res.stdout)
    name = _clean(paths[0].name)
    _ended(f"program {name}", res, args.timeout)
    sys.stderr.write(res.stderr)
    if res.returncode != 0:
        raise EmuFault(f"{name}: the program exited with status {res.returncode}")
    return 0


_PARAMS = re.compile(r'extern\s+"C"\s+__global__\s+(?:__\w+__\s+)*void\s+(?P<name>[A-Za-z_]\w*)\s*\(')


def kernel_params(text: str, name: str) -> list[str] | None:
    """The parameter declarations of extern "C" kernel `name` in `text` (None: not found)."""
    for m in _PARAMS.finditer(text):
        if m.group("name") != name:
            continue
        depth, i, start = 1, m.end(), m.end()
        parts, cur = [], start
        while i < len(text) and depth:
            ch = text[i]
            if ch in "(<[":
                depth += 1
            elif ch in ")>]":
                depth -= 1
            elif ch == "," and depth == 1:
                parts.append(text[cur:i])
                cur = i + 1
            i += 1
        parts.append(text[cur:i - 1])
        params = [" ".join(p.split()) for p in parts]
        return [] if params in ([""], ["void"]) else params
    return None


def tiling_wrapper(header: Path) -> Path:
    """A header force-included before an op kernel: the op's tiling definition, and its registered
    class as the default tiling struct of GET_TILING_DATA (the op-package build generates the
    same from the definition)."""

    quoted = str(header).replace("\\", "\\\\").replace('"', '\\"')
    text = (f'#include "{quoted}"\nnamespace optiling {{}}\nnamespace megafuse_emu_tiling_lookup {{\n'
            "using namespace optiling;\nusing T = megafuse_emu_default_tiling_t;\n}\n"
            "using megafuse_emu_default_tiling_t = megafuse_emu_tiling_lookup::T;\n")
    out = cache_dir() / f"tiling-{_digest([text.encode()])}.h"
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return out


def _run_kernel(path: Path, text: str, spec, args, defines: list[str]) -> int:

    kernels = _EXTERN_KERNEL.findall(text)
    name = args.kernel
    if name is None:
        if len(kernels) != 1:
            raise MegafuseError(f"{_clean(path.name)} defines {len(kernels)} extern \"C\" __global__ kernels "
                                f"({', '.join(kernels) or 'none'}) and no host main: name one with --kernel")
        name = kernels[0]
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise MegafuseError(f"--kernel '{_clean(name)}' is not a C identifier")
    if args.block_dim < 1:
        raise MegafuseError("--block-dim must be >= 1")
    check_output_dir(args.out, "--out")
    rng = np.random.default_rng(args.seed)
    kargs = [_parse_arg(i, s, rng) for i, s in enumerate(args.arg)]
    params = kernel_params(text, name)
    if params is None:
        raise MegafuseError(f"kernel '{name}' is not defined in {_clean(path.name)} as extern \"C\" __global__")
    if len(params) != len(args.arg):
        raise MegafuseError(f"kernel '{name}' takes {len(params)} parameter(s) ({_clean(', '.join(params))}) but "
                            f"{len(args.arg)} --arg were given: give one --arg per parameter")
    for i, (decl, a) in enumerate(zip(params, kargs)):
        if isinstance(a, int):
            _check_scalar(i, decl, a)
    flags, inc = list(defines), []
    if args.tiling_key is not None:
        flags.append(f"-DMEGAFUSE_EMU_TILING_KEY={int(args.tiling_key)}")
    if args.tiling_header:
        header = Path(args.tiling_header).resolve()
        if not header.is_file():
            raise MegafuseError(f"--tiling-header {_clean(args.tiling_header)} is not a file")
        flags += ["-include", str(tiling_wrapper(header))]
        inc.append(header.parent)
    built = build_library(path, name, extra_include_dirs=inc, extra_flags=flags, soc=spec)
    with tempfile.TemporaryDirectory(prefix="megafuse-emu-") as tmp:
        job_args: list[object] = []
        for i, a in enumerate(kargs):
            if isinstance(a, np.ndarray):
                np.save(Path(tmp) / f"arg{i}.npy", a)
                job_args.append({"npy": str(Path(tmp) / f"arg{i}.npy")})
            else:
                job_args.append(None if a is None else {"int": a})
        job = Path(tmp) / "job.json"
        job.write_text(json.dumps({"lib": str(built.lib), "kernel": name, "label": built.label, "soc": spec.name,
                                   "block_dim": args.block_dim, "kernel_type": args.kernel_type,
                                   "keyword_type": built.keyword_type, "args": job_args}))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(_PROJECT_ROOT), *filter(None, [env.get("PYTHONPATH")])])
        res = run_confined([sys.executable, "-m", "fusion.emu.kernel_child", str(job)], cwd=tmp, env=env,
                           timeout=args.timeout, mem_bytes=args.mem_limit << 20)
        _ended(f"kernel '{name}'", res, args.timeout)
        result_file = Path(tmp) / "result.json"
        if not result_file.exists():
            tail = [ln for ln in res.stderr.splitlines() if ln.strip()]
            raise EmuFault(f"kernel '{name}': the emulator's child process exited with status {res.returncode}"
                           + (f": {_clean(tail[-1])}" if tail else ""))
        result = json.loads(result_file.read_text())
        if "error" in result:
            if result.get("kernel_fault"):
                raise EmuFault(result["error"])
            raise MegafuseError(_clean(result["error"]))
        for i, a in enumerate(kargs):
            if isinstance(a, np.ndarray):
                a[...] = np.load(Path(tmp) / f"arg{i}.npy")
    counters = result["counters"]
    buffers = {f"arg{i}": a for i, a in enumerate(kargs) if isinstance(a, np.ndarray)}
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for key, a in buffers.items():
            a.tofile(out / f"{key}.bin")
    summary = {key: {"dtype": str(a.dtype), "elements": int(a.size),
                     "sum": float(np.sum(a, dtype=np.float64)),
                     "first": [float(v) for v in a[:4]]} for key, a in buffers.items()}
    if args.json:
        print(json.dumps({"kernel": name, "soc": spec.name, "block_dim": args.block_dim,
                          "counters": counters, "buffers": summary}, indent=2))
        return 0
    print(f"{name} on {spec.name} (arch {spec.arch}), {args.block_dim} block(s): ran")
    for key, v in counters.items():
        if v:
            print(f"  {key:<22} {v}")
    for key, s in summary.items():
        first = ", ".join(f"{v:.6g}" for v in s["first"])
        print(f"  {key}: {s['dtype']}[{s['elements']}] sum {s['sum']:.6g} first [{first}]")
    return 0


# int:V is passed in a 64-bit register and the kernel reads its parameter's width of it: a value
# outside the parameter's type would arrive silently wrapped, so it is refused (as DTYPE[v,...] is).
_INT_TYPES = {**dict.fromkeys(("int8_t", "signed char", "char"), (-1 << 7, (1 << 7) - 1)),
              **dict.fromkeys(("uint8_t", "unsigned char"), (0, (1 << 8) - 1)), "bool": (0, 1),
              **dict.fromkeys(("int16_t", "short", "short int", "signed short"), (-1 << 15, (1 << 15) - 1)),
              **dict.fromkeys(("uint16_t", "unsigned short", "unsigned short int"), (0, (1 << 16) - 1)),
              **dict.fromkeys(("int32_t", "int", "signed", "signed int"), (-1 << 31, (1 << 31) - 1)),
              **dict.fromkeys(("uint32_t", "unsigned", "unsigned int"), (0, (1 << 32) - 1)),
              **dict.fromkeys(("int64_t", "long", "long int", "long long", "long long int", "signed long",
                               "ssize_t", "intptr_t", "ptrdiff_t"), (-1 << 63, (1 << 63) - 1)),
              **dict.fromkeys(("uint64_t", "unsigned long", "unsigned long int", "unsigned long long",
                               "size_t", "uintptr_t", "GM_ADDR", "pointer"), (0, (1 << 64) - 1))}
_FLOAT_TYPES = {"float", "double", "half", "float16_t", "bfloat16_t", "long double"}
_QUALIFIERS = {"const", "volatile", "__gm__", "__restrict__", "__restrict", "restrict", "register", "std"}


def _scalar_type(decl: str) -> str | None:
    """The type of parameter declaration `decl` ("const uint32_t n" -> "uint32_t"), None when unknown."""
    if any(c in decl for c in "*&["):
        return "pointer"
    words = [w for w in re.findall(r"[A-Za-z_]\w*", decl) if w not in _QUALIFIERS]
    for cut in (words, words[:-1]):        # with or without a parameter name
        t = " ".join(cut)
        if t in _INT_TYPES or t in _FLOAT_TYPES:
            return t
    return None


def _check_scalar(i: int, decl: str, value: int) -> None:
    t = _scalar_type(decl)
    if t in _FLOAT_TYPES:
        raise MegafuseError(f"--arg {i}: parameter '{_clean(decl)}' is a floating-point scalar; int:V passes an "
                            f"integer (its bits would be read as garbage)")
    lo, hi = _INT_TYPES.get(t, (-1 << 63, (1 << 64) - 1))   # an unknown type: at least a 64-bit register
    if not lo <= value <= hi:
        shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:20]}...({len(str(value))} digits)"
        raise MegafuseError(f"--arg {i}: {shown} does not fit parameter '{_clean(decl)}' "
                            f"({t or 'a 64-bit register'}: {lo}..{hi})")


def _parse_arg(i: int, spec: str, rng: np.random.Generator):
    """One --arg SPEC -> a kernel argument (numpy array, int or None)."""
    s = spec.strip()
    if s == "null":
        return None
    if s.startswith("int:"):
        try:
            return int(s[4:], 0)
        except ValueError:
            raise MegafuseError(f"--arg {i}: '{_clean(s)}' is not int:VALUE") from None
    m = _SPEC.match(s)
    lst = _LIST.match(s)
    dt_name = (m or lst).group("dt") if (m or lst) else None
    if dt_name not in _DTYPES:
        raise MegafuseError(f"--arg {i}: '{_clean(s)}' is not DTYPE:N, DTYPE:N=V, DTYPE[v,...], int:V or null "
                            f"(DTYPE one of {', '.join(_DTYPES)})")
    dt = np.dtype(_DTYPES[dt_name])
    try:
        if lst:
            vals = [v for v in lst.group("vals").split(",") if v.strip()]
            return np.array([float(v) if dt.kind == "f" else int(v, 0) for v in vals], dtype=dt)
        n = int(m.group("n"))
        if n > 1 << 28:
            raise MegafuseError(f"--arg {i}: {n} elements is more than this command allocates")
        if m.group("fill") is not None:
            return np.full(n, float(m.group("fill")), dtype=dt)
        if dt.kind == "f":
            return rng.standard_normal(n).astype(dt)
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dt)
    except (ValueError, OverflowError) as e:
        raise MegafuseError(f"--arg {i}: {_clean(str(e))}") from None
