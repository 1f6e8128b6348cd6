"""Per block, the fused two-phase body against its vendor-like pair (issue 30; docs/design.md, "Fused
bodies vs the vendor-like pairs"): fused DW phase vs vendor DW body, the SyncAll on each side, GEMM
phase vs vendor PW body, from `bench --json` reports (fusion/report/bodies.py's per-block rows).
Every figure is MODELED.

    PYTHONPATH=. python benchmarks/bodies_table.py REPORT.json [REPORT.json ...]
"""

from __future__ import annotations

import json
import re
import sys

_SPAN = re.compile(r"(\w+) ([0-9.]+)-([0-9.]+) us")


def phases(note: str | None) -> dict[str, float]:
    """phase name -> its duration on the critical path, from the two-phase note (fusion/cost/twophase.phase_note).
    A phase the note shows after "per-tile flags" (910B phase 3 on cross-core flags) overlaps the
    phase before it: only its tail past that phase's end counts."""
    out: dict[str, float] = {}
    text = note or ""
    prev_end = None
    for m in _SPAN.finditer(text):
        n, a, b = m.group(1), float(m.group(2)), float(m.group(3))
        flagged = prev_end is not None and text[:m.start()].rstrip().endswith("per-tile flags,")
        out[n] = max(0.0, b - prev_end) if flagged else b - a
        prev_end = b
    return out


def rows(report: dict) -> list[str]:
    b = report["bodies"]
    s = b["sync_all_us"]
    out = [f"**{report['model']} {report['soc']} batch {report['batch']}** (SyncAll {s:.2f} µs; MODELED): "
           f"one launch fused {b['fused_one_launch_us']:.1f} vs vendor-like {b['vendor_one_launch_us']:.1f} µs "
           f"({b['speedup']:.2f}x); {len(b['blocks_slower_than_pair'])} of {len(b['blocks'])} blocks slower than their pair",
           "",
           "| block | DW phase (vendor DW) | GEMM phase [+ epilogue tail] (vendor PW) | SyncAlls fused (pair) | body (pair) | ratio |",
           "|---|---|---|---|---|---|"]
    for x in b["blocks"]:
        ph = phases(x.get("fused_phases"))
        vk = x["vendor_kernels"]
        vdw = vk[0]["body_us"] if len(vk) > 1 else None
        vpw = sum(k["body_us"] for k in vk[1:]) if len(vk) > 1 else vk[0]["body_us"]
        dw = f"{ph['dw']:.2f}" if "dw" in ph else "--"
        gemm = " + ".join(f"{ph[k]:.2f}" for k in ("se", "gemm", "epi") if k in ph) or "--"
        out.append(f"| {x['name']} | {dw} ({vdw:.2f}) | {gemm} ({vpw:.2f}) | "
                   f"{x['fused_inner_barriers'] * s:.2f} ({x['vendor_barriers_us']:.2f}) | "
                   f"{x['fused_body_us']:.2f} ({x['vendor_body_us']:.2f}) | {x['speedup']:.2f}x |"
                   if vdw is not None else
                   f"| {x['name']} | {dw} (--) | {gemm} ({vpw:.2f}) | {x['fused_inner_barriers'] * s:.2f} (0) | "
                   f"{x['fused_body_us']:.2f} ({x['vendor_body_us']:.2f}) | {x['speedup']:.2f}x |")
    return out


def main(paths: list[str]) -> int:
    for p in paths:
        with open(p) as f:
            print("\n".join(rows(json.load(f))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
