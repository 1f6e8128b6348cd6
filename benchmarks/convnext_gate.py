"""Why convnext_atto's fused DW -> LayerNorm -> PW -> GELU blocks win or lose the fusion gate:
per stage (128 px export: 40/80/160/320 channels at 32/16/8/4 px), the two designs of the norm the
tile policy weighs -- inside DW units that hold all C1 blocks of their pixels (schedules/
channel_norm.py) and in a phase of its own between the DW and the GEMM (schedules/norm_phase.py) --
each at its fastest two-phase tile, MODELED, against the vendor-like DW, norm and PW kernels
(fusion/cost/vendor_baseline.py), on both SoCs at fp32 and fp16; and the default choice.

  python benchmarks/convnext_gate.py            # writes benchmarks/results/convnext_gate.md
  python benchmarks/convnext_gate.py --export /tmp/timm_zoo128/convnext_atto.onnx   # + `explain` counts

With --export (benchmarks/timm_zoo.py's export), also the fused blocks `explain` counts (the
fallback gate on, which replays compile's) per SoC and dtype. A section of the md from a line
"## Checks" on (the check runs, by hand: they take minutes on the emulator) is kept as it is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fusion.cli.explain import explain  # noqa: E402
from fusion.cost import model_block  # noqa: E402
from fusion.cost.vendor_baseline import block_kernels  # noqa: E402
from fusion.driver.tile_policy import TileOverride, _two_phase_best, choose_tile  # noqa: E402
from schedules.program import VectorOp  # noqa: E402
from schedules.program_twophase import build_twophase, phase  # noqa: E402
from schedules.targets import parse_target  # noqa: E402
from schedules.workload import DwSepWorkload  # noqa: E402

STAGES = ((40, 32), (80, 16), (160, 8), (320, 4))


def unit_instrs(plan, name: str) -> tuple[int, int]:
    """(taps, norm) vector instructions of the first unit of phase `name`."""
    ph = phase(build_twophase(plan), name)
    if ph is None:
        return 0, 0
    ops = [s for it in ph.units[0] for s in it if isinstance(s, VectorOp)]
    return (sum(s.instrs for s in ops if s.op == "dw_taps"),
            sum(s.instrs for s in ops if s.op.startswith("ln_")))


def cell(plan, us: float) -> tuple[str, str]:
    k = model_block(plan, timeline=False)
    taps, norm = unit_instrs(plan, "dw")
    units = f"{taps} taps + {norm} norm"
    if plan.norm_phase:
        units += f"; norm unit {sum(unit_instrs(plan, 'norm'))}"
    return (f"{plan.tile.describe()} | {us:.2f} ({k.launch_us:.2f}; {k.per_pipe_us['vector']:.2f} / "
            f"{k.per_pipe_us['MTE2']:.2f})", units)


def explain_counts(path: str) -> list[str]:
    out = ["", f"`explain` of {Path(path).name} (fallback gate on, default tiles, no tuning database):", "",
           "| target | dtype | DW blocks | fused |", "| --- | --- | --- | --- |"]
    for soc in ("ascend910b2", "ascend310p3"):
        for dt in ("float32", "float16"):
            chains, _, _ = explain(path, f"sim:{soc}", dtype=dt, fallback=True)
            out.append(f"| sim:{soc} | {dt} | {len(chains)} | {sum(c.fused for c in chains)} |")
            print(out[-1], flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--export", help="convnext_atto.onnx (benchmarks/timm_zoo.py): add the explain counts")
    args = ap.parse_args(argv)
    out = ["MODELED (fusion/cost). Per convnext_atto stage, the fastest two-phase tile of each norm design the "
           "tile policy weighs (fusion/driver/tile_policy._two_phase_best): **in-unit** -- a DW unit holds all "
           "channel blocks of its pixels and normalises them (schedules/channel_norm.py), so its DW issues "
           "kh*kw x C1 (x2 halves at fp32) tap instructions however few pixels it has -- and **norm phase** -- "
           "the DW runs ordinary channel-split units into the GM workspace, a SyncAll, a norm phase normalises "
           "units of pixels x all C1 there, a SyncAll, the GEMM (schedules/norm_phase.py). Each: the tile, the "
           "block's time (launch; vector / MTE2 busy on the busiest core), one DW unit's vector instructions "
           "(and one norm unit's); then the vendor-like DW + norm + PW kernels, the default choice and whether "
           "the fallback gate fuses it (chosen <= vendor).", "",
           "| SoC | dtype | block | in-unit tile | in-unit us (launch; vector / MTE2) | in-unit DW unit instrs | "
           "norm-phase tile | norm-phase us (launch; vector / MTE2) | norm-phase unit instrs | "
           "vendor DW + norm + PW us | chosen | fused? |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for soc in ("ascend910b2", "ascend310p3"):
        t = parse_target(f"sim:{soc}")
        for dt in ("float32", "float16"):
            for c, hw in STAGES:
                wl = DwSepWorkload(1, c, 4 * c, hw, hw, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, dt,
                                   ln_eps=1e-6)
                cols = []
                for npf in (False, True):
                    best = _two_phase_best(wl, t, TileOverride(), norm_phase=npf)
                    cols += cell(*best) if best else ("-", "-", "-")
                plan = choose_tile(wl, t).plan
                fused = model_block(plan, timeline=False).time_us
                v = block_kernels(wl, t.soc)
                vend = sum(x.time_us for x in v)
                chosen = ("norm phase" if plan.norm_phase else "in-unit") if plan.two_phase else plan.variant
                out.append(f"| {soc} | {dt} | {wl.describe()} | {' | '.join(cols)} | "
                           f"{' + '.join(f'{x.time_us:.2f}' for x in v)} = {vend:.2f} | {chosen} {fused:.2f} | "
                           f"{'yes' if fused <= vend else 'no'} |")
                print(out[-1], flush=True)
    if args.export:
        out += explain_counts(args.export)
    path = Path(__file__).resolve().parent / "results" / "convnext_gate.md"
    old = path.read_text() if path.exists() else ""
    kept = old[old.index("\n## Checks"):] if "\n## Checks" in old else ""
    path.write_text("\n".join(out) + "\n" + kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
