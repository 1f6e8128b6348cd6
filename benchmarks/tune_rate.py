"""A/B of the modeled tile sweep between two source trees (interleaved runs, medians and minimums).

  python benchmarks/tune_rate.py --trees OLD_TREE NEW_TREE [--reps 3] [--soc ascend910b2 ...]

Per tree and repetition, one fresh process sweeps the fused blocks of MobileNetV1 (224, fp16,
in-process, no database, TVM_NUM_THREADS=1) and reports: the time to compute the lower bound of
every legal point of every block ("bound"), the points modeled, and the whole sweep's settled
points per second (what `megafuse tune` prints). Runs of the trees alternate so that machine
load hits both alike. Figures are wall-clock on whatever machine runs it: compare A against B
of one invocation only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import models
from fusion.core.soc import get_soc
from schedules.targets import parse_target
from fusion.tuning.db import TuningDB
from fusion.tuning.evaluators import modeled_lower_bound
from fusion.tuning.search import sweep_modeled
from fusion.tuning.space import build_space
from fusion.driver.compiler import compile_model

soc_name = sys.argv[1]
tgt = parse_target("sim:" + soc_name)
cm = compile_model(models.build("mobilenet_v1", resolution=224), target=tgt.name, dtype="float16")
wls = list(dict.fromkeys(b.workload for b in cm.fused_blocks))
bound_s = 0.0
points = 0
for wl in wls:
    tiles = build_space(wl, tgt.soc, "sim").legal_tiles()
    t0 = time.perf_counter()
    for t in tiles:
        modeled_lower_bound(wl, tgt.soc, t)
    bound_s += time.perf_counter() - t0
    points += len(tiles)
modeled = settled = 0
t0 = time.perf_counter()
for i, wl in enumerate(wls):
    r = sweep_modeled(f"b{i}", wl, tgt, TuningDB(None))
    modeled += len(r.points)
    settled += r.covered
sweep_s = time.perf_counter() - t0
print(json.dumps({"blocks": len(wls), "points": points, "bound_s": bound_s, "modeled": modeled,
                  "settled": settled, "sweep_s": sweep_s}))
"""


def run(tree: str, soc: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, TVM_NUM_THREADS="1",
               MEGAFUSE_TUNING_DB=os.path.join(tempfile.gettempdir(), "tune_rate_unused.jsonl"))
    out = subprocess.run([sys.executable, "-c", CHILD, soc], cwd=tree, env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", nargs=2, required=True, metavar=("A", "B"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--soc", action="append", default=[])
    args = ap.parse_args()
    socs = args.soc or ["ascend910b2", "ascend310p3"]
    for soc in socs:
        res: dict[str, list[dict]] = {t: [] for t in args.trees}
        for _ in range(args.reps):
            for tree in args.trees:
                res[tree].append(run(os.path.abspath(tree), soc))
        print(f"sim:{soc}, MobileNetV1 224 fp16, {args.reps} interleaved runs per tree, TVM_NUM_THREADS=1")
        for tree, rs in res.items():
            bound_us = [1e6 * r["bound_s"] / r["points"] for r in rs]
            rate = [r["settled"] / r["sweep_s"] for r in rs]
            print(f"  {tree}: {rs[0]['blocks']} blocks, {rs[0]['points']:,} legal points; bound "
                  f"median {statistics.median(bound_us):.1f} us/pt (min {min(bound_us):.1f}); modeled "
                  f"{rs[0]['modeled']:,}; sweep median {statistics.median(rate):,.0f} points/s "
                  f"(max {max(rate):,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
