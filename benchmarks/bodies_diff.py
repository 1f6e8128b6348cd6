"""Before / after of the per-block bodies table (benchmarks/bodies_table.py) from two `bench --json`
reports of the same model, SoC and batch: one launch each side, blocks slower than their pair, and
per block the GEMM phase and the body against the vendor-like pair. Every figure is MODELED.

    PYTHONPATH=. python benchmarks/bodies_diff.py BEFORE.json AFTER.json [BEFORE.json AFTER.json ...]
"""

from __future__ import annotations

import json
import sys

from bodies_table import phases


def _gemm(x: dict) -> float:
    ph = phases(x.get("fused_phases"))
    return sum(ph.get(k, 0.0) for k in ("se", "gemm", "epi"))


def _vendor_pw(x: dict) -> float:
    vk = x["vendor_kernels"]
    return sum(k["body_us"] for k in vk[1:]) if len(vk) > 1 else vk[0]["body_us"]


def diff(before: dict, after: dict) -> list[str]:
    b0, b1 = before["bodies"], after["bodies"]
    out = [f"**{after['model']} {after['soc']} batch {after['batch']}** (µs, MODELED): one launch fused "
           f"{b0['fused_one_launch_us']:.1f} → {b1['fused_one_launch_us']:.1f} (vendor-like "
           f"{b1['vendor_one_launch_us']:.1f}), {b0['speedup']:.2f}x → {b1['speedup']:.2f}x; blocks slower than "
           f"their pair {len(b0['blocks_slower_than_pair'])} → {len(b1['blocks_slower_than_pair'])} of "
           f"{len(b1['blocks'])}; headline avg_latency_us {before['avg_latency_us']:.1f} → {after['avg_latency_us']:.1f}",
           "",
           "| block | GEMM phase before → after (vendor PW) | body before → after (pair) | ratio before → after |",
           "|---|---|---|---|"]
    old = {x["name"]: x for x in b0["blocks"]}
    for x in b1["blocks"]:
        o = old.get(x["name"])
        if o is None:
            continue
        out.append(f"| {x['name']} | {_gemm(o):.2f} → {_gemm(x):.2f} ({_vendor_pw(x):.2f}) | "
                   f"{o['fused_body_us']:.2f} → {x['fused_body_us']:.2f} ({x['vendor_body_us']:.2f}) | "
                   f"{o['speedup']:.2f}x → {x['speedup']:.2f}x |")
    return out


def main(paths: list[str]) -> int:
    if len(paths) % 2:
        print("megafuse: error: bodies_diff.py takes BEFORE AFTER pairs", file=sys.stderr)
        return 2
    for a, b in zip(paths[::2], paths[1::2]):
        with open(a) as fa, open(b) as fb:
            print("\n".join(diff(json.load(fa), json.load(fb))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
