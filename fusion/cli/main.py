"""The `megafuse` command line: compile, check (and bench, tune when installed).

Exit codes: 0 success; 1 `check` over tolerance; 2 any error — bad input (a MegafuseError),
a bad argument (argparse), an output that cannot be written, or an internal error (printed as
one line asking for a report; MEGAFUSE_DEBUG=1 re-raises it with its traceback); 130 Ctrl-C
(SIGINT); 143 SIGTERM; 141 stdout closed by its reader (SIGPIPE). Every error is exactly one line on stderr, `megafuse: error: ...`, with
control characters escaped.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
from pathlib import Path

from fusion.core.errors import MegafuseError
from fusion.core.opt_levels import DEFAULT_LEVEL, level_arg, single_level
from fusion.core.sanitize import display, display_message
from fusion.core.errors import TargetError
from schedules.targets import parse_target
from fusion.frontend.validate import DEFAULT_MAX_MODEL_BYTES
from fusion.frontend.subgraph import add_cut_args
from fusion.driver.compiler import TileOverride, compile_model
from fusion.frontend.onnx_import import parse_input_shape
from fusion.tuning.db import TuningDB, default_db_path
from fusion.tuning.search import CappedTiles, check_dma_cap
from fusion.verify.check import check_model
from fusion.frontend.onnx_import import load_once, read_model
from fusion.verify.sensitivity import warning
from fusion.verify.check import CheckResult
from fusion.frontend import validate
from fusion.core.logs import enable
from fusion.driver.artifacts import write_artifacts
from fusion.codegen.npuir.check import cmd_check_npuir
from fusion.verify.ascend_check import check_ascend
from fusion.tuning.db import TunedTiles
from fusion.report.bench_int8 import int8_plan_line
from fusion.frontend.subgraph import apply_cut_args
from fusion.cli.options import check_cache_dir, float_in, int_in
from fusion.core.outdir import check_output_path, reserve

MAX_TILE_EDGE = 65536        # output pixels per tile edge; larger is no tile any UB holds
MAX_CHANNEL_BLOCKS = 65536   # 16-channel units (1M channels)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors follow the one-line contract (no usage block, exit 2)."""

    def error(self, message: str):
        print(f"megafuse: error: {display_message(message)} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)




def _tile_arg(text: str) -> tuple[int, int]:
    try:
        th, tw = (int(v, 10) for v in text.lower().split("x"))
        if not (1 <= th <= MAX_TILE_EDGE and 1 <= tw <= MAX_TILE_EDGE):
            raise ValueError
        return th, tw
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected THxTW with integers in 1..{MAX_TILE_EDGE}, "
                                         f"got '{display(text)}'") from None


def _target_arg(text: str) -> str:
    """The target string, checked now: '' and 'ascend:' are errors, not the default."""

    if not text.strip() or text.strip().endswith(":"):
        raise argparse.ArgumentTypeError(f"expected llvm, sim[:SOC] or ascend[:SOC], got '{display(text)}'")
    try:
        parse_target(text)
    except TargetError as e:
        raise argparse.ArgumentTypeError(display_message(e)) from None
    return text


def _limit_args(p: argparse.ArgumentParser) -> None:

    p.add_argument("--max-model-bytes", type=int_in(1, 2**40, "--max-model-bytes"),
                   default=DEFAULT_MAX_MODEL_BYTES, metavar="N",
                   help=f"refuse model files larger than N bytes (default {DEFAULT_MAX_MODEL_BYTES:,})")
    p.add_argument("--allow-nonfinite", action="store_true",
                   help="NaN/Inf in the weights is a warning instead of an error")


def _add_model_args(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("model", help="ONNX model file")
    p.add_argument("-t", "--target", default="sim", type=_target_arg,
                   help="llvm | sim[:SOC] | ascend[:SOC] | npuir[:SOC]; SOC = ascend910b2 (default), "
                        "ascend910b3, ascend310p3 (npuir: 910B parts only)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DxDxD",
                   help="shape of a dynamic input, e.g. x=1x3x224x224 (repeatable)")
    p.add_argument("--dtype", choices=["float32", "float16"], default=None,
                   help="compute dtype (default: the model's); float16 accumulates in float32")
    p.add_argument("--tile", type=_tile_arg, metavar="THxTW", help="force the output tile of every fused block")
    p.add_argument("--cout-block", type=int_in(1, MAX_CHANNEL_BLOCKS, "--cout-block"), metavar="N",
                   help="force the output-channel block (in 16-channel units)")
    p.add_argument("--cin-block", type=int_in(1, MAX_CHANNEL_BLOCKS, "--cin-block"), metavar="N",
                   help="force the DW input-channel block (16-channel units)")
    p.add_argument("--no-double-buffer", action="store_true", help="single-buffer the tiles (halves their UB)")
    p.add_argument("--pw-engine", choices=["vector", "cube"], help="unit for the pointwise GEMM")
    p.add_argument("--no-fuse", action="store_true", help="compile every node as its own kernel")
    p.add_argument("--opt-level", type=level_arg, default=DEFAULT_LEVEL, metavar="0|1|2|3",
                   help="fusion level: 0 none (one kernel per operator), 1 folding (+ llvm conv epilogues), "
                        "2 DW->PW blocks and chains (default), 3 = 2 (noted); bench also takes 'all'")
    p.add_argument("--chain", action=argparse.BooleanOptionalAction, default=True,
                   help="sim/ascend: run consecutive fused two-phase blocks as one persistent launch with a SyncAll "
                        "between blocks (910B; default; --no-chain launches every block on its own)")
    p.add_argument("--fallback", action=argparse.BooleanOptionalAction, default=True,
                   help="sim/ascend: leave a block unfused where every fused design is modeled slower than "
                        "the vendor-like DW + PW kernels (default; --no-fallback fuses every block)")
    add_cut_args(p)
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", metavar="FILE", help="tuning database whose best records pick the tiles "
                   "(default: $MEGAFUSE_TUNING_DB or ~/.cache/megafuse/tuning.jsonl)")
    p.add_argument("--no-db", action="store_true", help="ignore the tuning database: default tiles")
    _limit_args(p)
    p.add_argument("--max-dma-ratio", type=float_in(0.0, 1e6, "--max-dma-ratio"), metavar="R",
                   help="sim/ascend: per block, the fastest modeled tile whose DMA volume is at most R x "
                        "the minimal bytes (input + weights + output once); swept on the fly, stored in the "
                        "tuning database unless --no-db")


def _compile_from_args(args, model=None):
    """model: the model already read (load_once) where the command reads it again as the reference."""

    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    override = TileOverride.from_args(args)
    tuned = None
    cap = getattr(args, "max_dma_ratio", None)
    if cap is not None:
        tuned = _capped_tiles(args, override, cap)
    elif not args.no_db and not override.forced:

        tuned = TunedTiles(TuningDB(args.db or default_db_path()).load(),
                           pw_engine=override.pw_engine, double_buffer=override.double_buffer)
    cm = compile_model(args.model if model is None else model, target=args.target, input_shapes=shapes or None,
                       dtype=args.dtype,
                       tile=override, fuse=not args.no_fuse, tuned_tiles=tuned,
                       fallback=getattr(args, "fallback", True), chain=getattr(args, "chain", True),
                       opt_level=single_level(args))
    _check_forced_blocks(cm, args)
    if cap is not None:
        cm.max_dma_ratio = cap
        cm.notes.append(tuned.note())
    elif tuned is not None and (tuned.hits or tuned.db.path.exists()):
        cm.notes.append(tuned.note())
    elif override.forced and not args.no_db:
        cm.notes.append("tile forced on the command line: the tuning database was not consulted")
    return cm


def _check_forced_blocks(cm, args) -> None:
    """A forced knob larger than a block's extent would be clamped silently: a knob that fits no
    fused block is an error; one that some blocks clamp is a note naming them."""
    th, tw = args.tile if args.tile else (None, None)
    knobs = (("--cout-block", args.cout_block, lambda wl: wl.co1, "output-channel blocks"),
             ("--cin-block", args.cin_block, lambda wl: wl.c1, "input-channel blocks"),
             ("--tile TH", th, lambda wl: wl.out_height, "output rows"),
             ("--tile TW", tw, lambda wl: wl.out_width, "output columns"))
    for flag, value, extent, what in knobs:
        if value is None or not cm.fused_blocks:
            continue
        over = [(b.name, extent(b.workload)) for b in cm.fused_blocks if value > extent(b.workload)]
        if len(over) == len(cm.fused_blocks):
            most = max(n for _, n in over)
            raise MegafuseError(f"{flag} {value} is more than every fused block has ({what}: at most {most}); "
                                f"use 1..{most}")
        if over:
            names = ", ".join(f"{name} ({n})" for name, n in over[:5]) + (" ..." if len(over) > 5 else "")
            cm.notes.append(f"{flag} {value} is clamped to the block's {what} in {names}")


def _capped_tiles(args, override, cap: float):

    check_dma_cap(cap, parse_target(args.target))
    if override.forced:
        raise MegafuseError("--max-dma-ratio chooses the tiles; it cannot be combined with --tile, "
                            "--cout-block or --cin-block")
    db = TuningDB(None if args.no_db else (args.db or default_db_path())).load()
    return CappedTiles(db, cap, engines=(override.pw_engine,) if override.pw_engine else None,
                       double_buffer=(False,) if override.double_buffer is False else (True, False))


def _forms(p) -> str:
    """The plan's decided forms (two-phase, 310P cube): the grouped or fp16-post-op DW (its taps
    over wide rows: +wide), the fp16 epilogue (+bias:cube: the PW bias by a K = 16 Mmad and relu in
    the L0C -> UB move), the PW weights resident in L1."""
    epi = ("epi:fp16+bias:cube" if p.bias_in_cube else "epi:fp16") if p.epi_post16 else ""
    tags = ["dw:grouped" if p.dw_grouped else ("dw:fp16+wide" if p.dw_wide else "dw:fp16") if p.dw_post16 else "",
            epi, "w_pw:L1" if p.b_resident else ""]
    return "".join(f"  {t}" for t in tags if t)


def _cores(plan) -> str:
    if plan.handoff_via_gm:
        return f"{plan.cores} AIV + {plan.aic_cores} AIC"
    return f"{plan.cores} cores"


def _print_compiled(cm) -> None:
    print(f"target {cm.target.name}  dtype {cm.dtype}  kernels {len(cm.program.steps)}  "
          f"fused blocks {len(cm.fused_blocks) + len(cm.int8_blocks)}")
    for ident, members in cm.int8_blocks:
        print(f"  {ident:<14} int8 DW->PW ({display_message(' -> '.join(members))}): DW int32 -> requant "
              f"int8 tile -> 1x1 int32 -> requant{int8_plan_line(cm.graph, members, cm.target)}")
    for b in cm.fused_blocks:
        p = b.plan
        wl = p.workload
        print(f"  {b.name:<14} {wl.batch}x{wl.cin}x{wl.height}x{wl.width} -> "
              f"{wl.batch}x{wl.cout}x{wl.out_height}x{wl.out_width}  dw{wl.kernel[0]}x{wl.kernel[1]} "
              f"s{wl.stride[0]} {wl.act1}/{wl.act2}{' +res' if wl.residual else ''}  "
              f"tile {p.tile.describe()} [{b.tile_source}]{_forms(p)}  "
              f"tiles {p.n_tiles} on {_cores(p)}  UB {p.ub_bytes:,}/{p.soc.ub_usable_bytes:,} B")
        others = [f"{sc} {used:,}/{p.capacity(sc):,}" for sc, used in p.scope_bytes.items() if sc != "UB"]
        if others:
            print(f"  {'':<14} {', '.join(others)} B")
        if b.engine_reason and b.tile_source == "default":
            print(f"  {'':<14} {b.engine_reason}")
    own = {b.name: b.plan for b in cm.fused_blocks}
    stage_act = {g.name: g.workload.act2 for g in cm.chain_stages.values()}
    for c in cm.chains:
        print(f"{c.name}: {', '.join(c.blocks)} in one launch (SyncAll between blocks; --no-chain: one launch each)")
        if c.stages:
            print(f"  GEMM stages (1x1 conv + activation as an identity-DW two-phase kernel): {', '.join(c.stages)}")
        moved = [f"{n} {p.tile.describe()} on {p.cores} cores" + (" (gemm_only)" if p.gemm_only else "")
                 + (f" ({stage_act[n]} -> {p.workload.act2}: clip deferred)"
                    if stage_act.get(n, p.workload.act2) != p.workload.act2 else "")
                 + (f" (input clipped at {p.x_max:g})" if p.x_max is not None else "")
                 + (" (after its producer on the same cores: no SyncAll before it)" if p.local_in else "")
                 + (" (its GEMM after its own DW on each core: no SyncAll between its phases)" if p.local_dw else "")
                 + (" (in its producer's GEMM task)" if p.joined else "")
                 for n in c.blocks if (p := cm.chain_plans.get(n)) is not None and p != own.get(n)]
        if moved:
            print(f"  in-chain plans (shortest body; the launch is paid once): {'; '.join(moved)}")
        chunks = cm.chain_plans[c.blocks[0]].chunks if c.blocks[0] in cm.chain_plans else 1
        if chunks > 1:
            print(f"  in {chunks} image chunks: the DW of one chunk beside the GEMM of another, a SyncAll "
                  f"between steps (each member's kernel at batch / {chunks} once per chunk)")
    for line in cm.chain_breaks:
        print(f"  {display_message(line)}")
    if cm.refusals:
        print(f"not fused / not folded ({len(cm.refusals)}):")
        for r in cm.refusals:
            print(f"  {display_message(r.describe())}")   # names nodes of the model
    for note in cm.notes:
        print(f"note: {display_message(note)}")
    if cm.phases_s:
        print(cm.describe_phases() + (f"; kernel cache: {cm.kernel_cache}" if cm.kernel_cache else ""))


def cmd_compile(args) -> int:
    if args.emit_onnx and not args.output:
        raise MegafuseError("--emit-onnx writes DIR/model.fused.onnx: give -o DIR")
    if args.output is not None:   # checked and held before the work (fusion/outdir)
        with reserve(check_output_path(args.output), args.force) as held:
            model = load_once(args.model) if args.emit_onnx else None   # compiled and exported: read once
            cm = _compile_from_args(args, model)
            write_artifacts(cm, held.out, reservation=held, fused_onnx_from=model)
    else:
        cm = _compile_from_args(args)
    if args.json:
        print(json.dumps(cm.to_json(), indent=2))
    else:
        _print_compiled(cm)
        if args.output:
            print(f"wrote {display(args.output, 0)}")
    return 0


def cmd_check(args) -> int:

    model = load_once(args.model)   # the kernels and the reference see the same bytes
    cm = _compile_from_args(args, model)
    if cm.target.kind == "npuir":   # the vendor compiler on the emitted modules (fusion/npuir)
        return cmd_check_npuir(cm, args)
    if cm.target.kind == "ascend":
        result = check_ascend(cm, read_model(model), seed=args.seed, tolerance=args.tolerance)
        if not args.json:
            for block in (*result.blocks, *result.int8_blocks):
                print(f"  {display_message(block.describe())}")
            for c in result.chains:
                print(f"  {display_message(c.describe())}")
    else:
        result = check_model(read_model(model), cm, seed=args.seed, tolerance=args.tolerance)
    if args.json:
        print(json.dumps({"target": cm.target.name, "dtype": cm.dtype,
                          "fused_blocks": len(cm.fused_blocks), **result.to_json()}, indent=2))
    else:
        status = "FAIL" if not result.within_tolerance else "PASS" if result.passed else "INCONCLUSIVE"
        label = display(getattr(args, "model_label", None) or args.model, 0)
        if getattr(result, "fp16_overflow", False):   # the model's, not the kernels': say so, not "nan"
            print(f"FAIL {label} on {cm.target.name} float16: the model overflows float16 itself (ONNX Runtime "
                  f"with float16 storage gives non-finite outputs on these inputs); check it in float32")
            return 1
        print(f"{status} {label} on {cm.target.name} {cm.dtype}: max abs err {result.max_abs:.3e}, "
              f"max rel err {result.max_rel:.3e} (tolerance {result.tolerance:.2g}; "
              f"{_cond(result)}{len(cm.fused_blocks) + len(cm.int8_blocks)} fused blocks, seed {result.seed}; reference ORT "
              f"{'int8 kernels' if getattr(result, 'int8', None) is not None else 'float32'}; "
              f"input sensitivity {result.sensitivity:.1e})")
        if getattr(result, "int8", None) is not None:
            print(f"  {result.int8.describe(result.max_abs)}")
    if warning(result.sensitivity, result.tolerance):
        print(f"megafuse: warning: {warning(result.sensitivity, result.tolerance)}", file=sys.stderr)
    return 0 if result.passed else 1


def _cond(result) -> str:

    if not isinstance(result, CheckResult):
        return ""
    if result.fp32_shift is not None:
        return (f"fp32 rounding (sqrt(n) u sum|terms|, reductions up to {result.fp32_terms} terms) "
                f"shifts the reference by {result.fp32_shift:.2e}; ")
    shift = result.fp16_shift
    return f"fp16 storage alone shifts the reference by {shift:.2e}; " if shift is not None else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="megafuse", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log the decisions: tile candidates dropped, PW engine, fusion refusals")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compile", help="compile a model and list its fused blocks and refusals")
    _add_model_args(p)
    p.add_argument("-o", "--output", metavar="DIR", help="write plans, scheduled TIR (and Ascend C) here "
                   "(written beside it, then renamed into place)")
    p.add_argument("--force", action="store_true", help="replace a non-empty -o DIR from an earlier run")
    p.add_argument("--emit-onnx", action="store_true", help="sim/ascend: also write DIR/model.fused.onnx, the model "
                   "with one ai.megafuse node per fused block and block chain (the op packages' nodes)")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("check", help="compare the compiled model with ONNX Runtime on random inputs")
    _add_model_args(p)
    p.add_argument("--seed", type=int_in(0, 2**32 - 1, "--seed"), default=0)
    p.add_argument("--tolerance", type=float_in(0.0, 1e3, "--tolerance"), default=None,
                   help="max relative error (default 1e-4 for float32, 2e-2 for float16)")
    p.set_defaults(func=cmd_check)
    for register in _extra_commands():
        register(sub, _add_model_args)
    # explain replays the gate of the compile these arguments make (tuning database, chains, DMA cap)
    sub.choices["explain"].set_defaults(compile_from_args=_compile_from_args)
    return parser


def _extra_commands():
    """Commands that live in their own modules (bench, tune) register themselves here."""
    found = []
    for module in ("fusion.cli.bench", "fusion.cli.tune", "fusion.cli.fidelity", "fusion.cli.explain",
                   "fusion.cli.emu"):
        try:
            mod = __import__(module, fromlist=["register"])
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
            continue
        found.append(mod.register)
    return found


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so `finally` blocks (temporary outputs) still run."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv: list[str] | None = None) -> int:
    import tempfile


    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:   # --help (0) or an argument error already printed as one line (2)
        return e.code if isinstance(e.code, int) else 2
    enable(args.verbose)
    previous = _install_sigterm()
    try:
        with validate.limits(max_model_bytes=getattr(args, "max_model_bytes", validate.DEFAULT_MAX_MODEL_BYTES),
                             allow_nonfinite=getattr(args, "allow_nonfinite", False)), \
                tempfile.TemporaryDirectory(prefix="megafuse-cut-") as tmp:
            if getattr(args, "inputs", None) or getattr(args, "outputs", None):
                apply_cut_args(args, Path(tmp))
            if getattr(args, "model", None) is not None:
                check_cache_dir()
            code = args.func(args)
            sys.stdout.flush()    # a full disk or closed pipe shows here, not as "Exception ignored" at exit
            return code
    except MegafuseError as e:
        if getattr(args, "json", None) is True:   # (tune's --json is a file)
            print(json.dumps({"error": display_message(e), "kind": type(e).__name__}))
        return _fail(display_message(e))
    except KeyboardInterrupt:
        print("megafuse: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print("megafuse: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:   # `megafuse ... | head`: the reader left; say nothing more
        _drop_stdout()
        return 141
    except OSError as e:      # a full disk (`> /dev/full`, a quota) on stdout or any file written
        if e.errno not in _WRITE_ERRNOS:
            return _internal(e)
        if _stdout_broken():
            _drop_stdout()
        return _fail(f"cannot write the output: {e.strerror}")
    except MemoryError:
        return _fail("out of memory (the model or a tile is too large for this machine)")
    except RecursionError:
        return _fail("input nested too deeply")
    except Exception as e:  # noqa: BLE001 - every escaping exception is a bug; one line, then a report
        return _internal(e)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _fail(message: str) -> int:
    try:
        print(f"megafuse: error: {message}", file=sys.stderr)
        sys.stderr.flush()
    except OSError:       # stderr itself full or closed: the exit code is all that is left
        pass
    return 2


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _internal(e: BaseException) -> int:
    if os.environ.get("MEGAFUSE_DEBUG"):
        raise e
    return _fail(f"internal error: {type(e).__name__}: {display(e, 300)} -- please report this "
                 f"(MEGAFUSE_DEBUG=1 shows the traceback)")


def _stdout_broken() -> bool:
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return False


def _drop_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush of what is still buffered cannot
    fail again ("Exception ignored" and exit 120)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # not a real file (captured in tests)
        pass


def _install_sigterm():
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


if __name__ == "__main__":
    sys.exit(main())
