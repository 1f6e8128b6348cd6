"""The `megafuse` command line: compile, check (and bench, tune when installed).

Every MegafuseError becomes one line on stderr and exit code 2; `check` exits 1 when the error
is over tolerance.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fusion.errors import MegafuseError


def _tile_arg(text: str) -> tuple[int, int]:
    try:
        th, tw = (int(v) for v in text.lower().split("x"))
        if th < 1 or tw < 1:
            raise ValueError
        return th, tw
    except ValueError:
        raise argparse.ArgumentTypeError(f"tile must be THxTW with positive integers, got '{text}'") from None


def _add_model_args(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("model", help="ONNX model file")
    p.add_argument("-t", "--target", default="sim",
                   help="llvm | sim[:SOC] | ascend[:SOC] | npuir[:SOC]; SOC = ascend910b2 (default), "
                        "ascend910b3, ascend310p3 (npuir: 910B parts only)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DxDxD",
                   help="shape of a dynamic input, e.g. x=1x3x224x224 (repeatable)")
    p.add_argument("--dtype", choices=["float32", "float16"], default=None,
                   help="compute dtype (default: the model's); float16 accumulates in float32")
    p.add_argument("--tile", type=_tile_arg, metavar="THxTW", help="force the output tile of every fused block")
    p.add_argument("--cout-block", type=int, metavar="N", help="force the output-channel block (in 16-channel units)")
    p.add_argument("--cin-block", type=int, metavar="N", help="force the DW input-channel block (16-channel units)")
    p.add_argument("--no-double-buffer", action="store_true", help="single-buffer the tiles (halves their UB)")
    p.add_argument("--pw-engine", choices=["vector", "cube"], help="unit for the pointwise GEMM")
    p.add_argument("--no-fuse", action="store_true", help="compile every node as its own kernel")
    p.add_argument("--fallback", action=argparse.BooleanOptionalAction, default=False,
                   help="sim/ascend: leave a block unfused where its fused kernel is modeled slower than the "
                        "vendor-like DW + PW kernels (default on for bench)")
    from fusion.subgraph import add_cut_args
    add_cut_args(p)
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", metavar="FILE", help="tuning database whose best records pick the tiles "
                   "(default: $MEGAFUSE_TUNING_DB or ~/.cache/megafuse/tuning.jsonl)")
    p.add_argument("--no-db", action="store_true", help="ignore the tuning database: default tiles")
    p.add_argument("--max-dma-ratio", type=float, metavar="R",
                   help="sim/ascend: per block, the fastest modeled tile whose DMA volume is at most R x "
                        "the minimal bytes (input + weights + output once); swept on the fly, stored in the "
                        "tuning database unless --no-db")


def _compile_from_args(args):
    from fusion.driver import TileOverride, compile_model
    from fusion.onnx_import import parse_input_shape

    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    th, tw = args.tile if args.tile else (None, None)
    override = TileOverride(th, tw, args.cout_block, args.cin_block,
                            False if args.no_double_buffer else None, args.pw_engine)
    tuned = None
    cap = getattr(args, "max_dma_ratio", None)
    if cap is not None:
        tuned = _capped_tiles(args, override, cap)
    elif not args.no_db and not override.forced:
        from fusion.tuning.db import TunedTiles, TuningDB, default_db_path

        tuned = TunedTiles(TuningDB(args.db or default_db_path()).load())
    cm = compile_model(args.model, target=args.target, input_shapes=shapes or None, dtype=args.dtype,
                       tile=override, fuse=not args.no_fuse, tuned_tiles=tuned,
                       fallback=getattr(args, "fallback", False))
    if cap is not None:
        cm.max_dma_ratio = cap
        cm.notes.append(tuned.note())
    elif tuned is not None and (tuned.hits or tuned.db.path.exists()):
        cm.notes.append(tuned.note())
    return cm


def _capped_tiles(args, override, cap: float):
    from fusion.targets import parse_target
    from fusion.tuning.db import TuningDB, default_db_path
    from fusion.tuning.search import CappedTiles, check_dma_cap

    check_dma_cap(cap, parse_target(args.target))
    if override.forced:
        raise MegafuseError("--max-dma-ratio chooses the tiles; it cannot be combined with --tile, "
                            "--cout-block or --cin-block")
    db = TuningDB(None if args.no_db else (args.db or default_db_path())).load()
    return CappedTiles(db, cap, engines=(override.pw_engine,) if override.pw_engine else None,
                       double_buffer=(False,) if override.double_buffer is False else (True, False))


def _cores(plan) -> str:
    if plan.handoff_via_gm:
        return f"{plan.cores} AIV + {plan.aic_cores} AIC"
    return f"{plan.cores} cores"


def _print_compiled(cm) -> None:
    print(f"target {cm.target.name}  dtype {cm.dtype}  kernels {len(cm.program.steps)}  "
          f"fused blocks {len(cm.fused_blocks)}")
    for b in cm.fused_blocks:
        p = b.plan
        wl = p.workload
        print(f"  {b.name:<14} {wl.batch}x{wl.cin}x{wl.height}x{wl.width} -> "
              f"{wl.batch}x{wl.cout}x{wl.out_height}x{wl.out_width}  dw{wl.kernel[0]}x{wl.kernel[1]} "
              f"s{wl.stride[0]} {wl.act1}/{wl.act2}{' +res' if wl.residual else ''}  "
              f"tile {p.tile.describe()} [{b.tile_source}]  tiles {p.n_tiles} on {_cores(p)}  "
              f"UB {p.ub_bytes:,}/{p.soc.ub_usable_bytes:,} B")
        others = [f"{sc} {used:,}/{p.capacity(sc):,}" for sc, used in p.scope_bytes.items() if sc != "UB"]
        if others:
            print(f"  {'':<14} {', '.join(others)} B")
        if b.engine_reason and b.tile_source == "default":
            print(f"  {'':<14} {b.engine_reason}")
    if cm.refusals:
        print(f"not fused / not folded ({len(cm.refusals)}):")
        for r in cm.refusals:
            print(f"  {r.describe()}")
    for note in cm.notes:
        print(f"note: {note}")


def cmd_compile(args) -> int:
    cm = _compile_from_args(args)
    if args.output:
        from fusion.artifacts import write_artifacts
        write_artifacts(cm, Path(args.output))
    if args.json:
        print(json.dumps(cm.to_json(), indent=2))
    else:
        _print_compiled(cm)
        if args.output:
            print(f"wrote {args.output}")
    return 0


def cmd_check(args) -> int:
    from fusion.check import check_model
    from fusion.onnx_import import read_model

    cm = _compile_from_args(args)
    if cm.target.kind == "npuir":   # the vendor compiler on the emitted modules (fusion/npuir)
        from fusion.npuir.check import cmd_check_npuir
        return cmd_check_npuir(cm, args)
    if cm.target.kind == "ascend":
        from fusion.ascend_check import check_ascend
        result = check_ascend(cm, read_model(args.model), seed=args.seed, tolerance=args.tolerance)
        if not args.json:
            for block in result.blocks:
                print(f"  {block.describe()}")
    else:
        result = check_model(read_model(args.model), cm, seed=args.seed, tolerance=args.tolerance)
    if args.json:
        print(json.dumps({"target": cm.target.name, "dtype": cm.dtype,
                          "fused_blocks": len(cm.fused_blocks), **result.to_json()}, indent=2))
    else:
        status = "FAIL" if not result.within_tolerance else "PASS" if result.passed else "INCONCLUSIVE"
        print(f"{status} {getattr(args, 'model_label', args.model)} on {cm.target.name} {cm.dtype}: max abs err {result.max_abs:.3e}, "
              f"max rel err {result.max_rel:.3e} (tolerance {result.tolerance:.0e}; "
              f"{len(cm.fused_blocks)} fused blocks, seed {result.seed}; input sensitivity {result.sensitivity:.1e})")
    from fusion.sensitivity import warning
    if warning(result.sensitivity, result.tolerance):
        print(f"megafuse: warning: {warning(result.sensitivity, result.tolerance)}", file=sys.stderr)
    return 0 if result.passed else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="megafuse", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log the decisions: tile candidates dropped, PW engine, fusion refusals")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compile", help="compile a model and list its fused blocks and refusals")
    _add_model_args(p)
    p.add_argument("-o", "--output", metavar="DIR", help="write plans, scheduled TIR (and Ascend C) here")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("check", help="compare the compiled model with ONNX Runtime on random inputs")
    _add_model_args(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=None,
                   help="max relative error (default 1e-4 for float32, 2e-2 for float16)")
    p.set_defaults(func=cmd_check)
    for register in _extra_commands():
        register(sub, _add_model_args)
    return parser


def _extra_commands():
    """Commands that live in their own modules (bench, tune) register themselves here."""
    found = []
    for module in ("fusion.bench_cli", "fusion.tune_cli", "fusion.fidelity_cli", "fusion.explain_cli"):
        try:
            mod = __import__(module, fromlist=["register"])
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
            continue
        found.append(mod.register)
    return found


def main(argv: list[str] | None = None) -> int:
    import tempfile

    parser = build_parser()
    args = parser.parse_args(argv)
    from fusion.logs import enable
    enable(args.verbose)
    try:
        with tempfile.TemporaryDirectory(prefix="megafuse-cut-") as tmp:
            if getattr(args, "inputs", None) or getattr(args, "outputs", None):
                from fusion.subgraph import apply_cut_args
                apply_cut_args(args, Path(tmp))
            return args.func(args)
    except MegafuseError as e:
        print(f"megafuse: error: {e}", file=sys.stderr)
        if getattr(args, "json", None) is True:   # (tune's --json is a file)
            print(json.dumps({"error": str(e), "kind": type(e).__name__}))
        return 2
    except KeyboardInterrupt:
        print("megafuse: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
