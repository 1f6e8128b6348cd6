"""`megafuse bench QDQ_MODEL -t sim:SOC`: the int8 model, MODELED on one SoC.

Per fused int8 block (QDwSep): the fused int8 kernel (fusion/cost/int8.py) against the
vendor-like int8 kernels it replaces (DW int8 + 1x1 conv int8, requant fused as the vendor's
fusion switches allow: fusion/cost/vendor_int8.py), and against the fp16 fused kernel of the same
block shape (the float model's fused kernel at --dtype float16; the activations inferred from the
int8 clamps: a clamp starting at the zero point reads as ReLU). The whole model: every other node
runs the same vendor-like kernels on both sides. The float model's own fp16 figures come from
`bench FLOAT_MODEL --dtype float16` (benchmarks/int8_ascend.py puts the three side by side).
"""

from __future__ import annotations

from fusion.core.ir import Graph
from fusion.core.sanitize import display, display_message
from fusion.cost import model_block
from fusion.cost.int8 import best_int8_plan
from fusion.cost.vendor_int8 import block_int8_kernels, int8_network
from fusion.driver.tile_policy import choose_tile
from schedules.quant_plan import Int8Workload, int8_workload
from schedules.targets import Target
from schedules.workload import DwSepWorkload


def fp16_twin(wl: Int8Workload, attrs: dict) -> DwSepWorkload:
    """The fp16 DW->PW workload of the same shape (acts inferred from the int8 clamps)."""
    act1 = "relu" if attrs["dw_lo"] >= attrs["dw_y_zp"] else "none"
    act2 = "relu" if attrs["pw_lo"] >= attrs["pw_y_zp"] else "none"
    return DwSepWorkload(wl.batch, wl.cin, wl.cout, wl.height, wl.width, wl.kernel, wl.stride, wl.pads,
                         act1, act2, False, "float16")


def bench_int8(g: Graph, target: Target, model: str, header: dict | None = None) -> dict:
    """The MODELED int8 report of a quant_fuse'd graph on target.soc."""
    soc = target.soc
    vendor = int8_network(soc, g)
    rows, notes = [], []
    fused_blocks_us = replaced_us = 0.0
    for n in g.nodes:
        if n.op_type != "QDwSep":
            continue
        wl = int8_workload(g, n)
        members = tuple(n.attr("members"))
        best = best_int8_plan(wl, soc)
        vend = block_int8_kernels(soc, wl, members)
        vend_us = sum(k.time_us for k in vend)
        if best is None:
            notes.append(f"{n.name}: no int8 plan fits ({wl.describe()}): runs the vendor-like kernels")
            fused_blocks_us += vend_us
            replaced_us += vend_us
            continue
        plan, cost = best
        twin = fp16_twin(wl, dict(n.attrs))
        fp16 = model_block(choose_tile(twin, target).plan, n.name, timeline=False)
        fused_blocks_us += cost.time_us
        replaced_us += vend_us
        rows.append({
            "name": n.name, "members": list(members), "workload": wl.describe(), "tile": plan.describe(),
            "fused_int8_us": cost.time_us, "vendor_int8_us": vend_us,
            "speedup_vs_vendor_int8": vend_us / cost.time_us,
            "vendor_int8_kernels": [{"name": k.name, "kind": k.kind, "time_us": k.time_us} for k in vend],
            "fused_fp16_us": fp16.time_us, "int8_vs_fp16_fused": fp16.time_us / cost.time_us,
            "fp16_twin": twin.describe(), "launch_us": cost.launch_us,
            "pipes_us": cost.per_pipe_us, "cores": cost.cores_launched, "hbm_bytes": cost.hbm_bytes,
            "counts": cost.counts, "ub_bytes": plan.bytes_in("UB"), "l1_bytes": plan.bytes_in("L1"),
            "ub_bytes_available": soc.ub_usable_bytes, "notes": list(cost.notes), "figures": "modeled"})
    other = vendor.time_us - replaced_us
    fused_net = other + fused_blocks_us
    rep = dict(header or {})
    rep.update({
        "model": model, "target": target.name, "soc": soc.name, "dtype": "int8 (QDQ)", "figures": "modeled",
        "kernels": rows, "notes": notes,
        "fused_int8_network_us": fused_net, "vendor_int8_network_us": vendor.time_us,
        "speedup_vs_vendor_int8": vendor.time_us / fused_net,
        "vendor_int8_kernel_count": len(vendor.kernels),
        "vendor_int8_launch_us": vendor.launch_us,
        "fused_int8_kernel_count": len(vendor.kernels) - 2 * len(rows) + len(rows),
        "other_kernels_us": other,
        "int8_facts": {"cube_int8_fractal": list(soc.cube_int8_fractal), "int8_requant": soc.int8_requant,
                       "c0_int8": 32, "source": "fusion/core/soc.py [tbe-guide], [fixpipe], [co1co2], [cast]"},
    })
    return rep


def int8_plan_line(g: Graph, members: tuple, target: Target) -> str:
    """The modeled Ascend plan of the fused int8 block with these members (sim and ascend targets;
    on ascend the emitted kernel's plan): tile, budgets and modeled time; empty on other targets."""
    if target.kind not in ("sim", "ascend"):
        return ""
    n = next(n for n in g.nodes if n.op_type == "QDwSep" and tuple(n.attr("members")) == tuple(members))
    best = best_int8_plan(int8_workload(g, n), target.soc)
    if best is None:
        return "  no int8 plan fits the SoC's buffers"
    p, c = best
    return (f"  {p.describe()}  UB {p.bytes_in('UB'):,}/{p.soc.ub_usable_bytes:,} L1 {p.bytes_in('L1'):,}/"
            f"{p.soc.l1_bytes:,} L0A {p.bytes_in('L0A'):,} L0C {p.bytes_in('L0C'):,}  {c.time_us:.2f} us [MODELED]")


def print_int8(rep: dict) -> None:
    print(f"{display(rep['model'])} on {rep['target']} {rep['dtype']} [MODELED]")   # names: the model's, escaped
    print(f"  {'block':<12} {'int8 us':>9} {'vendor i8':>9} {'vs vendor':>9} {'fp16 us':>9} {'vs fp16':>8}  "
          f"tile / pipes")
    for r in rep["kernels"]:
        pipes = " ".join(f"{k} {v:.2f}" for k, v in r["pipes_us"].items())
        print(f"  {display(r['name']):<12} {r['fused_int8_us']:>9.2f} {r['vendor_int8_us']:>9.2f} "
              f"{r['speedup_vs_vendor_int8']:>8.2f}x {r['fused_fp16_us']:>9.2f} {r['int8_vs_fp16_fused']:>7.2f}x  "
              f"{r['tile']}  {pipes}")
        for note in r["notes"]:
            print(f"  {'':<12} {display_message(note)}")
    for note in rep["notes"]:
        print(f"  {display_message(note)}")
    print(f"  whole model: fused int8 {rep['fused_int8_network_us']:.1f} us vs vendor-like int8 unfused "
          f"{rep['vendor_int8_network_us']:.1f} us ({rep['speedup_vs_vendor_int8']:.2f}x; "
          f"{rep['vendor_int8_kernel_count']} vendor kernels, {rep['vendor_int8_launch_us']:.0f} us of launches; "
          f"other nodes {rep['other_kernels_us']:.1f} us on both sides)  [MODELED]")
