"""What L2 serves in one kernel (MODELING ASSUMPTIONS, see _l2_policy)."""

from __future__ import annotations

from dataclasses import dataclass

from fusion.core.soc import SocSpec
from fusion.core.ir import C0
from schedules.isa import itemsize


@dataclass(frozen=True)
class _L2:
    """What L2 serves in one kernel (see _l2_policy)."""

    fits: bool                      # the kernel's working set fits in L2
    working_set: int                # bytes of every tensor the kernel touches
    unique: dict[str, int]          # kind -> bytes read from HBM (first touches) when it fits
    hit_in: dict[str, float]        # kind -> fraction of its read DMA bytes served by L2 (timing)
    hit_out: dict[str, float]       # kind -> fraction of its write DMA bytes absorbed by L2 (timing)
    absorbed: tuple[str, ...] = ()  # kinds written and consumed inside the kernel (never reach HBM)
    rereads: tuple[str, ...] = ()   # kinds whose re-reads L2 serves (their HBM bytes: `unique`)

    def hbm_read(self, kind: str, dma: int) -> int:
        """Bytes of `dma` read DMA bytes of `kind` that come from HBM."""
        if kind in self.absorbed:
            return 0
        return min(dma, self.unique.get(kind, dma)) if kind in self.rereads else dma


# traffic kinds a kernel writes to GM; L2 is write-back, so a write absorbed by L2 moves at L2
# bandwidth (the vendor-like baseline uses the same rule, fusion/cost/vendor_baseline.py)
WRITTEN_KINDS = ("output", "intermediate", "handoff")


def write_hit(soc: SocSpec, nbytes: float) -> float:
    """Fraction of a kernel's GM writes L2 absorbs (timing): all of them when what the kernel
    writes fits in L2 -- measured: the devkit's Add example streams 268 MB in and 134 MB out in
    184.5 µs, more than HBM could move both ways (benchmarks/fidelity/points.json)."""
    return 1.0 if nbytes <= soc.l2_bytes else 0.0


def produced_in_l2(soc: SocSpec, in_bytes: float, residual: bool) -> bool:
    """A kernel's input was written by the kernel just before it (every layer of a network but
    the host's input, which a transdata kernel converts first): still in L2 when it -- and a
    residual, written one kernel earlier -- fits in half of it. The rule both the vendor-like
    baseline's kernels (fusion/cost/vendor_baseline.py) and the fused kernels (block_inputs_in_l2) get."""
    return in_bytes * (2 if residual else 1) <= soc.l2_bytes / 2


def input_tensor_bytes(wl) -> int:
    """Bytes of a fused block's whole input tensor (NC1HWC0), as its producer wrote it."""
    return wl.batch * wl.c1 * C0 * wl.height * wl.width * itemsize(wl.dtype)


def block_inputs_in_l2(wl, soc: SocSpec) -> tuple[str, ...]:
    """The traffic kinds of a fused block that produced_in_l2 puts in L2 when its kernel starts."""

    if not produced_in_l2(soc, input_tensor_bytes(wl), wl.residual):
        return ()
    return ("input",) + (("residual",) if wl.residual else ())


def _l2_policy(soc: SocSpec, working_set: int, unique: dict[str, int],
               dma_reads: dict[str, int] | None = None, absorbed: tuple[str, ...] = (),
               written: dict[str, int] | None = None) -> _L2:
    """L2 model of one kernel (MODELING ASSUMPTIONS, not measured):
    - every GM access goes through L2; the first read of each byte of a tensor comes from HBM
      (`unique`: input windows' union, each weight tensor once, the residual once); any re-read of
      it inside the kernel (another core's copy of the weights, a halo row, a streamed weight block
      of the next tile) hits L2 when the kernel's working set (all tensors it touches) fits in
      soc.l2_bytes (fully associative LRU: a re-read's reuse distance is below the working set);
    - L2 is write-back: the output is written to HBM once, and every write is timed at L2
      bandwidth (write_hit); an intermediate written and read back
      inside the kernel (the 910B AIV->AIC hand-off, the two-phase workspace: `absorbed`) is
      consumed while resident and never reaches HBM (its eventual eviction of dead dirty lines is
      not charged);
    - a working set larger than L2 loses the hits whose reuse distance exceeds L2, tensor by
      tensor, by the rules the vendor-like kernels get (fusion/cost/baseline.py,
      schedules/baseline_program.py): re-reads of the input (halo rows of neighbouring units, one
      round of units apart) hit, as the vendor DW kernel's do; the weights' re-reads (every core's
      copy, the PW weights per M tile) hit where the weights fit in half of L2 (the vendor GEMM's
      L2 passes hold all of B in half of it); an intermediate is consumed from L2 where it fits in
      half of it (produced_in_l2: the vendor-like pair's PW kernel reading its DW kernel's output,
      whose LRU reuse distance equals the fused hand-off's, written in one phase and read in the
      next), else it is written to HBM and read back from it once, its re-reads (the GEMM's A
      block once per N tile, read by the cores of one round) hitting as the vendor GEMM's A does
      within a pass; a write is absorbed where its tensor fits (write_hit). No L2 (0 bytes): no
      hits at all.
    `dma_reads` (kind -> read DMA bytes) sets the hit fraction used for timing: a kind's DMAs all
    get the same fraction 1 - unique / DMA bytes (the kernel's average). `written` (kind -> bytes
    the kernel writes of it) is what the write rule sees when the working set does not fit."""
    fits = working_set <= soc.l2_bytes
    reads = dict(dma_reads or {})
    unique = dict(unique)
    written = written or {}
    if fits:
        rereads = tuple(reads)
        kept = tuple(absorbed)
    else:
        half = soc.l2_bytes / 2
        rereads = tuple(k for k in reads if soc.l2_bytes > 0 and (k != "weights" or unique.get(k, reads[k]) <= half))
        kept = tuple(k for k in absorbed if produced_in_l2(soc, written.get(k, working_set), False))
        for k in absorbed:   # through HBM once: its first read misses, its re-reads hit
            if k not in kept and soc.l2_bytes > 0 and k in reads:
                unique[k] = written.get(k, reads[k])
    hit_in: dict[str, float] = {}
    hit_out: dict[str, float] = {}
    for k in rereads:
        d, u = reads[k], unique.get(k, reads[k])
        if d > 0 and u < d:
            hit_in[k] = 1.0 - u / d
    for k in WRITTEN_KINDS:
        hit_out[k] = write_hit(soc, working_set if fits else written.get(k, working_set))
    for k in kept:
        hit_in[k] = hit_out[k] = 1.0
    return _L2(fits, working_set, unique, hit_in, hit_out, kept, rereads)
