"""Fall back to the vendor-like kernels where the fused kernel would lose. MODELED.

On the Ascend targets (sim, ascend) a DW-separable block is fused only when its fused kernel,
with the tile `compile` gives it (tuned or default), is modeled no slower than the two kernels
a vendor graph compiler would run for it instead (fusion/vendor_baseline.block_kernels: DW with
its activation, PW on the cube with its epilogue). Otherwise fuse_dwsep records a profitability
Refusal with both numbers and the block runs unfused. A tile forced by the user is not second-
guessed (the user asked for that kernel); the llvm target has no vendor model and always fuses.
The gate remembers each block's tile choice so the driver does not choose it twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from fusion.targets import Target
from fusion.tile_policy import TileChoice, TileOverride, choose_tile
from schedules.workload import DwSepWorkload

log = logging.getLogger("megafuse.fuse")
GATED_KINDS = ("sim", "ascend")
REASON_PREFIX = "fused kernel ("   # how a fallback Refusal's reason starts (bench lists them)


def is_fallback(refusal) -> bool:
    return refusal.pass_name == "fuse_dwsep" and refusal.reason.startswith(REASON_PREFIX)


@dataclass
class FusionGate:
    target: Target
    override: TileOverride | None = None
    tuned_tiles: object = None        # callable (workload, target) -> TileConfig | None
    choices: dict = field(default_factory=dict)

    def choice(self, wl: DwSepWorkload) -> TileChoice:
        ch = self.choices.get(wl)
        if ch is None:
            tuned = self.tuned_tiles(wl, self.target) if self.tuned_tiles else None
            ch = self.choices[wl] = choose_tile(wl, self.target, self.override, tuned)
        return ch

    def compare(self, wl: DwSepWorkload) -> tuple[float, float]:
        """(fused µs, vendor-like DW + PW µs), both modeled on the target's SoC."""
        from fusion.costmodel import model_block
        from fusion.vendor_baseline import block_kernels

        fused = model_block(self.choice(wl).plan, timeline=False).time_us
        return fused, sum(k.time_us for k in block_kernels(wl, self.target.soc))

    def __call__(self, wl: DwSepWorkload) -> str | None:
        """None to fuse; else why the block runs unfused (one line with the numbers)."""
        if self.target.kind not in GATED_KINDS:
            return None
        ch = self.choice(wl)
        if ch.source == "forced":
            return None
        fused, vendor = self.compare(wl)
        if fused <= vendor:
            log.info("%s: fused %.2f us <= vendor-like DW+PW %.2f us (modeled)", wl.describe(), fused, vendor)
            return None
        return (f"{REASON_PREFIX}{ch.source} tile {ch.plan.tile.describe()}) modeled {fused:.2f} us > "
                f"vendor-like DW + PW kernels {vendor:.2f} us on {self.target.soc.name}: runs unfused")
