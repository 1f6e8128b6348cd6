"""`megafuse bench MODEL -t TARGET`: fused vs unfused (and ONNX Runtime on llvm), reports."""

from __future__ import annotations

import json
import sys
from fusion.report.bench import PIPE_KEYS
from fusion.report.bench import (baseline_mismatch, baseline_note, bench_llvm, bench_sim, check_plot_format, compare_baseline,
                                 load_report, plot_report, run_header)
from fusion.cli.main import _compile_from_args
from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display, display_message
from fusion.tuning.measure import no_spin
from fusion.driver.compiler import compile_model
from fusion.frontend.onnx_import import load_once, read_model
from fusion.report.trace import chrome_trace
from fusion.report.bench_levels import bench_levels, print_levels
from schedules.targets import parse_target

from fusion.report.bodies import print_bodies
from fusion.report.bench import git_commit
from fusion.report.bench_int8 import bench_int8, print_int8
from fusion.verify.reference import is_qdq
from fusion.driver.fallback import is_fallback
from pathlib import Path

from passes.quant_fuse import QUANT_OPS

from fusion.cli.options import check_input_file, check_output_file, int_in, write_text_atomic

MAX_SAMPLES = 100_000    # timed runs of the whole model: beyond this, hours for no better median


def register(sub, add_model_args) -> None:
    p = sub.add_parser("bench", help="fused vs unfused latency per block and for the whole model "
                                     "(modeled on sim, measured on llvm)")
    add_model_args(p, json_flag=False)
    p.set_defaults(fallback=True)   # the headline never loses to the vendor-like baseline because of a block
    p.add_argument("--json", dest="json_file", metavar="FILE", help="write the performance report here")
    p.add_argument("--baseline", metavar="FILE",
                   help="compare with an earlier --json report of the same dtype, target and batch "
                        "(where both reports name them; another model name warns); exit 1 when a latency is "
                        "> 5%% worse")
    p.add_argument("--trace", metavar="FILE", help="Chrome trace-event JSON timeline (sim: per core and pipe)")
    p.add_argument("--plot", metavar="FILE.png", help="bar chart of fused vs unfused per block")
    p.add_argument("--samples", type=int_in(1, MAX_SAMPLES, "--samples"), default=50,
                   help=f"llvm: timed samples (default 50, at most {MAX_SAMPLES:,})")
    p.add_argument("--warmup", type=int_in(0, 10_000, "--warmup"), default=3, help="llvm: warm-up runs (default 3)")
    p.set_defaults(func=cmd_bench)


def _print(report: dict) -> None:
    """The text report. Names from the model (its file, nodes, blocks, chains) go through display():
    one escaped line each, as compile / explain / check print them."""
    label = report["figures"].upper()
    print(f"{display(report['model'])} on {report['target']} {report['dtype']} batch {report['batch']} "
          f"[{label}]" + (f"  threads {report['threads']}" if "threads" in report else ""))
    modeled = report["figures"] == "modeled"
    if modeled:
        print(f"  {'block':<12} {'fused us':>10} {'vendor us':>10} {'vs vendor':>9} {'per-op us':>10} "
              f"{'vs per-op':>9}  extra")
    else:
        print(f"  {'block':<12} {'fused us':>10} {'unfused us':>11} {'speedup':>8}  extra")
    for r in report["kernels"]:
        if modeled:
            extra = (f"DMA {r['gm_bytes_fused'] / 1024:.0f}/{r['gm_bytes_unfused'] / 1024:.0f}/"
                     f"{r['gm_bytes_min'] / 1024:.0f} KiB (fused/unfused/min) = {r['traffic_ratio']:.2f}x min "
                     f"(floor on {r['cores']} cores {r['dma_floor_ratio']:.2f}x, any split {r['dma_floor_any_split_ratio']:.2f}x)  HBM {r['hbm_traffic_ratio']:.2f}x min  "
                     f"UB {r['ub_bytes_used']:,}/"
                     f"{r['ub_bytes_available']:,}  pw:{r['engine'].get('pw')}  {r['bound']}"
                     f"{'' if r['bottleneck'].startswith(r['bound']) else ' (' + r['bottleneck'] + ')'}  "
                     f"efficiency {r['roofline_pct']:.0f}% of roofline (launch floor {r['launch_floor_us']:.1f} us, "
                     f"{r['roofline_pct_of_body']:.0f}% of roofline after launch)")
            print(f"  {display(r['name']):<12} {r['fused_us']:>10.2f} {r['vendor_us']:>10.2f} {r['speedup_vs_vendor']:>8.2f}x "
                  f"{r['unfused_us']:>10.2f} {r['speedup']:>8.2f}x  {extra}")
            _print_pipes(r["pipes_us"])
            if "chain" in r:
                clip = (f" (+ {r['in_chain_clip_us']:.2f} us clipping its x to 6 for the GEMM stage before it: "
                        f"that stage's relu6, counted with the stages)" if r.get("in_chain_clip_us") else "")
                print(f"  {'':<12} in {display(r['chain'])}: body {r['in_chain_body_us']:.2f}{clip} + SyncAll "
                      f"{r['in_chain_sync_us']:.2f} "
                      f"= {r['in_chain_us']:.2f} us vs vendor {r['vendor_us']:.2f} us "
                      f"({r['in_chain_speedup_vs_vendor']:.2f}x; its launch is the chain's)")
            continue
        extra = (f"p95 {r['fused']['p95_us']:.1f}/{r['unfused']['p95_us']:.1f}  "
                 f"cv {r['fused']['cv']:.2f}{' NOISY' if r['fused']['noisy'] or r['unfused']['noisy'] else ''}")
        print(f"  {display(r['name']):<12} {r['fused_us']:>10.2f} {r['unfused_us']:>11.2f} {r['speedup']:>7.2f}x  {extra}")
    for fb in report.get("fallback_blocks", []):
        print(f"  {display(fb['nodes'][0]):<12} unfused (fallback): {display_message(fb['reason'])}")
    for c in report.get("chains", []):
        n, stages = len(c["blocks"]), len(c.get("stages", ()))
        what = f"{n} blocks" if not stages else f"{n - stages} blocks + {stages} GEMM stages"
        syncs = c.get("syncs", n - 1)
        local = f" ({n - 1 - syncs} GEMM stages follow their producer on its cores)" if syncs < n - 1 else ""
        print(f"  {display(c['name'])}: {what} in one launch: {c['time_us']:.1f} us = launch "
              f"{c['launch_us']:.1f} + bodies {c['body_us']:.1f} + {syncs} SyncAll {c['sync_us']:.1f}{local} "
              f"(launched one by one {c['unchained_us']:.1f} us; saves {c['saved_us']:.1f} us)  [MODELED]")
        if c.get("chunks", 1) > 1:
            joined = (f"; {c['joined']} GEMM stages in their producer's GEMM task ({c['aic_barriers']} barriers over "
                      f"the AICs, in the steps)" if c.get("joined") else "")
            print(f"    in {c['chunks']} image chunks: {c['steps']} steps, the DW of one chunk beside the GEMM of "
                  f"another, a SyncAll between steps{joined} (bodies: the steps'; the rows above: each member unchunked)")
            if c.get("ahead"):
                print(f"    {c['ahead']} GEMM tasks find their PW weights in L1, loaded by the AICs' task before beside "
                      "its own tiles  [MODELED gain, in the bodies above]")
        for line in c.get("read_ahead", ()):
            print(f"    {display_message(line)}  [MODELED gain, in the bodies above]")
        for name in c.get("local_dw", ()):
            print(f"    {display(name)}'s GEMM follows its own DW on each core: a pipe barrier, no SyncAll between its phases  "
                  "[MODELED gain, in the bodies above]")
        if stages:
            print(f"    GEMM stages: bodies {c['stages_body_us']:.1f} us in the chain (identity-DW copy + GEMM + the "
                  f"relu6 clips the next blocks apply) vs "
                  f"the vendor's conv+act kernels {c['stages_vendor_body_us']:.1f} us of bodies + "
                  f"{c['stages_vendor_launch_us']:.1f} us of launches  [MODELED]")
    if modeled:
        if report.get("chains"):
            print(f"  without chains (--no-chain): fused {report['fused_unchained_in_vendor_network_us']:.1f} us")
        print(f"  whole model: fused {report['fused_in_vendor_network_us']:.1f} us vs vendor-like unfused "
              f"{report['vendor_latency_us']:.1f} us ({report['speedup_vs_vendor']:.2f}x; {report['vendor_kernels']} "
              f"vendor kernels, {report['vendor_launch_us']:.0f} us of launches)  [MODELED]")
        if "vendor_superkernel_us" in report:
            r = report["speedup_vs_vendor_superkernel"]
            print(f"  vs the same vendor-like kernels in one SuperKernel-like launch (CANN SuperKernel: PyTorch "
                  f"graph mode only, not an ATC/ONNX model): {report['vendor_superkernel_us']:.1f} us -> fused is "
                  + (f"{r:.2f}x faster" if r >= 1 else f"{1 / r:.2f}x SLOWER (its kernels' bodies are larger than "
                                                       f"the vendor kernels'; its gain is launches)") + "  [MODELED]")
        if "bodies" in report:
            print_bodies(report["bodies"])
        print(f"  per-op framework baseline: fused {report['per_op_fused_latency_us']:.1f} us, unfused {report['unfused_latency_us']:.1f} us "
              f"({report['speedup']:.2f}x); chains' traffic / minimal: DMA fused {report['traffic_ratio_fused']:.2f}x, "
              f"unfused {report['traffic_ratio_unfused']:.2f}x; HBM fused {report['hbm_traffic_ratio_fused']:.2f}x  [MODELED]")
    else:
        o = report["onnxruntime"]
        print(f"  whole model: fused p50 {report['fused']['p50_us']:.0f} us, unfused p50 "
              f"{report['unfused']['p50_us']:.0f} us ({report['speedup']:.2f}x), ONNX Runtime p50 "
              f"{o['p50_us']:.0f} us (fused is {report['vs_onnxruntime']:.2f}x ORT)  [measured]")


def _print_pipes(p: dict) -> None:
    """Per-pipe breakdown of a block, fused vs its vendor-like kernels (MODELED)."""

    def row(d):
        return " ".join(f"{k} {d[k]:.2f}" for k in PIPE_KEYS)
    why = []
    if p["fused_loses_most_on"]:
        why.append(f"fused loses most on {p['fused_loses_most_on']}")
    if p["fused_gains_most_on"]:
        why.append(f"gains most on {p['fused_gains_most_on']}")
    print(f"  {'':<12} pipes us  fused: {row(p['fused'])}")
    kernels = "+".join(display(k) for k in p["vendor_kernels"])   # named after the model's nodes
    print(f"  {'':<12} pipes us vendor: {row(p['vendor'])}  ({kernels}"
          f"{'; ' + ', '.join(why) if why else ''})")


def cmd_bench(args) -> int:


    no_spin()   # measured runs interleave TVM with ONNX Runtime: neither pool spins
    check_input_file(args.baseline, "--baseline")          # every path checked before the work
    for flag, path in (("--json", args.json_file), ("--trace", args.trace), ("--plot", args.plot)):
        check_output_file(path, flag, parent_must_exist=True)   # written here, no folder created
    if args.plot:
        check_plot_format(args.plot)
    if args.opt_level == "all":
        return _bench_all_levels(args)
    if args.trace and parse_target(args.target).kind == "llvm":
        raise MegafuseError("--trace needs a sim target (the timeline comes from the cost model)")
    baseline = load_report(args.baseline) if args.baseline else None
    model = load_once(args.model)   # compiled, run as the reference and modeled as the baseline: read once
    cm = _compile_from_args(args, model)
    if cm.target.kind != "llvm" and any(n.op_type in QUANT_OPS for n in cm.graph.nodes):
        return _bench_int8(args, cm)
    if baseline is not None:   # a report of another dtype, target or batch compares nothing: refused before the work
        header = run_header(cm, args.model)
        why = baseline_mismatch(header, baseline)
        if why:
            raise MegafuseError(f"--baseline '{display(args.baseline)}' is not comparable: {why}")
        note = baseline_note(header, baseline)
        if note:
            print(f"megafuse: warning: {note}", file=sys.stderr)
    if args.trace and cm.target.kind == "sim" and not cm.fused_blocks:
        raise MegafuseError(f"--trace: no fused kernel to trace on {cm.target.name}: " + _why_none_fused(cm))
    if cm.target.kind == "llvm":
        args_unfused = dict(target=args.target, dtype=cm.dtype, fuse=False,
                            input_shapes={k: v[0] for k, v in cm.program.inputs.items()})
        cm_u = compile_model(model, **args_unfused)
        report, costs = bench_llvm(cm, cm_u, read_model(model), args.model, args.warmup, args.samples)
    elif cm.target.kind == "sim":
        report, costs = bench_sim(cm, args.model, model)
    else:
        raise MegafuseError("bench runs on llvm (measured) or sim[:SOC] (modeled); "
                            "use 'megafuse check -t ascend' for the Ascend C kernels")
    _print(report)
    if args.json_file:
        _write(args.json_file, json.dumps(report, indent=2), "--json")
    if args.trace:
        _write(args.trace, json.dumps(chrome_trace(costs)), "--trace")
    if args.plot:
        plot_report(report, args.plot)
        print(f"wrote {display(args.plot, 0)}")
    if baseline is not None:
        bad = compare_baseline(report, baseline)
        for line in bad:
            print(f"REGRESSION {line}", file=sys.stderr)
        if bad:
            return 1
        print(f"no latency more than 5% worse than {display(args.baseline, 0)}")
    return 0


def _why_none_fused(cm) -> str:
    fallbacks = [r for r in cm.refusals if is_fallback(r)]
    if fallbacks:
        return (f"every fusable block runs unfused ({len(fallbacks)} fell back: the fused kernel was modeled "
                f"slower than the vendor-like kernels; --no-fallback keeps them fused)")
    return "the model has no fusable DW -> PW block"


def _bench_int8(args, cm) -> int:
    """A QDQ model on sim[:SOC]: fused int8 vs vendor-like int8 vs fp16 fused (MODELED)."""
    if cm.target.kind != "sim":
        raise MegafuseError(f"bench -t {cm.target.name}: int8 (QDQ) models are benched on sim[:SOC] "
                            f"(modeled) or llvm (measured)")
    for flag, val in (("--baseline", args.baseline), ("--trace", args.trace), ("--plot", args.plot)):
        if val:
            raise MegafuseError(f"bench {flag} is not supported for int8 (QDQ) models; use --json")
    report = bench_int8(cm.graph, cm.target, Path(args.model).stem, header={"commit": git_commit()})
    print_int8(report)
    if args.json_file:
        _write(args.json_file, json.dumps(report, indent=2), "--json")
    return 0


def _bench_all_levels(args) -> int:
    """--opt-level all: levels 0-3 side by side (fusion/report/bench_levels.py)."""
    import argparse


    if args.baseline or args.trace or args.plot:
        raise MegafuseError("--opt-level all prints the levels side by side; --baseline, --trace and --plot take one level")
    model = load_once(args.model)
    if parse_target(args.target).kind == "sim" and is_qdq(read_model(model)):
        raise MegafuseError("--opt-level all does not model int8 (QDQ) models; bench one level "
                            "(-t sim:SOC gives the int8 report)")
    report = bench_levels(lambda lv: _compile_from_args(argparse.Namespace(**{**vars(args), "opt_level": lv}), model),
                          args.model, read_model(model), parse_target(args.target).kind, args.warmup, args.samples,
                          model)
    print_levels(report)
    if args.json_file:
        _write(args.json_file, json.dumps(report, indent=2), "--json")
    return 0


def _write(path: str, text: str, flag: str) -> None:
    write_text_atomic(path, text, flag)   # whole or not at all
    print(f"wrote {display(path, 0)}")
