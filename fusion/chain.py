"""Block chains: consecutive fused blocks run as one persistent kernel launch. MODELED.

On 910B a fused two-phase block costs 5-6 µs of launch next to 3-5 µs of work (the launch cost is
fitted: fusion/soc.py launch_base_us). A chain runs blocks b_i .. b_j in one MIX launch: every
core runs block i's phases, a hard SyncAll (all AIVs and AICs: block i's output is complete in GM),
then block i+1's, and so on. The chain pays one launch and one SyncAll per block boundary
instead of one launch per block. Its Ascend C is fusion/ascendc/emit_chain.py.

Pattern: consecutive fused steps of the compiled program, each reading the previous one's output
as its input x. Legality (a refusal names the first rule that fails):
  - the boundary tensor feeds only the next block and is not a model output (it lives in the
    chain's workspace, never returned);
  - both blocks are two-phase plans (their phases already end at a barrier, so no core of block
    i+1 can read a tile block i has not written once the SyncAll between them returns);
  - the SoC has the hard SyncAll (decoupled 910B: soc.coupled is False). 310P has the soft,
    GM-polled SyncAll only (2.2 µs modeled against a 2.9 µs launch) and its fused blocks fall back
    to the unfused kernels where they lose, so chains are not built there.
Rewrite: a Chain record (blocks in order); bench and compile report it, `--no-chain` turns it off.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger("megafuse.chain")

MIN_BLOCKS = 2


@dataclass(frozen=True)
class Chain:
    name: str                    # chain1, chain2, ... in program order (kernel megafuse_chain1)
    blocks: tuple[str, ...]      # fused block names, in program order
    boundaries: tuple[str, ...]  # the tensors between consecutive blocks (workspace, not outputs)


@dataclass(frozen=True)
class ChainCost:
    """One launch for the chain's blocks. MODELED."""
    chain: Chain
    launch_us: float          # the chain's launch (its widest block's)
    body_us: float            # every block's time without its launch
    sync_us: float            # one SyncAll per block boundary
    time_us: float
    unchained_us: float       # the same blocks launched one by one

    @property
    def saved_us(self) -> float:
        return self.unchained_us - self.time_us

    def to_json(self) -> dict:
        return {"name": self.chain.name, "blocks": list(self.chain.blocks), "launch_us": self.launch_us,
                "body_us": self.body_us, "sync_us": self.sync_us, "time_us": self.time_us,
                "unchained_us": self.unchained_us, "saved_us": self.saved_us, "figures": "modeled"}


def _why_not(prev, nxt, soc, uses: dict[str, int], outputs: set[str]) -> str | None:
    """The first chain rule the pair (prev, nxt) of fused steps + blocks breaks, or None."""
    st_a, blk_a = prev
    st_b, blk_b = nxt
    if not st_b.params or st_b.params[0] != st_a.out:
        return f"{blk_b.name} does not read {blk_a.name}'s output as its input"
    if st_a.out in outputs:
        return f"{blk_a.name}'s output is a model output"
    if uses.get(st_a.out, 0) != 1:
        return f"{blk_a.name}'s output has {uses.get(st_a.out, 0)} consumers"
    if soc.coupled:
        return f"{soc.name} has the soft (GM-polled) SyncAll only"
    for b in (blk_a, blk_b):
        if not b.plan.two_phase:
            return f"{b.name} is a {b.plan.variant} plan (chains hold two-phase plans)"
        if len(fused_weight_inputs_of(b)) != 0:
            return f"{b.name} has inputs besides x and its weights (residual or per-channel slopes)"
    return None


def fused_weight_inputs_of(block) -> tuple:
    """The block kernel's inputs other than x, w_dw, b_dw, w_pw, b_pw (a chain packs only those)."""
    from schedules.activations import needs_slope

    wl = block.workload
    return tuple(n for n, on in (("res", wl.residual), ("s_dw", needs_slope(wl.act1)),
                                 ("s_pw", needs_slope(wl.act2))) if on)


def find_chains(cm) -> tuple[list[Chain], list[str]]:
    """Maximal runs of chainable consecutive fused blocks (at least MIN_BLOCKS each), and why
    each pair of consecutive fused blocks that is not chained is not (one line each)."""
    blocks = {b.name: b for b in cm.fused_blocks}
    uses: dict[str, int] = {}
    for st in cm.program.steps:
        for p in st.params:
            if isinstance(p, str):
                uses[p] = uses.get(p, 0) + 1
    outputs = set(cm.program.outputs)
    soc = cm.target.soc
    runs: list[list] = []
    breaks: list[str] = []
    prev = None
    for st in cm.program.steps:
        cur = (st, blocks[st.name]) if st.kind == "fused" and st.name in blocks else None
        if cur is None:
            prev = None
            continue
        why = _why_not(prev, cur, soc, uses, outputs) if prev is not None else "start"
        if why is None:
            runs[-1].append(cur)
        else:
            if prev is not None:
                breaks.append(f"{prev[1].name} and {cur[1].name} not chained: {why}")
                log.info("chain: %s", breaks[-1])
            runs.append([cur])
        prev = cur
    runs = [run for run in runs if len(run) >= MIN_BLOCKS]
    return ([Chain(f"chain{k + 1}", tuple(b.name for _, b in run), tuple(st.out for st, _ in run[:-1]))
             for k, run in enumerate(runs)], breaks)


def chain_cost(chain: Chain, costs: dict, soc) -> ChainCost:
    """costs: block name -> its KernelCost (fusion/costmodel.model_fused)."""
    from fusion.costmodel.twophase import sync_all_us

    ks = [costs[n] for n in chain.blocks]
    launch = max(k.launch_us for k in ks)
    body = sum(k.time_us - k.launch_us for k in ks)
    sync = (len(ks) - 1) * sync_all_us(soc)
    return ChainCost(chain, launch, body, sync, launch + body + sync, sum(k.time_us for k in ks))
