"""`megafuse tune`: tile-size sweeps per fused block into the tuning database.

  megafuse tune MODEL -t sim:ascend910b2            exhaustive (branch and bound) on the cost model
  megafuse tune MODEL -t llvm --trials 16           measured kernels, 16 per block
  options: --db FILE | --no-db, --block NAME, --top K, --csv FILE, --json FILE, --plot DIR,
           --workers N, --exhaustive, --threads N (llvm timing)
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from fusion.core.opt_levels import DEFAULT_LEVEL, get_level, level_arg, single_level
from fusion.core.sanitize import display
from fusion.cli.main import _limit_args, _target_arg
from fusion.cli.options import float_in, int_in
from fusion.frontend.subgraph import add_cut_args
from fusion.core.errors import MegafuseError
from fusion.frontend.onnx_import import parse_input_shape
from schedules.targets import parse_target
from fusion.tuning.db import TuningDB, default_db_path
from fusion.tuning.evaluators import MeasureSettings
from fusion.tuning.search import tune_model
from fusion.tuning.rpc import parse_address
from fusion.tuning.rpc import RpcConfig, RpcMeasurer
from schedules.traffic import dma_ratio
from schedules.plan import make_plan
from fusion.tuning.db import point_id
from fusion.tuning.db import tile_to_json
from fusion.core.sanitize import block_ident, comment_text, inside
from fusion.tuning.search import lowest_dma_ratio
from fusion.cli.options import check_output_dir, check_output_file, check_workers, write_text_atomic


def register(sub, add_model_args=None) -> None:

    p = sub.add_parser("tune", help="sweep the tile space of every fused block into the tuning database",
                       description=__doc__.splitlines()[0])
    p.add_argument("model", help="ONNX model file")
    p.add_argument("-t", "--target", default="sim", type=_target_arg,
                   help="sim[:SOC] / ascend[:SOC] (cost model) or llvm (measured); default sim")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DxDxD",
                   help="shape of a dynamic input, e.g. x=1x3x224x224 (repeatable)")
    p.add_argument("--dtype", choices=["float32", "float16"], default=None)
    add_cut_args(p)
    p.add_argument("--db", metavar="FILE", help="tuning database (default: $MEGAFUSE_TUNING_DB or "
                   "~/.cache/megafuse/tuning.jsonl)")
    p.add_argument("--no-db", action="store_true", help="keep the results in memory only")
    p.add_argument("--trials", type=int_in(1, 1_000_000, "--trials"), default=None, metavar="N",
                   help="llvm: measured points per block, stored ones included (default 16; with "
                        "--budget-s: as many as the budget allows)")
    p.add_argument("--budget-s", type=float_in(1.0, 1e7, "--budget-s"), default=None, metavar="S",
                   help="llvm: wall-clock budget for the whole model, shared by the distinct blocks")
    p.add_argument("--workers", type=int_in(0, 4096, "--workers"), default=2, metavar="N",
                   help="worker processes (default 2; 0 or 1: the model's sweeps in this process; at most 4 per CPU "
                        "of this machine)")
    p.add_argument("--threads", type=int_in(1, 4096, "--threads"), default=None, metavar="N",
                   help="llvm: TVM_NUM_THREADS for timing (default: $TVM_NUM_THREADS or all cores)")
    p.add_argument("--top", type=int_in(1, 1_000_000, "--top"), default=5, metavar="K", help="configs listed per block (default 5)")
    p.add_argument("--block", action="append", default=[], metavar="NAME", help="only this fused block (repeatable)")
    p.add_argument("--exhaustive", action="store_true",
                   help="sim: model every legal point instead of bounding (slow for large images)")
    p.add_argument("--csv", metavar="FILE", help="every legal point of every block (CSV)")
    p.add_argument("--json", metavar="FILE", help="every legal point and the pruning counts (JSON)")
    p.add_argument("--plot", metavar="DIR", help="one heatmap per block: th × tw → best latency")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _limit_args(p)
    p.add_argument("--opt-level", type=level_arg, default=DEFAULT_LEVEL, metavar="0|1|2|3",
                   help="fusion level (fusion/core/opt_levels.py): tiles are tuned for the fused blocks of levels 2 and 3")
    p.add_argument("--rpc", type=_rpc_address, metavar="HOST:PORT",
                   help="llvm: build here, time on the RPC servers registered with this TVM tracker "
                        "(python -m tvm.exec.rpc_tracker / rpc_server; the rpc extra)")
    p.add_argument("--rpc-key", metavar="KEY", help="the servers' key with the tracker (with --rpc)")
    p.add_argument("--max-dma-ratio", type=float_in(0.0, 1e6, "--max-dma-ratio"), metavar="R",
                   help="sim/ascend: only tiles whose fused kernel's modeled DMA volume is at most R x the "
                        "minimal bytes (pruned as 'traffic'); compile/bench with the same flag pick them")
    p.set_defaults(func=cmd_tune)


def cmd_tune(args) -> int:

    level = get_level(single_level(args))
    if not level.fuse:
        raise MegafuseError(f"--opt-level {level.level} compiles no fused blocks: nothing to tune (tiles are tuned "
                            f"at levels 2 and 3)")
    if level.note:
        print(f"note: {level.note}")
    if args.trials is None:
        args.trials = 16 if args.budget_s is None else 10_000  # the budget stops the sweep first
    if args.trials < 1 or args.workers < 0 or args.top < 1:
        raise MegafuseError("--trials and --top must be >= 1, --workers >= 0")
    if args.budget_s is not None and not args.budget_s > 0:
        raise MegafuseError(f"--budget-s must be > 0, got {args.budget_s}")
    check_workers(args.workers)      # local processes: a small multiple of this machine's CPUs
    check_output_file(args.csv, "--csv")      # outputs written after the sweep: checked before it
    check_output_file(args.json, "--json")
    check_output_dir(args.plot, "--plot")
    tgt = parse_target(args.target)
    if args.budget_s is not None and tgt.kind != "llvm":
        raise MegafuseError("--budget-s applies to -t llvm (measured tuning); the cost-model sweep is exhaustive")
    if tgt.kind == "llvm":
        threads = args.threads or int(os.environ.get("TVM_NUM_THREADS", "0") or 0) or (os.cpu_count() or 1)
        os.environ["TVM_NUM_THREADS"] = str(threads)

    measurer = _rpc_measurer(args, tgt)
    path = None if args.no_db else Path(args.db) if args.db else default_db_path()
    db = TuningDB(path).load()
    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    t0 = time.perf_counter()
    results = tune_model(args.model, tgt, db, input_shapes=shapes or None, dtype=args.dtype,
                         blocks=args.block or None, trials=args.trials, workers=args.workers, top=args.top,
                         exhaustive=args.exhaustive, progress=not args.quiet and sys.stderr.isatty(),
                         settings=MeasureSettings(), max_dma_ratio=args.max_dma_ratio,
                         budget_s=args.budget_s, measurer=measurer)
    wall = time.perf_counter() - t0
    print_report(results, tgt, path, args.top, wall, measurer)
    if measurer is not None:
        print(f"timed on {measurer.n_servers} RPC server(s) under {display(measurer.cfg.where)}"
              + "".join(f"\n  {display(e)}" for e in measurer.events))
    if args.csv:
        write_csv(results, Path(args.csv))
        print(f"wrote {args.csv}")
    if args.json:
        write_json(results, Path(args.json), tgt, path, wall)
        print(f"wrote {args.json}")
    if args.plot:
        for f in plot_heatmaps(results, Path(args.plot)):
            print(f"wrote {f}")
    return 0


def _rpc_address(text: str):
    import argparse

    try:
        return parse_address(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_rpc_address.__name__ = "--rpc"


def _rpc_measurer(args, tgt):

    if args.rpc is None and args.rpc_key is None:
        return None
    if args.rpc is None or not args.rpc_key:
        raise MegafuseError("--rpc HOST:PORT and --rpc-key KEY go together")
    if tgt.kind != "llvm":
        raise MegafuseError("--rpc times measured candidates: it applies to -t llvm (the cost-model sweep runs here)")

    return RpcMeasurer(RpcConfig(*args.rpc, args.rpc_key), MeasureSettings())


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------
def _cores(t) -> str:
    return "auto" if t.cores == 0 else str(t.cores)


def _dma(r, tile) -> float:
    """Modeled DMA volume / minimal bytes of a tile (schedules/traffic.py)."""

    return dma_ratio(make_plan(r.workload, tile, parse_target(r.target).soc))


def print_report(results, tgt, path, top: int, wall: float, measurer=None) -> None:
    ev = "cost model (modeled µs)" if tgt.kind != "llvm" else \
        f"measured on this CPU (median µs, TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS')})" if measurer is None \
        else f"built here, measured on the RPC servers under {display(measurer.cfg.where)} (median µs; their threads)"
    print(f"tune on {tgt.name}: {ev}; database {display(path, 0) if path else '(in memory)'}")
    for r in results:
        wl = r.workload
        sp = r.space
        what = "modeled" if r.evaluator == "modeled" else "measured"
        line = (f"{display(r.name)}  {wl.describe()}\n  space: {sp.describe_pruning()}\n"
                f"  {what} {len(r.points):,} (new {r.new:,}, from database {r.stored:,})")
        if r.evaluator == "modeled":
            line += f", excluded by the lower bound {r.bound_skipped:,}"
            if r.bound_fallback:
                line += " (bound violated: exhaustive)"
        if r.failed:
            line += f", failed {r.failed}"
        line += f"; {r.elapsed_s:.2f} s"
        if r.evaluator == "modeled":
            line += f" ({r.points_per_s:,.0f} points/s)"
        print(line)
        d = r.default_point
        ranked = r.ranked()[:top]
        if not ranked:
            errs = [p.record.get("error") for p in r.points.values() if p.record.get("error")]
            if not r.space.n_legal and r.space.pruned.get("traffic"):

                low = lowest_dma_ratio(r.workload, parse_target(r.target))
                print(f"  no tile within the DMA cap; the lowest any legal tile reaches is "
                      f"{low[0]:.2f}x ({low[1].describe()})" if low else "  no tile fits")
                continue
            print("  no point evaluated successfully" + (f"; first error: {display(errs[0], 300)}" if errs else ""))
            continue
        modeled = r.evaluator == "modeled"
        print(f"  {'#':>3}  {'tile':<34} {'cores':>5} {'latency_us':>11} {'min_us':>9} {'vs default':>10}"
              + (f" {'DMA/min':>8}" if modeled else ""))
        for i, p in enumerate(ranked, 1):
            sp_ = f"{d.latency_us / p.latency_us:.2f}x" if d and d.latency_us else "-"
            mn = p.record.get("min_us")
            print(f"  {i:>3}  {p.tile.describe():<34} {_cores(p.tile):>5} {p.latency_us:>11.2f} "
                  f"{(f'{mn:.2f}' if mn is not None else '-'):>9} {sp_:>10}"
                  + (f" {_dma(r, p.tile):>7.2f}x" if modeled else ""))
        if d is not None and d.latency_us is not None:
            mn = d.record.get("min_us")
            print(f"  {'def':>3}  {d.tile.describe():<34} {_cores(d.tile):>5} {d.latency_us:>11.2f} "
                  f"{(f'{mn:.2f}' if mn is not None else '-'):>9} {'1.00x':>10}"
                  + (f" {_dma(r, d.tile):>7.2f}x" if modeled else ""))
    n_legal = sum(r.space.n_legal for r in results)
    covered = sum(r.covered for r in results)
    new = sum(r.new for r in {id(r.points): r for r in results}.values())  # a reused block adds none
    tot_best = sum(r.best.latency_us for r in results if r.best)
    tot_def = sum(r.default_point.latency_us for r in results
                  if r.default_point and r.default_point.latency_us is not None)
    print(f"{len(results)} blocks: {n_legal:,} legal points, {covered:,} settled in {wall:.1f} s "
          f"({covered / wall if wall else 0:,.0f} points/s); {new:,} new records"
          + (f"; sum of block latencies {tot_def:.1f} -> {tot_best:.1f} us ({tot_def / tot_best:.2f}x)"
             if tot_best else ""))


def _point_rows(results):

    for r in results:
        seen = set()
        tiles = [r.space.tile_at(int(i)) for i in r.space.legal_indices()]
        tiles += [p.tile for p in r.points.values()]
        for t in tiles:
            pid = point_id(t)
            if pid in seen:
                continue
            seen.add(pid)
            p = r.points.get(pid)
            if p is not None:
                status = "failed" if p.latency_us is None else p.source
            elif r.evaluator == "modeled":
                status = "bound" if pid in r.bounds else "not-evaluated"
            else:
                status = "not-measured"
            rec = p.record if p else {}
            yield {"block": r.name, "workload": r.workload.describe(), "target": r.target,
                   "evaluator": r.evaluator, "th": t.th, "tw": t.tw, "cob": t.cob, "cib": t.cib,
                   "double_buffer": t.double_buffer, "pw_engine": t.pw_engine, "cores": t.cores,
                   "status": status, "latency_us": p.latency_us if p else None,
                   "min_us": rec.get("min_us"), "lower_bound_us": r.bounds.get(pid),
                   "check_rel_err": rec.get("check_rel_err"), "error": rec.get("error"),
                   "is_default": t == r.default}


def write_csv(results, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = _point_rows(results)
    first = next(rows, None)
    with open(path, "w", newline="") as f:
        if first is None:
            return
        w = csv.DictWriter(f, fieldnames=list(first))
        w.writeheader()
        w.writerow(first)
        for row in rows:
            w.writerow(row)


def write_json(results, path: Path, tgt, db_path, wall: float) -> None:

    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = []
    rows = list(_point_rows(results))
    for r in results:
        b, d = r.best, r.default_point
        blocks.append({
            "name": r.name, "workload": r.workload.describe(), "key": r.key, "evaluator": r.evaluator,
            "space": r.space.summary(), "evaluated": len(r.points), "new": r.new, "stored": r.stored,
            "bound_excluded": r.bound_skipped, "failed": r.failed, "elapsed_s": r.elapsed_s,
            "best": {**tile_to_json(b.tile), "latency_us": b.latency_us} if b else None,
            "default": {**tile_to_json(r.default), "latency_us": d.latency_us if d else None},
            "speedup_vs_default": r.speedup,
            "points": [{k: v for k, v in row.items() if k not in ("block", "workload", "target", "evaluator")}
                       for row in rows if row["block"] == r.name]})
    doc = {"target": tgt.name, "database": str(db_path) if db_path else None, "wall_s": wall, "blocks": blocks}
    write_text_atomic(str(path), json.dumps(doc, indent=1), "--json")


# ------------------------------------------------------------------------------------------
# heatmaps
# ------------------------------------------------------------------------------------------
def plot_heatmaps(results, outdir: Path) -> list[Path]:
    """One PNG per block: th × tw grid, colour = best latency over the other knobs (log scale);
    hatched cells: no legal point (pruned, the main reason named); dotted cells: legal but not
    evaluated (below: the lower bound excluded them; llvm: outside the trial budget)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Patch


    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    idents: set[str] = set()
    for r in results:
        ths, tws = r.space.ths, r.space.tws
        grid = np.full((len(ths), len(tws)), np.nan)
        for p in r.points.values():
            if p.latency_us is None or p.tile.th not in ths or p.tile.tw not in tws:
                continue
            i, j = ths.index(p.tile.th), tws.index(p.tile.tw)
            if math.isnan(grid[i, j]) or p.latency_us < grid[i, j]:
                grid[i, j] = p.latency_us
        cells = r.space.cell_status()
        fig, ax = plt.subplots(figsize=(max(5, 0.38 * len(tws) + 3), max(4, 0.32 * len(ths) + 2)))
        vals = grid[~np.isnan(grid)]
        ax.set_facecolor("white")
        if vals.size:
            im = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis_r", origin="lower", aspect="auto",
                           norm=LogNorm(vmin=vals.min(), vmax=max(vals.max(), vals.min() * 1.0001)))
            fig.colorbar(im, ax=ax, label=("modeled" if r.evaluator == "modeled" else "measured")
                         + " latency (µs), best over cob/cib/db/engine/cores")
        reasons = set()
        for (th, tw), st in cells.items():
            i, j = ths.index(th), tws.index(tw)
            if st != "legal":
                reasons.add(st)
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.8", edgecolor="0.5",
                                           hatch="//", lw=0.3))
            elif math.isnan(grid[i, j]):
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.95", edgecolor="0.6",
                                           hatch="..", lw=0.3))
        b, d = r.best, r.default_point
        if b is not None:
            ax.plot(tws.index(b.tile.tw), ths.index(b.tile.th), marker="*", ms=14, color="red", mec="k")
        if d is not None and d.tile.th in ths and d.tile.tw in tws:
            ax.plot(tws.index(d.tile.tw), ths.index(d.tile.th), marker="o", ms=9, mfc="none", mec="magenta", mew=2)
        handles = [Patch(facecolor="0.8", edgecolor="0.5", hatch="//",
                         label="pruned: " + ", ".join(sorted(reasons)) if reasons else "pruned"),
                   Patch(facecolor="0.95", edgecolor="0.6", hatch="..",
                         label="legal, not evaluated" + (" (lower bound ≥ top-K)" if r.evaluator == "modeled"
                                                         else " (outside the trial budget)")),
                   plt.Line2D([], [], marker="*", color="red", mec="k", ls="", ms=12, label="best"),
                   plt.Line2D([], [], marker="o", mfc="none", mec="magenta", mew=2, ls="", ms=9, label="default")]
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=7)
        ax.set_xticks(range(len(tws)), [str(v) for v in tws], fontsize=6, rotation=90)
        ax.set_yticks(range(len(ths)), [str(v) for v in ths], fontsize=6)
        ax.set_xlim(-0.5, len(tws) - 0.5)
        ax.set_ylim(-0.5, len(ths) - 0.5)
        ax.set_xlabel("tw (output columns per tile)")
        ax.set_ylabel("th (output rows per tile)")
        ident = block_ident(r.name, len(idents), idents)   # the file name never is the model's string
        ax.set_title(f"{comment_text(r.name)}: {r.workload.describe()}\n{r.target}", fontsize=8)
        fig.tight_layout()
        f = inside(outdir, f"{ident}.png")
        fig.savefig(f, dpi=110)
        plt.close(fig)
        written.append(f)
    return written

