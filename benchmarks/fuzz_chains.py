"""The long run of the chain fuzzer: random DW-separable chains (models/random_chain.py) compiled
on llvm and sim and compared with ONNX Runtime (fusion/verify/fuzz.py).

  python benchmarks/fuzz_chains.py --chains 1000 --jobs 2     # ~1-2 h on 2 cores
  python benchmarks/fuzz_chains.py --chains 40                # a smoke run

Writes benchmarks/results/fuzz_chains.json: chains, targets, seconds, mismatches (over the
tolerance; the spec and outcome of each), inconclusive cases (check's INCONCLUSIVE), compile errors, fused blocks, tolerance used. Exit 1 if any mismatch. Each job
is one hypothesis run with its own seed (no shrinking: every failing chain is recorded as drawn).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("TVM_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = ("llvm", "sim")


def run_job(chains: int, seed: int) -> dict:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from fusion.verify.fuzz import check_on
    from models.random_chain import build_chain, chain_strategy

    rows = []

    @hseed(seed)
    @settings(max_examples=chains, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.generate,))
    @given(chain_strategy())
    def body(spec):
        model = build_chain(spec)
        rows.append({"spec": asdict(spec), "outcomes": [check_on(model, t).to_json() for t in TARGETS]})

    body()
    return {"seed": seed, "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "fuzz_chains.json")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    per = [args.chains // args.jobs + (i < args.chains % args.jobs) for i in range(args.jobs)]
    if args.jobs == 1:
        jobs = [run_job(per[0], args.seed)]
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as ex:
            jobs = list(ex.map(run_job, per, [args.seed + i for i in range(args.jobs)]))
    wall = time.perf_counter() - t0
    rows = [r for j in jobs for r in j["rows"]]
    outcomes = [o for r in rows for o in r["outcomes"]]
    mismatches = [r for r in rows if any(not o["passed"] and not o["error"] and not o["inconclusive"]
                                         for o in r["outcomes"])]
    inconclusive = [r for r in rows if any(o["inconclusive"] for o in r["outcomes"])]
    errors = [r for r in rows if any(o["error"] for o in r["outcomes"])]
    doc = {
        "chains": len(rows), "targets": list(TARGETS), "checks": len(outcomes), "seconds": round(wall, 1),
        "jobs": args.jobs, "seeds": [j["seed"] for j in jobs],
        "mismatches": len(mismatches), "compile_errors": len(errors),
        # within tolerance, but the reference barely depends on the input (check's INCONCLUSIVE)
        "inconclusive": len(inconclusive),
        "fused_blocks": sum(o["fused_blocks"] for o in outcomes if o["target"] == "llvm"),
        "blocks": sum(len(r["spec"]["blocks"]) for r in rows),
        "fp16_chains": sum(r["spec"]["dtype"] == "float16" for r in rows),
        "max_rel_over_tolerance": max((o["max_rel"] / o["tolerance"] for o in outcomes if not o["error"]),
                                      default=0.0),
        "mismatch_cases": mismatches[:50], "error_cases": errors[:50],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{doc['chains']} chains ({doc['blocks']} blocks, {doc['fused_blocks']} fused on llvm, "
          f"{doc['fp16_chains']} fp16) x {len(TARGETS)} targets in {wall:.0f} s: {doc['mismatches']} mismatches, "
          f"{doc['compile_errors']} compile errors, {doc['inconclusive']} inconclusive; worst error/tolerance {doc['max_rel_over_tolerance']:.3f}; "
          f"wrote {args.out}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
