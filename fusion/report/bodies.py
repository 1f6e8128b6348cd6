"""The body-level comparison (issue 30): the fused network against the same vendor-like kernels in
one launch, on both SoCs. MODELED.

The headline (`fused_in_vendor_network_us`) pits the fused network against the vendor-like kernels
launched one by one, so much of its win is launches. Here both sides pay one launch and one SyncAll
per kernel boundary, so only the kernels' bodies differ:
- vendor-like, one launch: the launch of every core its kernels use (on 910B a MIX launch: the most
  AICs a cube kernel uses + the most AIVs a vector kernel uses) + every kernel's body + (kernels - 1)
  SyncAll (VendorNetwork.one_launch_us; on 910B what CANN's SuperKernel does in PyTorch graph mode, on 310P
  a hypothetical launch with the soft SyncAll, which the chip has);
- fused, one launch: the fused chains' member bodies, the unchained fused blocks' bodies and the
  bodies of the vendor-like kernels the fused network keeps (TransData, stem, pooling, FC...), one
  launch, one SyncAll per boundary -- what a whole-network chain would pay -- but where a GEMM stage
  follows its producer on the same cores (fusion/driver/chain_local.py).
Per block: the fused body (in its chain where it is in one, its internal SyncAlls included; less
the relu6 clip it applies to its x for the GEMM stage before it, that stage's work: report/bench.py)
against its vendor-like pair's bodies plus the SyncAll between the pair's kernels in one launch (both sides
then pay one boundary SyncAll after the block, as the whole-network figure counts).
The 310P SyncAll is derived (fusion/soc.with_soft_sync_all), not measured: the comparison is
repeated at SENSITIVITY_CYCLES with the plans held fixed, every SyncAll on both sides -- the
boundaries and the two-phase kernels' internal barriers -- recharged at that cost.
With it the ceiling of fusing the pairs (fusion/cost/pair_ceiling.py, a MODELED bound): per block the
pair's own work per pipe perfectly overlapped with the DW result on chip, and the whole network in one
launch with every DW + PW pair of the vendor-like network at that ceiling; and the ceiling of any fusion of
the vendor's work: the whole network as one kernel, every tensor between its kernels on chip."""

from __future__ import annotations

from fusion.cost.pair_ceiling import network_ceiling
from fusion.cost.primitives import cycles_to_us
from fusion.cost.vendor_baseline import launch_us, one_launch_cores
from schedules.lowering import build_program

SENSITIVITY_CYCLES = (1200, 2400)   # one GM round trip; the unsourced value used until 2026-11 (README)


def _barriers(plan) -> int:
    """SyncAll barriers inside a fused kernel (the two-phase kernels' phase boundaries)."""
    return build_program(plan).barriers if plan is not None and plan.two_phase else 0


def body_comparison(cm, vendor, rows: list[dict], chains: list, by_name: dict, costs: dict, stages: dict) -> dict:
    """rows: bench's per-block rows; chains: ChainCost list; by_name: chain member -> its in-chain
    KernelCost; costs: block name -> its standalone KernelCost; stages: the chains' GEMM stages."""
    soc = cm.target.soc
    kept = {id(k) for b in cm.fused_blocks for k in vendor.kernels_for(b.members)}
    kept |= {id(k) for g in stages.values() for k in vendor.kernels_for(g.members[:1])}
    others = [k for k in vendor.kernels if id(k) not in kept]
    chained = {n for c in chains for n in c.chain.blocks}
    plans = {b.name: b.plan for b in cm.fused_blocks}
    # fused side: chain members' bodies, unchained blocks' bodies, the other vendor-like kernels' bodies
    units = [(n, by_name[n].time_us - by_name[n].launch_us, cm.chain_plans.get(n, plans.get(n))) for n in
             (n for c in chains if not c.wave for n in c.chain.blocks)]
    # a chain in image chunks (schedules/wave.py) is its steps: their bodies and the SyncAlls between
    # (counted in `inner` below, as a two-phase body's own barrier is)
    waved = [c for c in chains if c.wave]
    units += [(c.chain.name, c.body_us + c.sync_us, None) for c in waved]
    units += [(n, c.time_us - c.launch_us, plans[n]) for n, c in costs.items() if n not in chained]
    launches = [c.launch_us for c in chains] + [costs[n].launch_us for n in costs if n not in chained]
    # the vendor-like kernels kept run in the same launch: their AICs and AIVs (one_launch_cores), as
    # the vendor-like side's one launch is charged; a fused kernel's own launch counts its AICs + AIVs
    launches.append(launch_us(soc, one_launch_cores(soc, others)) if others else 0.0)
    fused_bodies = sum(u[1] for u in units) + sum(k.body_us for k in others)
    n_fused = len(units) + len(others)
    # boundaries with no SyncAll: a GEMM stage after its producer on the same cores (chain_local.py)
    local = sum(len(c.chain.blocks) - 1 - c.syncs for c in chains if not c.wave)
    inner = sum(_barriers(u[2]) for u in units) + sum(c.syncs for c in waved)
    sync_now = cycles_to_us(soc, soc.sync_all_cycles)

    def at(cycles: float) -> dict:
        s = cycles_to_us(soc, cycles)
        fused = max(launches) + fused_bodies + inner * (s - sync_now) + (n_fused - 1 - local) * s
        vend = vendor.one_launch_us(soc, s)
        return {"sync_all_cycles": cycles, "sync_all_us": s, "fused_one_launch_us": fused,
                "vendor_one_launch_us": vend, "speedup": vend / fused}

    # each fused block's pair at its ceiling, by the pair's DW kernel
    ceiling = network_ceiling(soc, vendor, sync_now)
    by_dw = {c["dw"]: c for c in ceiling.get("per_pair", ())}
    blocks = []
    for r in rows:
        fk = by_name[r["name"]] if "chain" in r else costs[r["name"]]
        fb = r["in_chain_body_us"] if "chain" in r else costs[r["name"]].body_us
        ks = vendor.kernels_for(next(b.members for b in cm.fused_blocks if b.name == r["name"]))
        # like for like: in one launch the pair's kernels need a SyncAll between them, as the fused
        # body's phases need theirs (counted in fb); the boundary after the block is on both sides
        vsync = (len(ks) - 1) * sync_now
        vb = sum(k.body_us for k in ks) + vsync
        blocks.append({"name": r["name"], "fused_body_us": fb, "vendor_body_us": vb, "speedup": vb / fb,
                       "fused_inner_barriers": _barriers(cm.chain_plans.get(r["name"], plans.get(r["name"]))
                                                         if "chain" in r else plans.get(r["name"])),
                       "fused_phases": next((n for n in fk.notes if n.startswith("phases")), None),
                       "deferred_clip_us": r.get("in_chain_clip_us", 0.0),   # its GEMM stage's work, not in fb
                       "vendor_kernels": [{"name": k.name, "body_us": k.body_us} for k in ks],
                       "vendor_barriers_us": vsync,
                       "pair_ceiling": next((by_dw[k.name] for k in ks if k.name in by_dw), None)})
    now = at(soc.sync_all_cycles)
    out = {
        **now, "fused_bodies_us": fused_bodies, "vendor_bodies_us": sum(k.body_us for k in vendor.kernels),
        "fused_kernels": n_fused, "fused_inner_barriers": inner, "vendor_kernels": len(vendor.kernels),
        "blocks_fused_body_us": sum(b["fused_body_us"] for b in blocks),
        "blocks_vendor_body_us": sum(b["vendor_body_us"] for b in blocks),
        "blocks_slower_than_pair": [b["name"] for b in blocks if b["speedup"] < 1.0],
        "blocks": blocks, "figures": "modeled",
        "sync_note": ("910B: the hard SyncAll (unfitted constant)" if not soc.coupled else
                      "310P: the soft SyncAll derived from the DMA latency (fusion/soc.with_soft_sync_all); "
                      "sensitivity with the plans held fixed"),
    }
    if soc.coupled:
        out["sensitivity"] = [at(c) for c in SENSITIVITY_CYCLES]
    out["ceiling"] = ceiling
    return out


def print_bodies(b: dict) -> None:
    print(f"  bodies, both sides in one launch: fused {b['fused_one_launch_us']:.1f} us ({b['fused_kernels']} kernels' "
          f"bodies {b['fused_bodies_us']:.1f}) vs vendor-like {b['vendor_one_launch_us']:.1f} us "
          f"({b['vendor_kernels']} kernels' bodies {b['vendor_bodies_us']:.1f}), SyncAll {b['sync_all_cycles']:.0f} "
          f"cycles = {b['sync_all_us']:.2f} us -> {b['speedup']:.2f}x  [MODELED]")
    if b["blocks"]:   # none where every block fell back to the vendor-like kernels
        print(f"    fused blocks' bodies {b['blocks_fused_body_us']:.1f} us vs their vendor-like pairs' "
              f"{b['blocks_vendor_body_us']:.1f} us with the SyncAll between each pair's kernels "
              f"({b['blocks_vendor_body_us'] / b['blocks_fused_body_us']:.2f}x); "
              f"{len(b['blocks_slower_than_pair'])} of {len(b['blocks'])} blocks slower than their pair  [MODELED]")
    c = b.get("ceiling")
    if c:
        pipes = ", ".join(f"{p} {n}" for p, n in sorted(c["binding_pipes"].items(), key=lambda x: -x[1]))
        print(f"    ceiling of pair fusion: the vendor-like network with its {c['pairs']} DW + PW pairs each at its "
              f"own work per pipe, perfectly overlapped, the DW result on chip: {c['ceiling_one_launch_us']:.1f} us "
              f"-> at most {c['ceiling_speedup']:.2f}x (pairs {c['pairs_bodies_us']:.1f} -> {c['pairs_ceiling_us']:.1f} "
              f"us; binding pipe: {pipes})  [MODELED bound]")
        w = c.get("whole_network")
        if w:
            print(f"    ceiling of whole-network fusion: its {w['kernels']} kernels' work per pipe as one kernel, every "
                  f"tensor between them on chip, perfectly overlapped: {w['ceiling_one_launch_us']:.1f} us -> at most "
                  f"{w['ceiling_speedup']:.2f}x (binding pipe: {w['binding_pipe']} {w['pipes_us'][w['binding_pipe']]:.1f} "
                  f"us)  [MODELED bound]")
    for s in b.get("sensitivity", ()):
        print(f"    soft SyncAll at {s['sync_all_cycles']} cycles ({s['sync_all_us']:.2f} us): fused "
              f"{s['fused_one_launch_us']:.1f} us vs vendor-like {s['vendor_one_launch_us']:.1f} us "
              f"({s['speedup']:.2f}x)  [MODELED]")
