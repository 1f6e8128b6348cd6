"""`megafuse emu run`: a user's Ascend C file on the host emulator.

  megafuse emu run add.asc [--soc ascend910b2|ascend310p3] [--workdir DIR] [--program-arg ARG ...]
      single source (.asc, or a .cpp with a host main): built for the SoC (__NPU_ARCH__ 2201 or
      2002), run in DIR (default: the current directory; the devkit samples read ./input and
      write ./output there); the program's own output is printed.
  megafuse emu run kernel.cpp [--kernel NAME] --block-dim N --arg SPEC ... [--json] [--out DIR]
      a kernel-only file: the extern "C" __global__ kernel (the only one, or --kernel) runs on N
      blocks with one --arg per parameter:
        f32:1024        1024 random float32 (also f16, i8/u8, i16/u16, i32/u32, i64/u64)
        f32:1024=0      1024 float32 filled with 0 (an output buffer)
        u32[64,8]       the values given (a tiling struct of two uint32)
        int:5           an integer scalar      null    a null pointer
      prints the emulator's counters and a summary of every buffer; --out DIR writes each
      buffer after the run as DIR/argI.bin.
Exit status: 0 ran; 1 the emulator stopped a kernel (a broken rule, an uninitialized read, an
ascendc_assert), or the program exited non-zero or ran past --timeout; 2 usage or build errors.
Errors are one line.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

from fusion.errors import MegafuseError
from fusion.options import check_output_dir, float_in, int_in

_DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u32": np.uint32, "i16": np.int16,
           "u16": np.uint16, "i8": np.int8, "u8": np.uint8, "i64": np.int64, "u64": np.uint64}
_SPEC = re.compile(r"^(?P<dt>[a-z]\w*):(?P<n>\d+)(?:=(?P<fill>[-+0-9.eE]+|nan|inf|-inf))?$")
_LIST = re.compile(r"^(?P<dt>[a-z]\w*)\[(?P<vals>[^\]]*)\]$")
_EXTERN_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+(?:__\w+__\s+)*void\s+([A-Za-z_]\w*)\s*\(')


class EmuFault(MegafuseError):
    """The emulator stopped a kernel: exit status 1."""


def register(sub, add_model_args=None) -> None:
    p = sub.add_parser("emu", help="run a user's Ascend C kernel file on the host emulator",
                       description=__doc__.splitlines()[0])
    esub = p.add_subparsers(dest="emu_command", required=True)
    r = esub.add_parser("run", help="build and run KERNEL.cpp | PROGRAM.asc on the emulator",
                        description=__doc__, formatter_class=_raw_formatter())
    r.add_argument("file", help="Ascend C source: .asc / .cpp with a host main, or a kernel-only .cpp")
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


def _run(args) -> int:
    from fusion.ascendc_emu import EmulationBuildError, EmulationError
    from fusion.ascendc_emu.single_source import has_main
    from fusion.soc import get_soc

    path = Path(args.file)
    if path.suffix not in (".asc", ".cpp", ".cc", ".cxx"):
        raise MegafuseError(f"{_clean(path.name)}: expected an Ascend C source (.asc or .cpp)")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise MegafuseError(f"cannot read {_clean(str(path))}: {_clean(e.strerror or str(e))}") from None
    spec = get_soc(args.soc)
    try:
        if path.suffix == ".asc" or has_main(text):
            return _run_program(path, spec, args)
        return _run_kernel(path, text, spec, args)
    except EmulationBuildError as e:
        raise MegafuseError(_clean(_build_error_line(str(e)))) from None
    except EmulationError as e:
        if e.kernel is not None:  # a rule the kernel broke while running
            raise EmuFault(str(e)) from None
        raise MegafuseError(_clean(str(e))) from None


def _run_program(path: Path, spec, args) -> int:
    from fusion.ascendc_emu import EmulationError
    from fusion.ascendc_emu.single_source import build_program, run_program

    if args.arg or args.kernel:
        raise MegafuseError("--arg / --kernel are for kernel-only files; a program's main launches its kernels")
    if not args.timeout > 0:
        raise MegafuseError("--timeout must be > 0")
    workdir = Path(args.workdir) if args.workdir else Path.cwd()
    if not workdir.is_dir():
        raise MegafuseError(f"--workdir {_clean(str(workdir))} is not a directory")
    exe = build_program(path, spec)
    try:
        result = run_program(exe, list(args.program_args), cwd=workdir, timeout=args.timeout)
    except EmulationError as e:  # it hung: a failure of the program, not of the command line
        raise EmuFault(str(e)) from None
    sys.stdout.write(result.stdout)
    if result.fault is not None:
        raise EmuFault(result.fault)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        raise EmuFault(f"{path.name}: the program exited with status {result.returncode}")
    return 0


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


def _run_kernel(path: Path, text: str, spec, args) -> int:
    from fusion.ascendc_emu import build_kernel

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
    kernel = build_kernel(path, name, soc=spec)
    res = kernel.run(kargs, block_dim=args.block_dim, soc=spec, kernel_type=args.kernel_type)
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
                          "counters": res.counters, "buffers": summary}, indent=2))
        return 0
    print(f"{name} on {spec.name} (arch {spec.arch}), {args.block_dim} block(s): ran")
    for key, v in res.counters.items():
        if v:
            print(f"  {key:<22} {v}")
    for key, s in summary.items():
        first = ", ".join(f"{v:.6g}" for v in s["first"])
        print(f"  {key}: {s['dtype']}[{s['elements']}] sum {s['sum']:.6g} first [{first}]")
    return 0
