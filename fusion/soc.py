"""The one hardware table: per-SoC sizes, core counts and throughputs, each with its source.

Sources (facts gathered in shared/docs/ascend-facts.md):
  [devkit]   open Ascend C devkit (asc-devkit): include/basic_api, impl/basic_api/utils/
             kernel_utils_constants.h, architecture pages "NPU架构版本2201/2002".
  [akg]      MindSpore AKG per-SoC table, akg-mlir/include/akg/Utils/AnalysisForNpu.hpp.
  [pto]      PTO-ISA cost model calibrated on a 910B3 (include/pto/costmodel/).
  [ini]      CANN platform ini transcriptions (clock).
  [3rd]      third-party spec tables (HBM bandwidth).
  [hwinfo]   Huawei operator libraries (ascend-boost-comm example/ops/include/hardware.h,
             ops-transformer attention/mla_preprocess/op_kernel/mla_hardware.h): the
             HardwareInfo<ArchType> template (ASCEND_V220 = 910B; no per-arch specialisation)
             gives l2BW = 5, hbmBW = 1 (relative bandwidths) and l2Size = 192 MiB.
  [catlass]  Huawei's CATLASS GEMM templates (hicann/catlass include/catlass/arch/arch.hpp):
             AtlasA2 (910B) BIAS_SIZE = 1024 B (bias table, TPosition C2).
Values marked CALIBRATION are model parameters, not published facts: change them only
with a measurement and update the comment.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusion.errors import TargetError

KIB = 1024


@dataclass(frozen=True)
class SocSpec:
    name: str
    arch: str                  # devkit arch id
    coupled: bool              # cube and vector share one AI core (UB->L1 on chip) [devkit]
    vector_cores: int          # cores that run vector code (AIV on 910B; AI cores on coupled chips)
    cube_cores: int            # cores with a cube unit
    clock_ghz: float
    ub_bytes: int              # physical UB per vector core
    ub_usable_bytes: int       # what a kernel may allocate
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    bt_bytes: int              # bias table (TPosition C2) per cube core; 0: the arch has none
    l2_bytes: int
    ub_align: int = 32         # UB/L1 address alignment, one DataBlock [devkit]
    vector_repeat_bytes: int = 256   # one repeat = 8 DataBlocks [devkit]
    max_repeat: int = 255            # repeat count per instruction [devkit]
    cube_fractal: tuple[int, int, int] = (16, 16, 16)  # fp16 m×k×n per cycle [devkit; pto mad()]
    # CALIBRATION [pto]: fixed issue cost per vector instruction (16–42 cycles observed)
    vector_instr_cycles: int = 24
    # CALIBRATION [pto]: vector repeats retired per cycle
    vector_repeats_per_cycle: float = 1.0
    # CALIBRATION [pto arch config]: per-core GM->UB and UB->GM bandwidth, GiB/s
    gm_to_ub_gibps: float = 100.9
    ub_to_gm_gibps: float = 188.0
    # CALIBRATION [3rd]: aggregate HBM bandwidth shared by all cores, GB/s
    hbm_gbps: float = 1600.0
    # CALIBRATION [hwinfo]: aggregate L2 bandwidth shared by all cores, GB/s, for L2 hits (and
    # writes L2 absorbs). No absolute figure found; Huawei's operator library describes the
    # memory system to its tiling code by relative bandwidths l2BW = 5, hbmBW = 1, so this is
    # 5 x hbm_gbps. A per-core MTE2/MTE3 limit still applies on top of it.
    l2_gbps: float = 8000.0
    # CALIBRATION [devkit perf guide: bursts >= 16 KiB approach peak]: per-DMA setup latency, cycles
    dma_setup_cycles: int = 200
    # CALIBRATION (not published; devkit guide says it grows with cores launched): kernel
    # launch/head cost = base + per-core increment, microseconds
    launch_base_us: float = 3.0
    launch_per_core_us: float = 0.05
    # --- fields the cost model (fusion/costmodel/) reads besides the ones above -------------
    # DataCopyParams.blockCount <= 4095 bursts per DMA instruction [devkit]
    dma_max_bursts: int = 4095
    # CALIBRATION [devkit perf guide: 32 B-aligned GM transfers can drop to ~70 % of the
    # 512 B-aligned bandwidth]: bursts shorter than dma_short_burst_bytes move at this fraction
    # of the per-core bandwidth
    dma_short_burst_bytes: int = 512
    dma_short_burst_efficiency: float = 0.7
    # L1 -> L0A / L1 -> L0B bytes per cycle (MTE1) [devkit 2201 page]
    l1_to_l0a_bytes_per_cycle: int = 256
    l1_to_l0b_bytes_per_cycle: int = 128
    # CALIBRATION (coupled chips only; not published in the sources read): UB -> L1 on-chip move
    # and L0C -> UB move (vector pipe) throughput, bytes per cycle
    ub_to_l1_bytes_per_cycle: float = 64.0
    l0c_to_ub_bytes_per_cycle: float = 128.0
    # fp32 operands use a 16x8 (512 B) L0 fractal, i.e. half the K per cycle of fp16 [devkit:
    # L0A/L0B fractals are 512 B]; the model charges fp32 mmad at this many cycles per fp16 fractal
    cube_fp32_cycles_per_fractal: float = 2.0
    # activations Fixpipe applies on the fly when moving L0C out (besides bias and fp32->fp16)
    # [devkit Fixpipe: on-the-fly ReLU and conversion]; anything else needs a vector epilogue
    fixpipe_acts: tuple[str, ...] = ("none", "relu")
    # CALIBRATION (not published): one AIV<->AIC cross-core flag hand-off on decoupled chips
    # (SetFlag/WaitFlag through GM), cycles per hand-off
    cross_core_sync_cycles: int = 400

    @property
    def ub_usable_kib(self) -> float:
        return self.ub_usable_bytes / KIB


SOCS: dict[str, SocSpec] = {
    # 910B1/B2: 24 AIC + 48 AIV (1:2) [devkit 2201]; UB 192 KiB, usable 192 KiB - 256 B - 8 KiB
    # [devkit kernel_utils_constants.h]; L1 512 KiB, L0A/B 64 KiB, L0C 128 KiB; L2 192 MB [akg];
    # clock 1.8 GHz [ini]; bias table (C2) 1 KiB [catlass] (the devkit docs state no size).
    "ascend910b2": SocSpec(
        name="ascend910b2", arch="2201", coupled=False, vector_cores=48, cube_cores=24,
        clock_ghz=1.8, ub_bytes=192 * KIB, ub_usable_bytes=192 * KIB - 256 - 8 * KIB,
        l1_bytes=512 * KIB, l0a_bytes=64 * KIB, l0b_bytes=64 * KIB, l0c_bytes=128 * KIB,
        bt_bytes=1 * KIB, l2_bytes=192 * 1024 * KIB),
    # 910B3: 20 AIC + 40 AIV [devkit 2201]; memories as 910B2; clock 1.8 GHz [ini];
    # L2 192 MB [akg]; PTO-ISA bandwidths were calibrated on this part [pto]; bias table as 910B2.
    "ascend910b3": SocSpec(
        name="ascend910b3", arch="2201", coupled=False, vector_cores=40, cube_cores=20,
        clock_ghz=1.8, ub_bytes=192 * KIB, ub_usable_bytes=192 * KIB - 256 - 8 * KIB,
        l1_bytes=512 * KIB, l0a_bytes=64 * KIB, l0b_bytes=64 * KIB, l0c_bytes=128 * KIB,
        bt_bytes=1 * KIB, l2_bytes=192 * 1024 * KIB),
    # 310P3: 8 coupled AI cores (+7 vector cores not used by these kernels) [devkit 2002];
    # UB 256 KiB with 248 KiB usable [akg]; L1 1 MiB; L0C 256 KiB; L2 16 MB [akg]; no bias
    # table: the devkit's dav_m200 DataCopy C1 -> C2 reports "not support" and its Mmad refuses
    # the bias-table C source [devkit];
    # clock CALIBRATION 1.08 GHz [ini transcription]; HBM -> LPDDR4X ~204.8 GB/s [3rd].
    # Per-core DMA bandwidths, vector issue cost, DMA setup and launch cost are CALIBRATION
    # stand-ins taken over from the 910B3-calibrated defaults [pto]; no 310P figure was found.
    "ascend310p3": SocSpec(
        name="ascend310p3", arch="2002", coupled=True, vector_cores=8, cube_cores=8,
        clock_ghz=1.08, ub_bytes=256 * KIB, ub_usable_bytes=248 * KIB,
        l1_bytes=1024 * KIB, l0a_bytes=64 * KIB, l0b_bytes=64 * KIB, l0c_bytes=256 * KIB,
        bt_bytes=0, l2_bytes=16 * 1024 * KIB, hbm_gbps=204.8,
        # CALIBRATION (estimate, no 310P figure found): the [hwinfo] 5:1 L2:DRAM ratio of the
        # 910B applied to the 310P's 204.8 GB/s
        l2_gbps=5 * 204.8),
}

DEFAULT_SOC = "ascend910b2"
_ALIASES = {"910b2": "ascend910b2", "910b3": "ascend910b3", "310p3": "ascend310p3",
            "910b": "ascend910b2", "310p": "ascend310p3"}


def get_soc(name: str | None) -> SocSpec:
    key = (name or DEFAULT_SOC).lower()
    key = _ALIASES.get(key, key)
    if key not in SOCS:
        raise TargetError(f"unknown SoC '{name}'; known: {', '.join(sorted(SOCS))}")
    return SOCS[key]
