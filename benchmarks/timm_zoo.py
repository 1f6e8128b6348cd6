"""Today's efficient networks as real exporters write them: timm / torchvision models exported with
torch.onnx.export (opset 17, batch 1, random weights, BN statistics calibrated, eval mode), then what
megafuse makes of them.

  python benchmarks/timm_zoo.py --torch-python /tmp/zoo-venv/bin/python            # the default list
  python benchmarks/timm_zoo.py --torch-python ... --models efficientnet_b0,mnasnet_100 --no-check
  python benchmarks/timm_zoo.py --torch-python ... --models repvit_m1,repvit_m1+reparam  # NAME+reparam: the
                                                   model's own reparameterize_model before the export

torch and timm are NOT dependencies of megafuse (nor of CI): they live in a separate environment
(`--torch-python`, e.g. a venv with the CPU torch wheel, timm and onnx), which only exports; the
analysis runs here. Per model the table has: DW convs, DW->PW chains (a DW conv whose output reaches
a 1x1 conv at its own resolution through activations, SE, norms or adds), fused chains on llvm and
sim (default target, fp32), refusals grouped by reason, and `check` on sim fp32, llvm fp32 and sim
fp16 against ONNX Runtime (max rel error, tolerance). Writes benchmarks/results/timm_zoo.json and
timm_zoo.md; the exported models are kept in --work (not committed).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import onnx
from onnx import numpy_helper, shape_inference

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fusion.verify.check import check_model  # noqa: E402
from fusion.driver.compiler import compile_model  # noqa: E402
from fusion.cli.explain import explain  # noqa: E402
from fusion.frontend.onnx_import import read_model  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = ("efficientnet_b0", "mobilenetv3_large_100", "mobilenetv3_small_100", "convnext_atto", "mobileone_s0",
          "repvit_m1", "efficientvit_b0", "mnasnet_100", "mobilenetv2_100", "tv:shufflenet_v2_x1_0",
          "mobileone_s0+reparam", "repvit_m1+reparam")   # the deployed forms: the training forms' yardstick

# Runs in the torch environment: build the model with random weights, export it. torchvision's
# PyPI wheel is built against CUDA torch; with the CPU torch wheel its C extension does not load
# and its import stops at two detection-op registrations, which classification models never call:
# declaring their schemas lets the pure-Python parts (which timm imports) load.
EXPORT = r'''
import sys, torch
try:
    import torchvision  # noqa: F401
except RuntimeError:
    lib = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        lib.define(op + "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
name, path, res = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.manual_seed(0)
if name.startswith("tv:"):
    import torchvision.models as tvm
    m = getattr(tvm, name[3:])(weights=None)
else:
    import timm
    m = timm.create_model(name.removesuffix("+reparam"), pretrained=False)
# BN statistics calibrated: random weights with the init's running stats (mean 0 / var 1) let the
# activations blow up or wash out through depth, so the output barely depends on the input (and fp16
# overflows). As after training, each BN's running stats are those of its own input: the BNs alone in
# train mode (cumulative average, momentum None) over CALIB_BATCHES batches of N(0, 1) images, the rest
# of the model in eval mode (no dropout / drop-path), then eval. The exported BNs normalize what they see.
CALIB_BATCHES, CALIB_BATCH = 4, 8
m.eval()
bns = [mod for mod in m.modules() if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm)]
for mod in bns:
    mod.reset_running_stats(); mod.momentum = None; mod.train()
with torch.no_grad():
    for _ in range(CALIB_BATCHES):
        m(torch.randn(CALIB_BATCH, 3, res, res))
m.eval()
if name.endswith("+reparam"):   # the deployed form: the model's own branch merge (MobileOne, RepViT, ...)
    from timm.utils.model import reparameterize_model
    m = reparameterize_model(m)
torch.onnx.export(m, torch.randn(1, 3, res, res), path, opset_version=17, dynamo=False,
                  input_names=["x"], output_names=["y"])
'''

PASSTHROUGH = {"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Mul", "Add", "Sub", "Div",
               "BatchNormalization", "Transpose", "LayerNormalization", "ReduceMean", "Pow", "Sqrt",
               "Erf", "GlobalAveragePool", "Identity", "PRelu", "LeakyRelu"}


def export(torch_python: str, name: str, path: Path, res: int) -> str | None:
    r = subprocess.run([torch_python, "-c", EXPORT, name, str(path), str(res)], capture_output=True, text=True,
                       timeout=900)
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["export failed"])[-1][:300]


def dw_pw_chains(model) -> tuple[int, int]:
    """(DW convs, DW convs whose output reaches a 1x1 conv at its own resolution)."""
    g = shape_inference.infer_shapes(model).graph
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in list(g.value_info) + list(g.input)}
    weights = {t.name: numpy_helper.to_array(t).shape for t in g.initializer}
    users: dict[str, list] = {}
    for n in g.node:
        for t in n.input:
            users.setdefault(t, []).append(n)
    attr = lambda n, k, d: next((onnx.helper.get_attribute_value(a) for a in n.attribute if a.name == k), d)  # noqa: E731
    dws, chains = 0, 0
    for n in g.node:
        w = weights.get(n.input[1]) if n.op_type == "Conv" and len(n.input) > 1 else None
        if w is None or attr(n, "group", 1) <= 1 or w[1] != 1 or attr(n, "group", 1) != w[0]:
            continue
        dws += 1
        hw = shapes.get(n.output[0], [])[2:]
        frontier, seen, found = [n.output[0]], set(), False
        for _ in range(8):
            nxt = []
            for t in frontier:
                for u in users.get(t, []):
                    if u.name in seen:
                        continue
                    seen.add(u.name)
                    uw = weights.get(u.input[1]) if u.op_type == "Conv" and len(u.input) > 1 else None
                    if uw is not None and tuple(uw[2:]) == (1, 1) and shapes.get(u.input[0], [])[2:] == hw:
                        found = True
                    elif u.op_type in PASSTHROUGH:
                        nxt += list(u.output)
            frontier = nxt
        chains += found
    return dws, chains


def reason_key(reason: str) -> str:
    """A refusal reason without its names and numbers, to group by."""
    r = re.sub(r"'[^']*'", "'…'", reason)
    r = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", r)
    return r.split(":")[0][:120]


def analyse(path: Path, check: bool) -> dict:
    model = read_model(str(path))
    dws, chains = dw_pw_chains(model)
    row: dict = {"dw_convs": dws, "dw_pw_chains": chains}
    for target in ("llvm", "sim"):
        cs, _, notes = explain(str(path), target, fallback=True)
        row["dw_after_passes"] = len(cs)   # DW convs left once re-parameterizable branches are merged
        row[f"fused_{target}"] = sum(c.fused for c in cs)
        row[f"refusals_{target}"] = dict(Counter(reason_key(c.reason) for c in cs if not c.fused).most_common())
        row["notes"] = notes
    if check:
        for label, target, dtype in (("sim", "sim", "float32"), ("llvm", "llvm", "float32"), ("fp16", "sim", "float16")):
            t0 = time.perf_counter()
            try:
                cm = compile_model(str(path), target=target, dtype=dtype)
                r = check_model(model, cm, seed=0)
                status = ("FP16-OVERFLOW" if r.fp16_overflow else "FAIL" if not r.within_tolerance
                          else "PASS" if r.passed else "INCONCLUSIVE")
                row[f"check_{label}"] = {"status": status, "passed": r.passed, "max_rel": r.max_rel,
                                         "tolerance": r.tolerance, "sensitivity": r.sensitivity,
                                         "fp16_shift": r.fp16_shift, "fp32_shift": r.fp32_shift,
                                         "fused": len(cm.fused_blocks), "s": round(time.perf_counter() - t0, 1)}
            except Exception as e:  # noqa: BLE001 - a benchmark row records any failure
                row[f"check_{label}"] = {"passed": False, "error": str(e)[:200]}
    return row


def markdown(rows: dict) -> str:
    out = ["| model | DW convs | DW->PW chains | DW after passes | fused llvm | fused sim | "
           "check sim / llvm / fp16 (max rel, tol) |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in rows.items():
        if "error" in r:
            out.append(f"| {name} | export failed: {r['error']} | | | | | |")
            continue
        checks = []
        for k in ("sim", "llvm", "fp16"):
            c = r.get(f"check_{k}")
            checks.append("-" if c is None else c.get("error", "")[:40] or
                          f"{c['status']} {c['max_rel']:.1e} / {c['tolerance']:.0e}")
        out.append(f"| {name} | {r['dw_convs']} | {r['dw_pw_chains']} | {r.get('dw_after_passes', '?')} | "
                   f"{r['fused_llvm']} | {r['fused_sim']} | "
                   f"{'; '.join(checks)} |")
    out.append("")
    out.append("INCONCLUSIVE: within tolerance, but the reference barely depends on its input "
               "(fusion/verify/sensitivity.py), so the comparison could not have failed. FP16-OVERFLOW: ONNX Runtime "
               "itself, with float16 storage, gives non-finite outputs (the model's, not the kernels').")
    out.append("")
    out.append("Refusals on sim (reason with names and numbers elided: count):")
    for name, r in rows.items():
        for reason, k in r.get("refusals_sim", {}).items():
            out.append(f"- {name}: {k} x {reason}")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torch-python", required=True, help="python of an environment with torch, timm and onnx")
    ap.add_argument("--models", default=",".join(MODELS), help="timm names; tv:NAME for torchvision")
    ap.add_argument("--resolution", type=int, default=224,
                    help="input size of the export (the chain counts do not depend on it; checks are faster smaller)")
    ap.add_argument("--work", default="/tmp/timm_zoo", help="where the exported models go")
    ap.add_argument("--no-check", action="store_true", help="counts only (no check runs)")
    ap.add_argument("--check-models", default=None, help="run the checks on these models only (default: all)")
    ap.add_argument("--out", default=str(RESULTS / "timm_zoo"))
    ap.add_argument("--update", action="store_true",
                    help="keep the other models' rows of OUT.json (same resolution) and replace these models' rows")
    ap.add_argument("--merge", default=None, metavar="A.json,B.json",
                    help="no runs: the rows of these results (runs of disjoint --models in parallel, same resolution) "
                         "into OUT.json / OUT.md, in the order of --models")
    args = ap.parse_args(argv)
    if args.merge:
        return merge(args)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows: dict = {}
    old = Path(args.out + ".json")
    if args.update and old.exists():
        prev = json.loads(old.read_text())
        if prev.get("resolution") == args.resolution:
            rows = dict(prev["models"])
    for name in args.models.split(","):
        path = work / f"{name.replace(':', '_').replace('+', '_')}.onnx"
        if not path.exists():
            err = export(args.torch_python, name, path, args.resolution)
            if err:
                rows[name] = {"error": err}
                print(f"{name}: export failed: {err}", flush=True)
                continue
        checked = not args.no_check and (args.check_models is None or name in args.check_models.split(","))
        rows[name] = analyse(path, checked)
        print(name, json.dumps(rows[name]), flush=True)
        write(args, rows)
    return 0


def write(args, rows: dict) -> None:
    Path(args.out + ".json").write_text(json.dumps({"resolution": args.resolution, "models": rows}, indent=1))
    Path(args.out + ".md").write_text(f"Exported at {args.resolution}x{args.resolution}, batch 1, opset 17, random "
                                      f"weights (seed 0), BN statistics calibrated on N(0, 1) images "
                                      f"(EXPORT in benchmarks/timm_zoo.py); default target "
                                      f"sim:ascend910b2; the fused columns with the fallback on (`explain`), the "
                                      f"checks with it off (compile_model's default: every block that can fuse "
                                      f"does, so every fused kernel is checked).\n\n" + markdown(rows))


def merge(args) -> int:
    found: dict = {}
    for part in args.merge.split(","):
        doc = json.loads(Path(part).read_text())
        if doc.get("resolution") != args.resolution:
            print(f"megafuse: error: {part} was run at {doc.get('resolution')} px, not {args.resolution}",
                  file=sys.stderr)
            return 2
        found.update(doc["models"])
    rows = {name: found[name] for name in args.models.split(",") if name in found}
    missing = [name for name in args.models.split(",") if name not in found]
    if missing:
        print(f"megafuse: error: no rows for {', '.join(missing)}", file=sys.stderr)
        return 2
    write(args, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
