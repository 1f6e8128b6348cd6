"""Fall back to the vendor-like kernels where the fused kernel would lose. MODELED.

On the Ascend targets (sim, ascend) a DW-separable block is fused only when its fused kernel,
with the tile `compile` gives it (tuned or default), is modeled no slower than the two kernels
a vendor graph compiler would run for it instead (fusion/vendor_baseline.block_kernels: DW with
its activation, PW on the cube with its epilogue). Otherwise fuse_dwsep records a profitability
Refusal with both numbers and the block runs unfused. A tile forced by the user is not second-
guessed (the user asked for that kernel); the llvm target has no vendor model and always fuses.
The gate remembers each block's tile choice so the driver does not choose it twice.

With block chains on (fusion/driver/chain.py) a block that loses launched on its own may still win inside
a chain, where it pays its body and one SyncAll instead of a launch: the gate then fuses it when
that in-chain cost (its two-phase chain plan, fusion/chain.chain_member_plan) is no slower than
its pair. The driver compiles, finds the chains, and compiles again with every such block that
did not land in a chain left unfused (`unchained`), until none is left: a block is fused only
where it is no slower than its pair, alone or in its chain.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from schedules.targets import Target
from fusion.driver.tile_policy import TileChoice, TileOverride, choose_tile, fit_refusal
from schedules.workload import DwSepWorkload
from fusion.cost import model_block
from fusion.cost.vendor_baseline import block_kernels
from fusion.cost.twophase import sync_all_us
from fusion.driver.tile_policy import two_phase_plan

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
    chain_credit: bool = False        # judge a block at its in-chain cost where that wins (see above)
    unchained: set = field(default_factory=set)   # workloads fused for a chain that none took

    def choice(self, wl: DwSepWorkload) -> TileChoice:
        ch = self.choices.get(wl)
        if ch is None:
            tuned = self.tuned_tiles(wl, self.target) if self.tuned_tiles else None
            ch = self.choices[wl] = choose_tile(wl, self.target, self.override, tuned,
                                                getattr(self.tuned_tiles, "cap", None))
        return ch

    def compare(self, wl: DwSepWorkload) -> tuple[float, float]:
        """(fused µs, vendor-like DW + PW µs), both modeled on the target's SoC."""

        fused = model_block(self.choice(wl).plan, timeline=False).time_us
        return fused, sum(k.time_us for k in block_kernels(wl, self.target.soc))

    def fits(self, wl: DwSepWorkload) -> str | None:
        """None when the tile policy can plan the block under this gate's tile options; else why
        not, with the UB figures (the check every compile makes, with or without the fallback)."""
        return fit_refusal(wl, self.target, self.override)

    def __call__(self, wl: DwSepWorkload) -> str | None:
        """None to fuse; else why the block runs unfused (one line with the numbers)."""
        why = self.fits(wl)
        if why or self.target.kind not in GATED_KINDS:
            return why
        ch = self.choice(wl)
        if ch.source == "forced":
            return None
        fused, vendor = self.compare(wl)
        if fused <= vendor:
            log.info("%s: fused %.2f us <= vendor-like DW+PW %.2f us (modeled)", wl.describe(), fused, vendor)
            return None
        why = (f"{REASON_PREFIX}{ch.source} tile {ch.plan.tile.describe()}) modeled {fused:.2f} us > "
               f"vendor-like {'DW + SE + PW' if wl.se else 'DW + norm + PW' if wl.ln_eps is not None else 'DW + PW'} "
               f"kernels {vendor:.2f} us on {self.target.soc.name}")
        if self.chain_credit and wl not in self.unchained:
            chained = self.in_chain_us(wl)
            if chained is not None and chained <= vendor:
                log.info("%s: fused %.2f us alone, %.2f us in a chain <= vendor-like DW+PW %.2f us (modeled)",
                         wl.describe(), fused, chained, vendor)
                return None
        if wl in self.unchained:
            return why + ": runs unfused (it would win only inside a chain, and no chain takes it)"
        return why + ": runs unfused"

    def in_chain_us(self, wl: DwSepWorkload) -> float | None:
        """The block's cost inside a chain: its chain plan's body and one SyncAll. MODELED."""

        own = self.choice(wl).plan
        plan = own if own.two_phase else two_phase_plan(wl, self.target, in_chain=True)
        if plan is None:
            return None
        k = model_block(plan, timeline=False)
        return k.time_us - k.launch_us + sync_all_us(self.target.soc)


def unchained_losers(cm, gate: FusionGate) -> set:
    """Workloads of the fused blocks that are in no chain and lose to their pair on their own
    (the gate fused them for a chain's sake). MODELED."""
    chained = {n for c in cm.chains for n in c.blocks}
    out = set()
    for b in cm.fused_blocks:
        if b.name in chained or b.tile_source == "forced" or b.workload in gate.unchained:
            continue
        fused, vendor = gate.compare(b.workload)
        if fused > vendor:
            out.add(b.workload)
    return out
