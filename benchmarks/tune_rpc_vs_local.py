"""The choices of a measured sweep timed on RPC servers (`tune -t llvm --rpc`) against the same
sweep timed locally: a TVM tracker and two servers on 127.0.0.1 started here, one block, the same
trials; the local and the RPC sweep interleaved twice (local, rpc, local, rpc) so drift hits both.
Prints per sweep the best tile and its median, where each sweep's best ranks in the first local
sweep, and the rank correlation over the points both measured. The default trials cover the
block's whole legal space (a fixed candidate list: the sweeps differ only in where they time);
fewer trials let the evolutionary phase follow each sweep's own measurements.

    python benchmarks/tune_rpc_vs_local.py [--cin 16 --cout 32 --hw 8 --trials 1000] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import models  # noqa: E402
from fusion.cli.main import main  # noqa: E402
from fusion.tuning.rpc import RpcConfig, servers  # noqa: E402

KEY = "megafuse-bench"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(args):
    return subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, "TVM_NUM_THREADS": os.environ["TVM_NUM_THREADS"]})


def _records(db: Path) -> dict[str, dict]:
    return {r["point"]: r for r in map(json.loads, db.read_text().splitlines()) if r.get("latency_us")}


def _spearman(a: list[int], b: list[int]) -> float:
    """Spearman's rho of two rankings of the same points (no ties)."""
    import numpy as np

    if len(a) < 2:
        return float("nan")
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main_() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cin", type=int, default=16)
    ap.add_argument("--cout", type=int, default=32)
    ap.add_argument("--hw", type=int, default=8)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--json")
    a = ap.parse_args()
    os.environ.setdefault("TVM_NUM_THREADS", "1")
    tmp = Path(tempfile.mkdtemp(prefix="tune-rpc-"))
    model = tmp / "block.onnx"
    onnx.save(models.dwsep_block(a.cin, a.cout, a.hw), model)
    tp = _port()
    procs = [_spawn(["tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(tp), "--port-end", str(tp + 1)])]
    try:
        for _ in range(2):
            sp = _port()
            procs.append(_spawn(["tvm.exec.rpc_server", "--tracker", f"127.0.0.1:{tp}", "--key", KEY, "--host",
                                 "127.0.0.1", "--port", str(sp), "--port-end", str(sp + 1)]))
        t_end = time.monotonic() + 120
        while True:
            try:
                if servers(RpcConfig("127.0.0.1", tp, KEY)) == 2:
                    break
            except Exception:  # noqa: BLE001 - still starting
                pass
            if time.monotonic() > t_end:
                raise SystemExit("the RPC servers did not register")
            time.sleep(0.5)
        runs = []
        for i, mode in enumerate(("local", "rpc", "local", "rpc")):
            db = tmp / f"{mode}{i}.jsonl"
            argv = ["tune", str(model), "-t", "llvm", "--db", str(db), "--trials", str(a.trials), "--quiet"]
            if mode == "rpc":
                argv += ["--rpc", f"127.0.0.1:{tp}", "--rpc-key", KEY]
            t0 = time.perf_counter()
            assert main(argv) == 0
            recs = _records(db)
            best = min(recs.values(), key=lambda r: r["latency_us"])
            runs.append({"mode": mode, "wall_s": time.perf_counter() - t0, "points": len(recs),
                         "best_tile": best["tile"], "best_us": best["latency_us"], "best_min_us": best.get("min_us"),
                         "ranking": [p for p, _ in sorted(recs.items(), key=lambda kv: kv[1]["latency_us"])]})
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
    print(f"\nblock {a.cin}->{a.cout} @{a.hw}x{a.hw} fp32, {a.trials} trials, TVM_NUM_THREADS="
          f"{os.environ['TVM_NUM_THREADS']} (servers too), this machine shared: MEASURED")
    for r in runs:
        t = r["best_tile"]
        print(f"  {r['mode']:<5} {r['points']} points in {r['wall_s']:.0f} s: best {t['th']}x{t['tw']} cob{t['cob']} "
              f"cib{t['cib']} {'db' if t['double_buffer'] else 'sb'} median {r['best_us']:.2f} us (min "
              f"{r['best_min_us']:.2f})")
    local = runs[0]["ranking"]
    for r in runs[1:]:
        rank = local.index(r["ranking"][0]) + 1 if r["ranking"][0] in local else None
        common = [p for p in r["ranking"] if p in local]
        rho = _spearman([local.index(p) for p in common], [r["ranking"].index(p) for p in common])
        r.update({"best_rank_in_local0": rank, "common_points": len(common), "spearman_vs_local0": rho})
        print(f"  {r['mode']:<5} best is #{rank} of the first local sweep's {len(local)}; rank correlation over "
              f"{len(common)} common points {rho:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main_()
