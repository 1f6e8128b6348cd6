"""Compile time of two checkouts, interleaved (MEASURED on this machine).

Times `bench --dtype float16 --no-db` (the compile, the cost model's tile and chain searches and the
report) of each model on each SoC in checkout A and checkout B, alternating A and B in every round so
that the machine's noise falls on both; reports per configuration the median and minimum wall time of
each, the ratio of the medians, the thread count, and whether the two JSON reports are equal field for
field (the commit and the date left out) -- a compile-time change must not move a figure.

    PYTHONPATH=. python benchmarks/compile_time.py --a PATH_A --b PATH_B [--nets mobilenet_v1]
        [--batches 1,8] [--socs ascend910b2,ascend310p3] [--rounds 3] [-o benchmarks/results/compile_time]

Each checkout runs with its own `.venv` (a link to one is enough); the models are built once, by B.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

IGNORED = ("commit", "profiling_date")


def _python(repo: Path) -> str:
    return str(repo / ".venv" / "bin" / "python")


def _bench(repo: Path, model: Path, soc: str, report: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    t0 = time.perf_counter()
    subprocess.run([_python(repo), "-m", "fusion.cli.main", "bench", str(model), "-t", f"sim:{soc}",
                    "--dtype", "float16", "--no-db", "--json", str(report)],
                   env=env, check=True, capture_output=True, cwd=repo)
    return time.perf_counter() - t0


def _commit(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "unknown"


def _figures(report: Path) -> str:
    d = json.loads(report.read_text())
    return json.dumps({k: v for k, v in d.items() if k not in IGNORED}, sort_keys=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", type=Path, required=True, help="checkout A (the before)")
    ap.add_argument("--b", type=Path, required=True, help="checkout B (the after)")
    ap.add_argument("--nets", default="mobilenet_v1")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--socs", default="ascend910b2,ascend310p3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-o", "--output", type=Path, default=Path("benchmarks/results/compile_time"))
    args = ap.parse_args(argv)
    a, b = args.a.resolve(), args.b.resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for net in args.nets.split(","):
            for batch in (int(x) for x in args.batches.split(",")):
                model = tmp / f"{net}_b{batch}.onnx"
                subprocess.run([_python(b), "-m", "models", "build", net, "--batch", str(batch), "-o", str(model)],
                               env={**os.environ, "PYTHONPATH": str(b)}, check=True, capture_output=True, cwd=b)
                for soc in args.socs.split(","):
                    times: dict[str, list[float]] = {"a": [], "b": []}
                    for _ in range(args.rounds):
                        for side, repo in (("a", a), ("b", b)):
                            times[side].append(_bench(repo, model, soc, tmp / f"{side}.json"))
                    same = _figures(tmp / "a.json") == _figures(tmp / "b.json")
                    row = {"net": net, "batch": batch, "soc": soc, "rounds": args.rounds,
                           "a_median_s": statistics.median(times["a"]), "a_min_s": min(times["a"]),
                           "b_median_s": statistics.median(times["b"]), "b_min_s": min(times["b"]),
                           "same_figures": same}
                    row["speedup_median"] = row["a_median_s"] / row["b_median_s"]
                    rows.append(row)
                    print(f"{net} b{batch} {soc}: A median {row['a_median_s']:.1f} s (min {row['a_min_s']:.1f}), "
                          f"B median {row['b_median_s']:.1f} s (min {row['b_min_s']:.1f}): "
                          f"{row['speedup_median']:.2f}x; figures {'equal' if same else 'DIFFER'}", flush=True)
    out = {"figures": "MEASURED", "machine_cores": os.cpu_count(),
           "tvm_num_threads": os.environ.get("TVM_NUM_THREADS", "unset"),
           "a": _commit(a), "b": _commit(b), "rows": rows}
    args.output.with_suffix(".json").write_text(json.dumps(out, indent=1))
    lines = ["| network | batch | SoC | A median s (min) | B median s (min) | A / B | figures equal |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['net']} | {r['batch']} | {r['soc']} | {r['a_median_s']:.1f} ({r['a_min_s']:.1f}) | "
              f"{r['b_median_s']:.1f} ({r['b_min_s']:.1f}) | {r['speedup_median']:.2f}x | {r['same_figures']} |" for r in rows]
    lines += ["", f"MEASURED on this machine ({os.cpu_count()} cores), wall time of `bench --dtype float16 --no-db`, "
              f"A and B alternating in each of {args.rounds} rounds, TVM_NUM_THREADS "
              f"{out['tvm_num_threads']}. A: {out['a']}; B: {out['b']}."]
    args.output.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["same_figures"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
