"""Block chains: consecutive fused blocks run as one persistent kernel launch. MODELED.

On 910B a fused two-phase block costs 5-6 µs of launch next to 3-5 µs of work, on 310P 2.9 µs next
to 4-9 (the launch cost is fitted: fusion/core/soc.py launch_base_us). A chain runs its members in one
launch: every core runs member i's phases, a SyncAll (member i's output is complete in GM: 910B
the hard one over all AIVs and AICs of a MIX launch, 310P the soft one over the AI cores, 0.41 µs
derived in fusion/core/soc.py), then member i+1's, and so on. The chain pays one launch and one
SyncAll per boundary instead of one launch per member. Members are fused blocks and GEMM stages
(fusion/driver/chain_stage.py: a 1x1 conv + activation between blocks, MobileNetV2's expansion convs, run
as an identity-DW two-phase kernel).
Its Ascend C is fusion/codegen/ascendc/emit_chain.py.

Pattern: consecutive members in the compiled program, each reading the previous one's output as
its input x. Legality (a refusal names the first rule that fails):
  - every reader of a boundary tensor is a later member of the chain (the next member's x, or a
    block's residual) and the tensor is not a model output: it lives in the chain's workspace,
    never returned; a residual is the chain's input or a boundary tensor;
  - every member is a two-phase plan (its phases already end at a barrier, so no core of member
    i+1 can read a tile member i has not written once the SyncAll between them returns) without
    per-channel slopes;
  - a chain holds at least one fused block and two members.
Rewrite: a Chain record (members in order); bench and compile report it, `--no-chain` turns it off.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from fusion.cost import model_block
from schedules.l2 import block_inputs_in_l2, input_tensor_bytes, produced_in_l2
from fusion.cost.twophase import sync_all_us
from fusion.driver.tile_policy import two_phase_plan
from schedules.activations import needs_slope
from fusion.cost import model_fused
from fusion.driver.chain_stage import GemmStage
from fusion.driver.chain_dw_local import local_dw_members
from fusion.driver.chain_local import local_members, local_stages
from fusion.driver.gemm_tiles import fastest_gemm_tile, member_tiles
from fusion.driver.chain_wave import candidates as wave_candidates, resident_retiles, with_ahead
from fusion.driver.chain_prefetch import STEPS, describe_reads, read_ahead
from fusion.cost.wave import wave_cost
from schedules.wave import member_plan
from schedules.program_twophase import gemm_only_ok
from schedules.plan import make_plan

log = logging.getLogger("megafuse.chain")

MIN_MEMBERS = 2


@dataclass(frozen=True)
class Chain:
    name: str                    # chain1, chain2, ... in program order (kernel megafuse_chain1)
    blocks: tuple[str, ...]      # members (fused blocks and GEMM stages), in program order
    boundaries: tuple[str, ...]  # the tensors between consecutive members (workspace, not outputs)
    stages: tuple[str, ...] = ()             # the members that are GEMM stages (fusion/driver/chain_stage.py)
    residual_from: tuple[int | None, ...] = ()   # per member: its residual's producer (-1: the chain's x)


@dataclass(frozen=True)
class ChainCost:
    """One launch for the chain's members. MODELED."""
    chain: Chain
    launch_us: float          # the chain's launch (its widest member's)
    body_us: float            # every member's time without its launch
    sync_us: float            # one SyncAll per boundary but where a GEMM stage follows locally
    time_us: float
    unchained_us: float       # the blocks launched one by one, the GEMM stages as the vendor's kernels
    syncs: int = 0            # the SyncAlls (boundaries less the local ones, chain_local.py)
    wave: object = None       # fusion/cost/wave.WaveCost where the members run in image chunks

    @property
    def saved_us(self) -> float:
        return self.unchained_us - self.time_us

    def to_json(self) -> dict:
        return {"name": self.chain.name, "blocks": list(self.chain.blocks), "stages": list(self.chain.stages),
                "launch_us": self.launch_us, "body_us": self.body_us, "sync_us": self.sync_us, "syncs": self.syncs,
                "time_us": self.time_us, "unchained_us": self.unchained_us, "saved_us": self.saved_us,
                "chunks": self.wave.chunks if self.wave else 1, "steps": len(self.wave.steps) if self.wave else 0,
                "joined": self.wave.joined if self.wave else 0, "aic_barriers": self.wave.aic_barriers if self.wave else 0,
                "ahead": self.wave.ahead if self.wave else 0, "figures": "modeled"}


@dataclass(frozen=True)
class _Member:
    name: str
    steps: tuple[str, ...]    # program steps it covers
    x: str
    out: str
    res: str | None
    plan: object
    slopes: bool
    stage: bool


def chain_member_plan(block, target):
    """The plan a fused block would run in a chain: its own when two-phase; else (a one-phase plan
    the default search or the tuner picked standalone) the two-phase plan with the shortest body,
    where joining costs less than its own launch saves -- that body and one SyncAll against its
    standalone time; forced tiles stay as forced. MODELED."""
    p = block.plan
    if p.two_phase or block.tile_source == "forced":
        return p

    alt = two_phase_plan(block.workload, target, in_chain=True)
    if alt is None:
        return p
    # both under the network's L2 rule (its input is in L2 when the kernel before just wrote it)
    k = model_block(alt, block.name, timeline=False)
    if k.time_us - k.launch_us + sync_all_us(target.soc) >= model_block(p, block.name, timeline=False).time_us:
        return p
    log.info("chain: %s can join a chain with a two-phase plan (%s) instead of its %s plan", block.name,
             alt.tile.describe(), p.variant)
    return alt


def _members(cm, stages: dict) -> list[_Member | None]:
    """The program as members and None for every other step (which ends a chain)."""

    blocks = {b.name: b for b in cm.fused_blocks}
    out: list[_Member | None] = []
    skip: set[str] = set()
    for st in cm.program.steps:
        if st.name in skip:
            continue
        if st.kind == "fused" and st.name in blocks:
            b = blocks[st.name]
            wl = b.workload
            out.append(_Member(b.name, (st.name,), st.params[0], st.out, st.params[-1] if wl.residual else None,
                               chain_member_plan(b, cm.target), needs_slope(wl.act1) or needs_slope(wl.act2),
                               False))
        elif st.kind == "op" and st.name in stages:
            g = stages[st.name]
            skip.update(g.steps[1:])
            out.append(_Member(g.name, g.steps, g.x, g.out, None, g.plan, False, True))
        else:
            out.append(None)
    return out


def _why_not(a: _Member, b: _Member, outputs: set[str]) -> str | None:
    """The first chain rule the consecutive pair (a, b) breaks, or None."""
    if b.x != a.out:
        return f"{b.name} does not read {a.name}'s output as its input"
    if a.out in outputs:
        return f"{a.name}'s output is a model output"
    for m in (a, b):
        if not m.plan.two_phase:
            return f"{m.name} is a {m.plan.variant} plan (chains hold two-phase plans)"
        if m.slopes:
            return f"{m.name} has per-channel activation slopes"
        if not m.stage and m.plan.workload.se:   # the chain kernel passes no SE operands (emit_chain.py)
            return f"{m.name} carries squeeze-and-excitation (the chain kernel has no SE operands)"
    return None


def _split(run: list[_Member], readers: dict[str, set[str]]) -> tuple[list[list[_Member]], list[str]]:
    """Cuts a connected run where a boundary tensor is read outside it or a residual comes from
    outside it; (pieces, why each cut was made)."""
    steps = {s for m in run for s in m.steps}
    avail = {run[0].x}
    for k, m in enumerate(run):
        if m.res is not None and m.res not in avail:
            if k == 0:   # not even a chain starting here holds it: m runs on its own
                if len(run) == 1:
                    return [run], []
                why = f"{m.name} and {run[1].name} not chained: {m.name}'s residual is read from outside the chain"
                b, wb = _split(run[1:], readers)
                return [run[:1]] + b, [why] + wb
            why = f"{run[k - 1].name} and {m.name} not chained: {m.name}'s residual is read from outside the chain"
            a, wa = _split(run[:k], readers)
            b, wb = _split(run[k:], readers)
            return a + b, [why] + wa + wb
        avail.add(m.out)
        if k < len(run) - 1 and not readers.get(m.out, set()) <= steps:
            n = len(readers.get(m.out, ()))
            why = f"{m.name} and {run[k + 1].name} not chained: {m.name}'s output has {n} consumers"
            outside = readers[m.out] - steps
            if outside:
                why += " (one outside the chain)" if len(outside) == 1 else f" ({len(outside)} outside the chain)"
            a, wa = _split(run[:k + 1], readers)
            b, wb = _split(run[k + 1:], readers)
            return a + b, [why] + wa + wb
    return [run], []


def find_chains(cm, stages: dict | None = None) -> tuple[list[Chain], list[str]]:
    """Maximal runs of chainable consecutive members (at least MIN_MEMBERS, one a fused block), and
    why consecutive members are not chained (one line each). stages: GEMM stages by first step
    (fusion/chain_stage.find_stages); None: fused blocks only."""
    members = _members(cm, stages or {})
    readers: dict[str, set[str]] = {}
    for st in cm.program.steps:
        for p in st.params:
            if isinstance(p, str):
                readers.setdefault(p, set()).add(st.name)
    outputs = set(cm.program.outputs)
    runs: list[list[_Member]] = []
    breaks: list[str] = []
    prev = None
    for cur in members:
        if cur is None:
            prev = None
            continue
        why = _why_not(prev, cur, outputs) if prev is not None else "start"
        if why is None:
            runs[-1].append(cur)
        else:
            if prev is not None and not (prev.stage and cur.stage):
                breaks.append(f"{prev.name} and {cur.name} not chained: {why}")
            runs.append([cur])
        prev = cur
    pieces = []
    for run in runs:
        got, why = _split(run, readers)
        pieces += got
        breaks += why
    for line in breaks:
        log.info("chain: %s", line)
    chains = []
    for run in pieces:
        if len(run) < MIN_MEMBERS or all(m.stage for m in run):
            continue
        at = {m.out: k for k, m in enumerate(run)}
        at[run[0].x] = -1
        chains.append(Chain(f"chain{len(chains) + 1}", tuple(m.name for m in run), tuple(m.out for m in run[:-1]),
                            tuple(m.name for m in run if m.stage),
                            tuple(None if m.res is None else at[m.res] for m in run)))
    return chains, breaks


def chain_cost(chain: Chain, costs: dict, soc, unchained_us: dict | None = None,
               local: frozenset[str] = frozenset(), plans: dict | None = None) -> ChainCost:
    """costs: member name -> its KernelCost in the chain (fusion/costmodel.model_fused);
    unchained_us: member name -> its time launched on its own (a block's standalone plan, a GEMM
    stage's vendor-like kernels); default the costs' own times; local: the members that follow
    their producer on the same cores, with no SyncAll before them (chain_local.local_members);
    plans: the members' plans -- where they run in image chunks (schedules/wave.py) the body and
    the SyncAlls are the wave's steps (fusion/cost/wave.py)."""

    ks = [costs[n] for n in chain.blocks]
    launch = max(k.launch_us for k in ks)
    wave = None
    if plans is not None and plans[chain.blocks[0]].chunks > 1:
        wave = wave_cost([plans[n] for n in chain.blocks],
                         [in_l2(chain, k, member_plan(plans[n])) for k, n in enumerate(chain.blocks)])
        body, syncs = wave.body_us, wave.syncs
    else:
        body = sum(k.time_us - k.launch_us for k in ks)
        syncs = len(ks) - 1 - len(local & set(chain.blocks[1:]))
    sync = syncs * sync_all_us(soc)
    alone = unchained_us or {}
    unchained = sum(alone[n] if n in alone else costs[n].time_us for n in chain.blocks)
    return ChainCost(chain, launch, body, sync, launch + body + sync, unchained, syncs, wave)


def member_costs(chain: Chain, plans: dict) -> dict:
    """Each member's KernelCost as it runs in the chain: after the first, its x (and a residual)
    was written or read earlier in the same launch, so its first touch hits L2 where it fits in
    half of it (in_l2) -- the rule the vendor-like baseline applies to every kernel's input. MODELED."""

    return {n: member_cost(chain, k, plans[n]) for k, n in enumerate(chain.blocks)}


def in_l2(chain: Chain, k: int, plan) -> tuple[str, ...]:
    """What of member k's tensors an earlier kernel left in L2, by the network rule the vendor-like
    kernels get (schedules/l2.produced_in_l2: a tensor the kernel before wrote is still there where it
    -- and a residual -- fits in half of L2): the chain's input, after the first member its x and a
    residual (the chain's x or a boundary tensor, written in the same launch). `plan`'s workload is
    the tensor the modeled kernel reads: a wave task's is its chunk's (chain_cost). Before this rule
    every member after the first hit L2 whatever its size -- true of the 910B L2 (192 MB) for these
    networks, not of 310P3's 16 MB at batch > 1 (MobileNetV2 b8: b2's 19 MB input)."""
    if k == 0:
        return block_inputs_in_l2(plan.workload, plan.soc)
    res = chain.residual_from[k] if chain.residual_from else None
    if not produced_in_l2(plan.soc, input_tensor_bytes(plan.workload), res is not None):
        return ()
    return ("input",) + (("residual",) if res is not None else ())


def member_cost(chain: Chain, k: int, plan):
    """Member k's KernelCost in the chain with this plan (member_costs)."""
    return model_fused(plan, chain.blocks[k], timeline=False, in_l2=in_l2(chain, k, plan))


def deferred_clip_us(chain: Chain, k: int, plan, with_clip=None) -> float:
    """The part of member k's body in the chain that is its producer's work: the min(., 6) of a GEMM
    stage's relu6 that defer_clips moved onto this block's x tiles (plan.x_max), timed as the body
    with the clip less the body without it (0 where nothing is deferred). MODELED. with_clip: the
    member's cost with this plan (member_cost), where the caller has it."""
    if plan.x_max is None:
        return 0.0
    with_clip = member_cost(chain, k, plan) if with_clip is None else with_clip
    without = member_cost(chain, k, replace(plan, x_max=None))
    return (with_clip.time_us - with_clip.launch_us) - (without.time_us - without.launch_us)


def chain_plans(chains: list[Chain], members: dict, target) -> dict:
    """The plan each chain member runs inside its chain, by name. Inside a chain the launch is paid
    once (the widest member's), so a member's standalone plan -- which may use fewer cores to
    launch faster -- is replaced by the plan with the shortest body (fusion.driver.tile_policy
    two_phase_plan(in_chain=True)) where that makes the whole chain faster. Forced tiles are kept.
    members: name -> a fused block or GEMM stage (.plan, .workload, .tile_source)."""

    soc = target.soc
    out: dict = {}
    for c in chains:
        own = {n: members[n].plan if isinstance(members[n], GemmStage) else chain_member_plan(members[n], target)
               for n in c.blocks}
        alt = dict(own)
        for n in c.blocks:
            m = members[n]
            # GEMM stages (their own in-chain plan already, maybe gemm_only) and forced tiles stay
            if not isinstance(m, GemmStage) and m.tile_source != "forced":
                alt[n] = two_phase_plan(m.workload, target, in_chain=True) or own[n]
        t_own = chain_cost(c, member_costs(c, own), soc).time_us
        t_alt = chain_cost(c, member_costs(c, alt), soc).time_us
        pick = alt if t_alt < t_own else own
        log.info("chain: %s members' plans %s: %.2f us modeled (standalone plans %.2f us)", c.name,
                 "re-chosen for the shortest bodies" if pick is alt else "kept", min(t_alt, t_own), t_own)
        best = min(t_alt, t_own)
        at = {n: k for k, n in enumerate(c.blocks)}
        bodies: dict = {}

        def body(n, p, c=c, at=at, bodies=bodies):
            key = (n, p.tile, p.gemm_only, p.x_max, p.local_in,   # local_in: the stage's tiles dealt by M tile
                   p.local_dw, p.m_band, p.tile_m, p.prefetch, p.w_pw_warm)
            if key not in bodies:
                k = member_cost(c, at[n], p)
                bodies[key] = k.time_us - k.launch_us
            return bodies[key]

        for why, f in (("relu6 clips deferred to the next block's input", defer_clips),
                       ("GEMM stages read their boundary input directly", direct_stage_reads)):
            cand = f(c, pick)
            t = chain_cost(c, member_costs(c, cand), soc).time_us
            if t < best:
                log.info("chain: %s %s: %.2f us modeled", c.name, why, t)
                pick, best = cand, t

        forced = {n for n in c.blocks if members[n].tile_source == "forced"}

        def tune(n, p, body=body, forced=forced):
            return p if n in forced else fastest_gemm_tile(p, lambda q: body(n, q))

        # each GEMM stage after its producer on the same cores, the other members on their fastest GEMM tiles
        cand = member_tiles(c, local_stages(c, pick, body, sync_all_us(soc), tune), tune)
        local = local_members(c, cand)
        t = chain_cost(c, member_costs(c, cand), soc, local=local).time_us
        if t < best:
            paired = local | {c.blocks[k - 1] for k, n in enumerate(c.blocks) if n in local}
            retiled = [n for n in c.blocks if n not in paired and cand[n].tile != pick[n].tile]
            log.info("chain: %s GEMM stages after their producer on the same cores (%s, no SyncAll before "
                     "them), members on their fastest GEMM tiles (%s): %.2f us modeled", c.name,
                     ", ".join(n for n in c.blocks if n in local) or "none", ", ".join(retiled) or "none", t)
            pick, best = cand, t
        # the members in image chunks, the DW of one beside the GEMM of another (chain_wave.py); the
        # candidates differ in `chunks` and local pairings, the members' own costs (their launch) in the latter
        costs: dict = {}
        for k, cand in wave_candidates(c, pick):
            local = local_members(c, cand)
            costs[local] = costs.get(local) or member_costs(c, cand)
            t = chain_cost(c, costs[local], soc, plans=cand).time_us
            joined = sum(p.joined for p in cand.values())
            log.info("chain: %s in %d image chunks%s: %.2f us modeled (as it was %.2f us)", c.name, k,
                     f" ({joined} GEMM stages in their producer's GEMM task)" if joined else "", t, best)
            if t < best:
                pick, best = cand, t
        if pick[c.blocks[0]].chunks > 1:   # the next member's weights loaded by the AICs' task before (chain_wave.py)
            def wave_body(ps, c=c):
                return wave_cost([ps[n] for n in c.blocks],
                                 [in_l2(c, k, member_plan(ps[n])) for k, n in enumerate(c.blocks)]).body_us

            cand = resident_retiles(c, with_ahead(c, pick), wave_body)
            if cand != pick:
                t = chain_cost(c, member_costs(c, cand), soc, plans=cand).time_us   # a retiled member's own cost too
                log.info("chain: %s with %d members' PW weights loaded into L1 by the AICs' task before (%s "
                         "retiled): %.2f us modeled (as it was %.2f us)", c.name, sum(p.w_pw_ahead for p in cand.values()),
                         ", ".join(n for n in c.blocks if cand[n].tile != pick[n].tile) or "none", t, best)
                if t < best:
                    pick, best = cand, t
        # 310P: a member's GEMM after its own DW on each core, a pipe barrier for its SyncAll (chain_dw_local.py)
        cand = local_dw_members(c, pick, body) if soc.coupled else pick
        if cand != pick:
            t = chain_cost(c, member_costs(c, cand), soc, local=local_members(c, cand)).time_us
            kept = [n for n in c.blocks if cand[n].local_dw]
            log.info("chain: %s GEMM phases after their own DW on each core (%s: a pipe barrier, no SyncAll): "
                     "%.2f us modeled (as it was %.2f us)", c.name, ", ".join(kept), t, best)
            if t < best:
                pick, best = cand, t
        # later members' PW weights read ahead into L2 by earlier members' DW phases (chain_prefetch.py)
        cand = pick
        for step in STEPS:   # each search goes on from the one before, in finer steps
            cand = read_ahead(c.blocks, cand, body, step, c.residual_from)
            if cand == pick:
                continue
            t = chain_cost(c, member_costs(c, cand), soc, local=local_members(c, cand)).time_us
            log.info("chain: %s with PW weights read ahead into L2 (%d KiB steps): %.2f us modeled (as it was "
                     "%.2f us)", c.name, step // 1024, t, best)
            if t < best:
                pick, best = cand, t
        for line in describe_reads(c.blocks, pick):
            log.info("chain: %s", line)
        out.update(pick)
    return out


def direct_stage_reads(chain: Chain, plans: dict) -> dict:
    """Plans where every GEMM stage after the chain's first member is gemm_only: its x is a
    boundary tensor, which the chain kernel follows with slack (emit_chain.BOUNDARY_SLACK), so
    the GEMM reads it even where the pixels do not fill whole fractals (14x14, 7x7): no identity
    copy and no barrier before the GEMM."""
    out = dict(plans)
    for k, n in enumerate(chain.blocks):
        if k and n in chain.stages and not out[n].gemm_only and gemm_only_ok(out[n]):
            out[n] = replace(out[n], gemm_only=True)
    return out


def defer_clips(chain: Chain, plans: dict) -> dict:
    """Plans where a GEMM stage's relu6 becomes a relu its Fixpipe applies (no AIV epilogue
    phase: the devkit lists no Fixpipe clip on Atlas A2) and the min(., 6) moves to the
    next member, a fused block reading the stage's output as its only reader (KernelPlan.x_max:
    one Mins over each x tile). The clip commutes with the cast (fp16 rounding is monotonic and 6
    is an fp16 value: min(fp16(relu(a)), 6) == fp16(min(relu(a), 6))); against the stage's AIV
    epilogue the values differ by that epilogue's extra rounding of the fp16 pre-activation. The
    boundary tensor holds the unclipped values, never seen outside the chain."""
    out = dict(plans)
    read_as_residual = {j for j in chain.residual_from if j is not None}
    for k in range(len(chain.blocks) - 1):
        n, nxt = chain.blocks[k], chain.blocks[k + 1]
        p, q = out[n], out[nxt]
        if (n not in chain.stages or nxt in chain.stages or k in read_as_residual
                or p.workload.act2 != "relu6" or q.x_max is not None):
            continue
        relu = make_plan(replace(p.workload, act2="relu"), p.tile, p.soc)
        if not relu.fits():
            continue
        out[n] = replace(relu, gemm_only=p.gemm_only)
        out[nxt] = replace(q, x_max=6.0)
    return out
