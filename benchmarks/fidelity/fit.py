"""Fit the CALIBRATION constants of fusion/core/soc.py to the calibration points and print them.

  PYTHONPATH=. python benchmarks/fidelity/fit.py

Each constant comes from the point(s) named beside it (benchmarks/fidelity/points.json); the
derivation inverts the same model formula the fidelity table evaluates (fusion/cost/fidelity.py,
fusion/cost/vendor_baseline.py). Validation points are never read here. The printed values are what
fusion/core/soc.py holds (rounded as there); tests/cost/test_fidelity.py checks they still agree.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fusion.cost import vec_op  # noqa: E402
from fusion.cost.fidelity import load_points, network_layers, predict  # noqa: E402
from fusion.core.soc import SOCS  # noqa: E402
from fusion.core.soc import cube_side
from fusion.cost.vendor_baseline import gemm_kernel  # noqa: E402

BANK_CONFLICT_CYCLES = (2390, 4167)   # bank_conflict_ub README: scenario 1 (none) vs 2 (read-read)
LAUNCH_GAPS_48 = {  # Task Duration - aiv_time at 48 AIV cores (add_high_performance README, Cases 2-6)
    "case2": 306.58 - 297.14, "case3": 268.5 - 261.5, "case4": 264.02 - 257.56,
    "case5": 187.68 - 185.15, "case6": 184.52 - 178.49}


def _bisect(f, lo, hi, iters=80):
    """The x in [lo, hi] with f(x) = 0 for a monotone f."""
    flo = f(lo)
    for _ in range(iters):
        mid = (lo + hi) / 2
        if (f(mid) > 0) == (flo > 0):
            lo, flo = mid, f(mid)
        else:
            hi = mid
    return (lo + hi) / 2


def fit_910b(pts: dict, soc):
    out = {}
    large, small = pts["a2_copy_gm2ub_large"], pts["a2_copy_gm2ub_small"]
    bl = large["params"]["bytes"] / large["params"]["cores"]
    n_l, n_s = large["params"]["instr_per_core"], small["params"]["instr_per_core"]
    eff = soc.dma_short_burst_efficiency
    # MTE2 times: large = n_l s + bl / share ; small = n_s s + bl / (share eff)  -> s, share
    t_l, t_s = large["pipe_us"]["MTE2"], small["pipe_us"]["MTE2"]
    s = (t_s - t_l / eff) / (n_s - n_l / eff)
    share = bl / (t_l - n_l * s)                      # bytes / µs per core
    out["dma_setup_cycles"] = s * soc.clock_ghz * 1e3
    out["hbm_gbps"] = share * large["params"]["cores"] / 1e3
    # L2 reads at 4x HBM (devkit L2 Cache tiling case: "L2 read bandwidth is about 3-4x GM")
    out["l2_gbps"] = 4 * out["hbm_gbps"]
    soc = dataclasses.replace(soc, dma_setup_cycles=round(out["dma_setup_cycles"]), hbm_gbps=round(out["hbm_gbps"]),
                              l2_gbps=4 * round(out["hbm_gbps"]))
    # per-core GM->UB: the L2-reuse copy's MTE2 time (75 % hits) -> the least per-core cap that allows it
    reuse = pts["a2_copy_l2_reuse"]
    p = reuse["params"]
    per = p["bytes"] / p["cores"]
    hbm_part = per * (1 - p["l2_hit"]) / (soc.hbm_gbps * 1e3 / p["cores"])
    l2_rate = per * p["l2_hit"] / (reuse["pipe_us"]["MTE2"] - p["instr_per_core"] * s - hbm_part)
    out["gm_to_ub_gibps"] = l2_rate * 1e6 / 2**30
    soc = dataclasses.replace(soc, gm_to_ub_gibps=round(out["gm_to_ub_gibps"], 1))
    # vector issue cost: the bank-conflict-free Add's vector time (one Add per DataCopy chunk)
    add = pts["a2_add_48core_bankfree"]
    p = add["params"]
    chunks = math.ceil(math.ceil(p["elems"] / p["cores"]) / p["copy_elems"])
    w = vec_op(soc, p["copy_elems"], 2)
    cyc = add["pipe_us"]["vector"] * soc.clock_ghz * 1e3
    out["vector_instr_cycles"] = (cyc / chunks - w.repeats / soc.vector_repeats_per_cycle) / w.instrs
    out["ub_bank_conflict_factor"] = BANK_CONFLICT_CYCLES[1] / BANK_CONFLICT_CYCLES[0]
    soc = dataclasses.replace(soc, vector_instr_cycles=round(out["vector_instr_cycles"]),
                              ub_bank_conflict_factor=round(out["ub_bank_conflict_factor"], 2))
    # launch at 48 cores: the mean gap between Task Duration and the cores' busy time
    gap = sum(LAUNCH_GAPS_48.values()) / len(LAUNCH_GAPS_48)
    out["launch_base_us"] = gap - 48 * soc.launch_per_core_us
    soc = dataclasses.replace(soc, launch_base_us=round(out["launch_base_us"], 1))
    # DMA latency exposed by a single-buffered kernel: the 1-core Add's Task Duration
    one = pts["a2_add_1core"]
    lat0 = dataclasses.replace(soc, dma_latency_cycles=0)
    chunks = math.ceil(one["params"]["elems"] / one["params"]["copy_elems"])
    out["dma_latency_cycles"] = (one["measured_us"] - predict(one, lat0)) / (3 * chunks) * soc.clock_ghz * 1e3
    soc = dataclasses.replace(soc, dma_latency_cycles=round(out["dma_latency_cycles"]))
    # per-core GM->L1 (AIC MTE2): the 8192^3 matmul's MTE2 time under the model's own tiling
    mm = pts["a2_matmul_8192"]
    p = mm["params"]

    def mte2_err(gib):
        s2 = dataclasses.replace(soc, gm_to_l1_gibps=gib)
        cube_side.cache_clear()
        return gemm_kernel(s2, "mm", p["m"], p["k"], p["n"], cores=p["cores"]).mte2_us - mm["pipe_us"]["MTE2"]
    out["gm_to_l1_gibps"] = _bisect(mte2_err, 20.0, 1000.0)
    soc = dataclasses.replace(soc, gm_to_l1_gibps=round(out["gm_to_l1_gibps"], 1))
    cube_side.cache_clear()
    # the vendor Matmul API's scalar head: the tiny matmul's per-core time minus the modeled body
    tiny = pts["a2_matmul_tiny_n"]
    p = tiny["params"]
    k0 = gemm_kernel(soc, "mm", p["m"], p["k"], p["n"], cores=p["cores"])
    out["matmul_init_us"] = tiny["measured_us"] - k0.body_us
    return out


def fit_310p(pts: dict, soc):
    """Two constants from the calibration networks: the per-kernel launch (base) and the DRAM
    bandwidth, least squares of log(modeled / measured) on a grid."""
    nets = [p for p in pts.values() if p["soc"] == soc.name and p["kind"] == "network"]
    best = None
    for bw in range(60, 261, 4):                         # GB/s
        trial = dataclasses.replace(soc, launch_base_us=0.0, hbm_gbps=float(bw), l2_gbps=4.0 * bw)
        # the launch base adds once per kernel (the split choice barely depends on it)
        base0 = [(predict(p, trial), len(network_layers(p["params"]["net"], p["params"].get("batch", 1),
                                                        p["params"].get("resolution", 224))), p) for p in nets]
        for base in [x / 10 for x in range(0, 151)]:     # 0 .. 15 µs
            errs = [math.log((t + n * base) / p["measured_us"]) for t, n, p in base0]
            err = sum(x * x for x in errs)               # least squares in log space
            if best is None or err < best[0]:
                best = (err, base, bw, max(abs(x) for x in errs))
    return {"launch_base_us": best[1], "hbm_gbps": best[2], "max_abs_log_err": best[3]}


def main() -> None:
    doc = load_points()
    cal = {p["id"]: p for p in doc["points"] if p["set"] == "calibration"}
    print("ascend910b2 (Atlas A2) -- from the devkit's profiled examples")
    for k, v in fit_910b(cal, SOCS["ascend910b2"]).items():
        print(f"  {k:26s} {v:10.3f}   (soc.py: {getattr(SOCS['ascend910b2'], k)})")
    if "--no-310p" in sys.argv:
        return
    print("ascend310p3 -- from the model zoo's whole-network batch-1 throughput")
    for k, v in fit_310p(cal, SOCS["ascend310p3"]).items():
        cur = getattr(SOCS["ascend310p3"], k, "-")
        print(f"  {k:26s} {v:10.3f}   (soc.py: {cur})")


if __name__ == "__main__":
    main()
