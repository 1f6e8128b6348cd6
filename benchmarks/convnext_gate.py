"""Why convnext_atto's fused DW -> LayerNorm -> PW -> GELU blocks win or lose the fusion gate:
per stage (128 px export: 40/80/160/320 channels at 32/16/8/4 px), the default tile the policy
picks, the fused kernel's MODELED time with its busiest pipes and the DW taps' share, against the
vendor-like DW, norm and PW kernels (fusion/cost/vendor_baseline.py), on both SoCs at fp32 and fp16.

  python benchmarks/convnext_gate.py            # writes benchmarks/results/convnext_gate.md
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fusion.cost import model_block  # noqa: E402
from fusion.cost.vendor_baseline import block_kernels  # noqa: E402
from fusion.driver.tile_policy import choose_tile  # noqa: E402
from schedules.program import VectorOp  # noqa: E402
from schedules.program_twophase import build_twophase  # noqa: E402
from schedules.targets import parse_target  # noqa: E402
from schedules.workload import DwSepWorkload  # noqa: E402

STAGES = ((40, 32), (80, 16), (160, 8), (320, 4))


def dw_unit_share(plan) -> str:
    """Vector instructions of one DW unit: the taps' and the norm's (two-phase plans)."""
    if not plan.two_phase:
        return "-"
    ops = [s for s in build_twophase(plan).phases[0].units[0][0] if isinstance(s, VectorOp)]
    taps = sum(s.instrs for s in ops if s.op == "dw_taps")
    norm = sum(s.instrs for s in ops if s.op.startswith("ln_"))
    return f"{taps} taps + {norm} norm of {sum(s.instrs for s in ops)}"


def main() -> int:
    out = ["MODELED (fusion/cost). Per convnext_atto stage: the default tile, the fused block's time "
           "(launch + body; vector / MTE2 busy on the busiest core), one DW unit's vector instructions, and "
           "the vendor-like DW + norm + PW kernels. A norm unit holds all channel blocks of its pixels "
           "(schedules/channel_norm.py), so its DW issues kh*kw x C1 (x2 halves at fp32) tap instructions "
           "however few pixels it has.", "",
           "| SoC | dtype | block | tile | fused us (launch; vector / MTE2) | DW unit vector instrs | "
           "vendor DW + norm + PW us | fused? |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for soc in ("ascend910b2", "ascend310p3"):
        t = parse_target(f"sim:{soc}")
        for dt in ("float32", "float16"):
            for c, hw in STAGES:
                wl = DwSepWorkload(1, c, 4 * c, hw, hw, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, dt,
                                   ln_eps=1e-6)
                plan = choose_tile(wl, t).plan
                k = model_block(plan, timeline=False)
                v = block_kernels(wl, t.soc)
                vend = sum(x.time_us for x in v)
                out.append(f"| {soc} | {dt} | {wl.describe()} | {plan.tile.describe()} | {k.time_us:.2f} "
                           f"({k.launch_us:.2f}; {k.per_pipe_us['vector']:.2f} / {k.per_pipe_us['MTE2']:.2f}) | "
                           f"{dw_unit_share(plan)} | {' + '.join(f'{x.time_us:.2f}' for x in v)} = {vend:.2f} | "
                           f"{'yes' if k.time_us <= vend else 'no'} |")
                print(out[-1], flush=True)
    path = Path(__file__).resolve().parent / "results" / "convnext_gate.md"
    path.write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
