"""`megafuse check -t npuir`: every fused block's module through the vendor's HIVM pipeline.

A block passes when the vendor compiler takes its module to the `hivmc` hand-off and its
PlanMemory needs at most the UB bytes the KernelPlan budgeted. A rejected module is reported
with the vendor's diagnostic on one line.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from fusion.codegen.npuir import module_file
from fusion.codegen.npuir.emit import emit_module
from fusion.codegen.npuir.vendor import VendorRun, run_vendor, vendor_target

# Why the modules are not executed: what `--enable-cpu-runner` did with bishengir-compile 1.2.0
CPU_RUNNER_NOTE = (
    "the vendor's CPU runner cannot execute these modules, so they are not compared with ONNX Runtime: "
    "bishengir-compile 1.2.0 with --enable-cpu-runner= still stops at the hivmc hand-off, and "
    "--enable-cpu-runner-after/-before=<pass> aborts with 'LLVM ERROR: [CPU Runner] Failed to run the "
    "CPU runner pipeline!' for every pass tried, the vendor's own load/vadd/store example included; "
    "the test suite runs small blocks' modules in a NumPy interpreter of the emitted ops instead "
    "(tests/npuir_interp.py) and compares those with ONNX Runtime")


@dataclass(frozen=True)
class BlockCheck:
    index: int
    workload: str
    tile: str
    plan_ub: int
    run: VendorRun

    @property
    def vendor_ub(self) -> int | None:
        return self.run.ub_peak

    @property
    def passed(self) -> bool:
        return self.run.reached_handoff and self.vendor_ub is not None and self.vendor_ub <= self.plan_ub

    def describe(self) -> str:
        head = f"block {self.index} {self.workload} tile {self.tile}: "
        if not self.run.reached_handoff:
            return head + f"REJECTED by bishengir-compile: {self.run.diagnostic}"
        if self.vendor_ub is None:
            return head + "FAIL: no PlanMemory placement in the vendor's output"
        verdict = "ok" if self.passed else "FAIL: the vendor needs more UB than the plan budgeted"
        return (head + f"vendor UB peak {self.vendor_ub:,} B / plan {self.plan_ub:,} B "
                f"= {self.vendor_ub / self.plan_ub:.3f} {verdict} ({self.run.seconds:.2f} s)")

    def to_json(self) -> dict:
        return {"block": self.index, "workload": self.workload, "tile": self.tile,
                "reached_hivmc_handoff": self.run.reached_handoff, "diagnostic": self.run.diagnostic,
                "vendor_ub_peak": self.vendor_ub, "plan_ub": self.plan_ub,
                "vendor_ub_buffers": len(self.run.placements),
                "ratio": None if self.vendor_ub is None else self.vendor_ub / self.plan_ub,
                "vendor_seconds": self.run.seconds,
                "passed": self.passed}


def check_plans(plans, workdir: Path | None = None) -> list[BlockCheck]:
    """Emit and vendor-compile each plan; modules go to `workdir` (a temporary one if None)."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="megafuse-npuir-") as tmp:
            return check_plans(plans, Path(tmp))
    out = []
    for i, plan in enumerate(plans):
        path = workdir / module_file(i)
        path.write_text(emit_module(plan, i, plan.soc.name))
        out.append(BlockCheck(i, plan.workload.describe(), plan.tile.describe(), plan.ub_bytes,
                              run_vendor(path, plan.soc.name)))
    return out


def cmd_check_npuir(cm, args) -> int:
    """The `check` subcommand on target npuir: print per block, exit 1 on any failure."""
    import json

    rows = check_plans([b.plan for b in cm.fused_blocks])
    passed = all(r.passed for r in rows)
    if args.json:
        print(json.dumps({"target": cm.target.name, "dtype": cm.dtype, "vendor_target":
                          vendor_target(cm.target.soc.name), "passed": passed,
                          "blocks": [r.to_json() for r in rows], "note": CPU_RUNNER_NOTE}, indent=2))
    else:
        for r in rows:
            print(f"  {r.describe()}")
        status = "PASS" if passed else "FAIL"
        print(f"{status} {len(rows)} fused blocks through bishengir-compile --target="
              f"{vendor_target(cm.target.soc.name)} to the hivmc hand-off ({cm.dtype})")
        print(f"note: {CPU_RUNNER_NOTE}")
    return 0 if passed else 1
