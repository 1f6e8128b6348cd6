"""The ceiling of fusing a DW-separable block's vendor-like kernels (issue 30, item 4). MODELED bound.

A fused kernel that does its vendor-like pair's own work -- the DW kernel's and the PW kernel's
steps, as their lowered programs (schedules/baseline_program.py) issue them -- can at best overlap
all of it perfectly and keep the DW result on chip. Its body is then still at least, for every
pipe, the pair's busy time on that pipe: the busiest core's, as the step simulator times each
kernel (fusion/cost/baseline.time_program), summed over the two kernels, with the intermediate's GM
store (the DW kernel's output copies) and GM load (the PW kernel's A copies) left out. The largest of
those sums is the ceiling's body; the pipe it comes from binds.

It is a bound on one family of designs, not on every design: a fused kernel may do other work (the
DW taps on the vector unit instead of the vendor's cube form on 310P, the PW weights resident in
L1), and it still pays what the bound leaves out (filling its pipes, a barrier between its phases).
Its use: the best speedup over the pair that keeping the intermediate on chip and overlapping the
two kernels can buy, per block and -- every DW + PW pair of the network at its ceiling -- for the
whole network in one launch, where the one-launch vendor-like figure is the reference.

The same bound for the whole network as one fused kernel (whole_network_ceiling): every kernel's work
per pipe summed over the network, every tensor between two kernels on chip (each kernel's input and
residual loads but the first's, its output stores but the last's, left out), the whole perfectly
overlapped, no barrier -- what any fusion of the vendor's per-op work could reach, however much it fuses
(pairs, expansion + DW + PW triples, the stem and TransData in the chain) and whatever on-chip capacity it
would need. A target above it needs less work per pipe than the vendor's kernels do, not more fusion.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from fusion.core.soc import SocSpec
from fusion.cost.baseline import time_program
from fusion.cost.vendor_baseline import VendorNetwork, launch_us, layer_program, one_launch_cores
from fusion.cost.vendor_layers import Layer
from schedules.baseline_program import BaselineProgram, CoreSeq
from schedules.steps import Copy

CEILING_PIPES = ("MTE2", "MTE1", "cube", "vector", "MTE3")


def without_copies(prog: BaselineProgram, *kinds: str) -> BaselineProgram:
    """The program with every GM copy of these kinds ("output": the DW result's store; "input": the
    PW's A load; "residual") left out."""
    def keep(step) -> bool:
        return not (isinstance(step, Copy) and step.kind in kinds)

    seqs = tuple(CoreSeq(s.cores, tuple((tuple(tuple(st for st in it if keep(st)) for it in unit), times)
                                        for unit, times in s.runs)) for s in prog.seqs)
    return replace(prog, seqs=seqs)


@lru_cache(maxsize=1024)
def _busy(soc: SocSpec, L: Layer, dtype: str, split: tuple[int, int], drop: tuple[str, ...]) -> dict[str, float]:
    """The busiest core's busy µs per pipe of the layer's vendor-like program, the copies of the
    kinds in `drop` left out."""
    prog = layer_program(soc, L, dtype, split)   # (the split of a GEMM; a DW kernel has none)
    k = time_program(soc, without_copies(prog, *drop))
    return {"MTE2": k.mte2_us, "MTE1": k.mte1_us, "cube": k.cube_us, "vector": k.vector_us, "MTE3": k.mte3_us}


@dataclass(frozen=True)
class PairCeiling:
    dw: str                       # the vendor-like kernels' names
    pw: str
    pair_body_us: float           # the two kernels' bodies (no SyncAll)
    pipes_us: dict                # per pipe: the sum over the two kernels, the intermediate left out
    figures: str = "modeled bound"

    @property
    def body_us(self) -> float:
        return max(self.pipes_us.values())

    @property
    def binds(self) -> str:
        return max(self.pipes_us, key=self.pipes_us.get)

    def as_dict(self) -> dict:
        return {"dw": self.dw, "pw": self.pw, "pair_body_us": self.pair_body_us, "ceiling_body_us": self.body_us,
                "binding_pipe": self.binds, "pipes_us": dict(self.pipes_us), "figures": self.figures}


def is_pair(a: Layer, b: Layer) -> bool:
    """A depthwise kernel and the 1x1 convolution that reads its output."""
    return (a.kind == "dwconv" and b.kind == "conv" and b.kh == b.kw == 1 and b.cin == a.cout
            and (b.h, b.w) == (a.out_h, a.out_w))


def pair_ceiling(soc: SocSpec, vendor: VendorNetwork, i: int) -> PairCeiling:
    """The ceiling of the pair at kernels i (DW) and i + 1 (PW) of the vendor-like network."""
    (dw, pw), (Ld, Lp) = vendor.kernels[i:i + 2], vendor.layers[i:i + 2]
    a = _busy(soc, Ld, vendor.dtype, dw.split, ("output",))
    b = _busy(soc, Lp, vendor.dtype, pw.split, ("input",))
    return PairCeiling(dw.name, pw.name, dw.body_us + pw.body_us, {p: a[p] + b[p] for p in CEILING_PIPES})


def pairs(vendor: VendorNetwork) -> list[int]:
    """Indices of the network's DW kernels whose next kernel is their PW (is_pair)."""
    L = vendor.layers
    return [i for i in range(len(L) - 1) if is_pair(L[i], L[i + 1])]


def network_ceiling(soc: SocSpec, vendor: VendorNetwork, sync_us: float) -> dict:
    """The vendor-like network in one launch with every DW + PW pair fused at its ceiling (its two
    bodies and the SyncAll between them replaced by the ceiling body), against the same network as
    it is (VendorNetwork.one_launch_us): the most DW + PW fusion alone can gain, on this model."""
    if not vendor.layers or not vendor.kernels:
        return {}
    ceilings = [pair_ceiling(soc, vendor, i) for i in pairs(vendor)]
    ref = vendor.one_launch_us(soc, sync_us)
    best = ref - sum(c.pair_body_us + sync_us - c.body_us for c in ceilings)
    binding: dict[str, int] = {}
    for c in ceilings:
        binding[c.binds] = binding.get(c.binds, 0) + 1
    return {"vendor_one_launch_us": ref, "ceiling_one_launch_us": best, "ceiling_speedup": ref / best,
            "pairs": len(ceilings), "pairs_bodies_us": sum(c.pair_body_us for c in ceilings),
            "pairs_ceiling_us": sum(c.body_us for c in ceilings), "binding_pipes": binding,
            "per_pair": [c.as_dict() for c in ceilings], "whole_network": whole_network_ceiling(soc, vendor, sync_us),
            "figures": "modeled bound"}


def whole_network_ceiling(soc: SocSpec, vendor: VendorNetwork, sync_us: float) -> dict:
    """The vendor-like network as one kernel with every intermediate tensor on chip (module doc): the
    one launch's launch (as VendorNetwork.one_launch_us charges it) + the largest per-pipe sum of the
    kernels' work, each kernel's input and residual loads (but the first's) and output stores (but the
    last's) left out; against the network in one launch as it is."""
    n = len(vendor.kernels)
    if not n:
        return {}
    pipes = dict.fromkeys(CEILING_PIPES, 0.0)
    for i, (k, L) in enumerate(zip(vendor.kernels, vendor.layers)):
        drop = (() if i == 0 else ("input", "residual")) + (() if i == n - 1 else ("output",))
        for p, us in _busy(soc, L, vendor.dtype, k.split, drop).items():
            pipes[p] += us
    ref = vendor.one_launch_us(soc, sync_us)
    launch = launch_us(soc, one_launch_cores(soc, vendor.kernels))
    binds = max(pipes, key=pipes.get)
    best = launch + pipes[binds]
    return {"vendor_one_launch_us": ref, "launch_us": launch, "ceiling_one_launch_us": best,
            "ceiling_speedup": ref / best, "binding_pipe": binds, "pipes_us": pipes, "kernels": n,
            "figures": "modeled bound"}


__all__ = ["CEILING_PIPES", "PairCeiling", "is_pair", "network_ceiling", "pair_ceiling", "pairs", "whole_network_ceiling",
           "without_copies"]
