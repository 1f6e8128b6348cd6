"""The long run of the hostile-model fuzzer (fusion/cli/hostile_fuzz.py): valid models mutated in
attributes, shapes, names, initializers, external data, versions and outputs, each run through
`megafuse compile -o` (or `check -t llvm`) in a fresh folder.

  python benchmarks/fuzz_hostile.py --cases 3000        # ~15-20 min on one core
  python benchmarks/fuzz_hostile.py --cases 100         # a smoke run

Writes benchmarks/results/fuzz_hostile.json: cases, seconds, findings (crash / multi-line / hang /
escape, each with its mutations, which replay), exit-code and error-kind counts. Exit 1 on any
finding. One hypothesis run with a fixed seed (generation only, no shrinking: every finding is
recorded as drawn).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TVM_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RESULTS = Path(__file__).resolve().parent / "results"


def run(cases: int, seed: int) -> list:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from fusion.cli.hostile_fuzz import bases, mutation_strategy, run_case

    base_models, rows = bases(), []

    @hseed(seed)
    @settings(max_examples=cases, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.generate,))
    @given(mutation_strategy())
    def body(case):
        base, muts, command = case
        with tempfile.TemporaryDirectory(prefix="megafuse-hostile-") as d:
            rows.append(run_case(base_models[base], muts, Path(d), command))

    body()
    return rows


def _error_kind(line: str) -> str:
    """The reason of an error line, without the model's label and numbers (for the counts)."""
    text = line.removeprefix("megafuse: error: ").replace("cannot load ONNX model 'm.onnx': ", "")
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'*'", text))[:70]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "fuzz_hostile.json")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(args.cases, args.seed)
    wall = time.perf_counter() - t0
    findings = [r for r in rows if r.finding]
    kinds = collections.Counter(m.kind for r in rows for m in r.mutations)
    errors = collections.Counter(_error_kind(r.stderr_first) if r.code == 2 else f"exit {r.code}" for r in rows)
    doc = {
        "cases": len(rows), "seconds": round(wall, 1), "seed": args.seed, "threads": os.environ["TVM_NUM_THREADS"],
        "findings": len(findings),
        "crashes": sum(r.finding.startswith("crash") for r in findings),
        "hangs": sum(r.finding.startswith("hang") for r in findings),
        "escapes": sum(r.finding.startswith("escape") for r in findings),
        "multi_line": sum(r.finding.startswith("multi-line") for r in findings),
        "exit_codes": dict(collections.Counter(r.code for r in rows)),
        "commands": dict(collections.Counter(r.argv[0] for r in rows)),
        "mutation_kinds": dict(kinds),
        "slowest_case_s": round(max((r.seconds for r in rows), default=0.0), 2),
        "top_error_kinds": dict(errors.most_common(25)),
        "finding_cases": [r.to_json() for r in findings[:50]],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=True) + "\n")
    print(f"{doc['cases']} cases in {doc['seconds']} s: {doc['findings']} findings (crashes {doc['crashes']}, "
          f"hangs {doc['hangs']}, escapes {doc['escapes']}, multi-line {doc['multi_line']}); "
          f"exit codes {doc['exit_codes']}; wrote {args.out}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
