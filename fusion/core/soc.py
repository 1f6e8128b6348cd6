"""The one hardware table: per-SoC sizes, core counts and throughputs, each with its source.

Sources:
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
  [fidelity] benchmarks/fidelity/points.json: published on-device measurements (the devkit's
             profiled examples on Atlas A2, the model zoo's 310P3 network throughput); the
             CALIBRATION values are fitted to its calibration set by benchmarks/fidelity/fit.py,
             each naming its point, and `megafuse fidelity` checks them on the validation set.
  [tbe-guide] CANN 5.0.4 TBE operator development guide, tbedevg_000010 (计算单元): the cube
             multiplies 16x16 by 16x16 fp16 per execution, "如果是int8输入,则一次完成16*32与32*16
             的矩阵乘" -- int8 does twice the MACs per cycle.
  [fixpipe]  Ascend C Fixpipe (atlasascendc_api_07_0251; pyasc asc.language.basic.fixpipe):
             CO1 -> GM with quantPre VDEQF16 / VQF322B8_PRE / VREQ8 (int32 -> int8 on the way,
             FixpipeParamsV220); SetFixpipePreQuantFlag (07_0254) lists the Atlas A2 series and
             not the inference series' AI Core (310P).
  [co1co2]   Ascend C enhanced DataCopy (atlasascendc_api_07_0104): on the inference series' AI
             Core only, CO1 -> CO2 (L0C -> UB) computes on the way (int32 -> half with deqScale).
  [cast]     Ascend C Cast (atlasascendc_api_07_0073) and TBE cast_to (atlaste_07_0043): int8 ->
             half on every SoC (uint8 -> half listed for the inference series), half <-> float,
             float -> int32 with CAST_RINT (round half to even), int32 -> float/half; the vector
             unit's multiply-adds take half/float (MulAddDst), not int8.
Values marked CALIBRATION are model parameters, not published facts: change them only
with a measurement and update the comment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from fusion.core.errors import TargetError

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
    # CALIBRATION values below are fitted to benchmarks/fidelity/points.json by
    # benchmarks/fidelity/fit.py ("point <id>" = the calibration point each comes from; the
    # defaults are the 910B (Atlas A2) fit, the devkit's profiled examples).
    # Vector issue cost per instruction, cycles: point a2_add_48core_bankfree (aiv_vec_time
    # 6.954 µs for 87 Adds of 127 repeats per core -> 16.9).
    vector_instr_cycles: int = 17
    # CALIBRATION [pto]: vector repeats retired per cycle (the fit above assumes it; point
    # a2_add_48core_bankfree cannot separate it from the issue cost)
    vector_repeats_per_cycle: float = 1.0
    # Per-core GM->UB (AIV MTE2) cap, GiB/s: point a2_copy_l2_reuse (75 % L2 hits read at
    # 125 GB/s per core while HBM serves the misses -> 116.3; the least cap that allows it).
    gm_to_ub_gibps: float = 116.3
    # CALIBRATION [pto arch config]: per-core UB->GM, GiB/s; consistent with point a2_add_1core's
    # MTE3 time (16384 stores of 8 KiB in 2613 µs) given dma_latency_cycles; not refitted.
    ub_to_gm_gibps: float = 188.0
    # Per-core GM->L1 (AIC MTE2) cap, GiB/s: point a2_matmul_8192 (aic_mte2_time 3435.6 µs for
    # the vendor tiling's per-core operand reloads, L2 serving re-reads -> 159.2).
    gm_to_l1_gibps: float = 159.2
    # Aggregate HBM read bandwidth, GB/s: points a2_copy_gm2ub_large + a2_copy_gm2ub_small
    # (302 MB streamed in 202.7 µs of MTE2 on 48 cores, solved with the per-DMA cost -> 1492;
    # the devkit quotes ~1.8 TB/s peak, 83 % of which is what its copy example sustains).
    hbm_gbps: float = 1492.0
    # Aggregate L2 bandwidth for hits (and for writes L2 absorbs), GB/s: 4 x hbm_gbps, from the
    # devkit's "L2 Cache read bandwidth is about 3-4x GM" (Matmul L2-Cache tiling case); point
    # a2_copy_l2_reuse agrees (its hits move at 125 GB/s per core = 5968 GB/s over 48 cores).
    # A per-core MTE2/MTE3 limit still applies on top of it.
    l2_gbps: float = 5968.0
    # Per-DMA-instruction issue cost, cycles: points a2_copy_gm2ub_small + a2_copy_gm2ub_large
    # (49152 DataCopys of 128 B per core in 548.2 µs of MTE2 -> 9.5). Back-to-back DMAs overlap
    # their latency; only the issue cost is serial.
    dma_setup_cycles: int = 9
    # Latency a DMA exposes when the kernel waits for it (single-buffered loop), cycles: point
    # a2_add_1core (16384 load-add-store rounds on one core -> 112.4); only the fidelity model of
    # single-buffered kernels charges it.
    dma_latency_cycles: int = 112
    # Vector time factor when two operands of an instruction share a UB bank group: the devkit's
    # bank_conflict_ub example (README scenario 2 vs 1: 4167 vs 2390 cycles -> 1.74). The
    # fused-kernel model does not charge it (its buffers are laid out apart).
    ub_bank_conflict_factor: float = 1.74
    # Kernel launch/head cost = base + per-core increment, µs: the gap between Task Duration and
    # the cores' busy time of the devkit Add example at 48 AIV (Cases 2-6: 9.4, 7.0, 6.5, 2.5, 6.0;
    # mean 6.3 -> base 3.9 with the per-core slope). The slope is not measured (the devkit shows
    # the head cost growing with the cores launched only in a figure); 0.05 µs/core is kept.
    launch_base_us: float = 3.9
    launch_per_core_us: float = 0.05
    # Scalar head of the vendor's Matmul API (tiling read, init) per cube kernel, µs: point
    # a2_matmul_tiny_n (aic_time 7.87 µs for a 128x30720x64 GEMM whose simulated program body is
    # 4.11 µs -> 3.76; benchmarks/fidelity/fit.py); only the vendor-like baseline's GEMM program
    # (fusion/cost/vendor_baseline.gemm_kernel, init_us) charges it.
    matmul_init_us: float = 3.76
    # --- fields the cost model (fusion/cost/) reads besides the ones above -------------
    # DataCopyParams.blockCount <= 4095 bursts per DMA instruction [devkit]
    dma_max_bursts: int = 4095
    # CALIBRATION [devkit perf guide: 32 B-aligned GM transfers can drop to ~70 % of the
    # 512 B-aligned bandwidth; the fit of dma_setup_cycles assumes it, point a2_copy_gm2ub_medium
    # (64 x 128 B bursts per DataCopy) checks it]: bursts shorter than dma_short_burst_bytes move at this fraction
    # of the per-core bandwidth
    dma_short_burst_bytes: int = 512
    dma_short_burst_efficiency: float = 0.7
    # L1 -> L0A / L1 -> L0B bytes per cycle (MTE1) [devkit 2201 page]
    l1_to_l0a_bytes_per_cycle: int = 256
    l1_to_l0b_bytes_per_cycle: int = 128
    # CALIBRATION (coupled chips only; not published in the sources read, and no calibration
    # point exercises them -- not refitted): UB -> L1 on-chip move
    # and L0C -> UB move (vector pipe) throughput, bytes per cycle
    ub_to_l1_bytes_per_cycle: float = 64.0
    l0c_to_ub_bytes_per_cycle: float = 128.0
    # fp32 operands use a 16x8 (512 B) L0 fractal, i.e. half the K per cycle of fp16 [devkit:
    # L0A/L0B fractals are 512 B]; the model charges fp32 mmad at this many cycles per fp16 fractal
    cube_fp32_cycles_per_fractal: float = 2.0
    # --- int8 (the fused int8 DW->PW kernel, fusion/cost/int8.py) -------------------------
    # int8 cube fractal m x k x n per cycle: 16 x 32 x 16, twice the fp16 MACs [tbe-guide]
    cube_int8_fractal: tuple[int, int, int] = (16, 32, 16)
    # how the hardware turns an int32 L0C result into int8: "fixpipe" = requantized by the
    # Fixpipe on its way to GM (VREQ8) [fixpipe]; "vector" = moved L0C -> UB and requantized on
    # the vector unit (no Fixpipe quantization on the inference series) [fixpipe, co1co2]. The
    # vendor-like int8 kernels use it; the fused int8 kernels requantize on the vector unit on
    # both SoCs (910B: Fixpipe NoQuant int32 -> GM -> AIV), ORT's rounding exactly.
    int8_requant: str = "fixpipe"
    # activations Fixpipe applies on the fly when moving L0C out (besides bias and fp32->fp16)
    # [devkit Fixpipe: on-the-fly ReLU and conversion]; anything else needs a vector epilogue
    fixpipe_acts: tuple[str, ...] = ("none", "relu")
    # CALIBRATION (not published; no calibration point exercises it -- not refitted): one
    # AIV<->AIC cross-core flag hand-off on decoupled chips
    # (SetFlag/WaitFlag through GM), cycles per hand-off
    cross_core_sync_cycles: int = 400
    # UNFITTED (no published or profiled figure found; the devkit's SyncAll page gives semantics
    # only): one SyncAll across a kernel's cores, cycles, after the slowest core arrives. 910B (A2)
    # has the hard sync: all AIVs, all AICs, then the two groups -- charged as two cross-core flag
    # hand-offs (2 x 400). 310P has the soft sync only: see with_soft_sync_all.
    sync_all_cycles: int = 800

    @property
    def ub_usable_kib(self) -> float:
        return self.ub_usable_bytes / KIB


# DERIVED, not measured: the soft SyncAll (the only one on 310P, arch 2002) as the devkit implements
# it (impl/basic_api kernel_operator_sync_impl.h, SoftSyncAllImpl): after PipeBarrier<PIPE_ALL>
# (the model's phase end already waits for every pipe) each core reads its own 32 B flag
# (GM -> UB, waited), writes it incremented (UB -> GM, waited through MTE3_MTE2), then polls all
# flags with GM -> UB reads until every core's count is in. Serial DMAs each exposing their
# latency: the read, the write, the poll that sees the last core's flag, and on average one more
# poll round for the arrival skew -- 4 x dma_latency_cycles (point a2_add_1core, the 910B fit the
# 310P table uses for every DMA constant); the scalar flag sums are not charged (no scalar pipe
# in the model). Until 2026-11 this was an unsourced 2400 cycles ("two GM round trips of ~1200");
# `bench` figures at that value are in the README.
SOFT_SYNC_DMA_TRIPS = 4


def with_soft_sync_all(spec: SocSpec) -> SocSpec:
    """The SoC with its SyncAll charged as the soft one, from its own DMA latency."""
    return replace(spec, sync_all_cycles=SOFT_SYNC_DMA_TRIPS * spec.dma_latency_cycles)


SOCS: dict[str, SocSpec] = {
    # 910B1/B2: 24 AIC + 48 AIV (1:2) [devkit 2201]; UB 192 KiB, usable 192 KiB - 256 B - 8 KiB
    # [devkit kernel_utils_constants.h]; L1 512 KiB, L0A/B 64 KiB, L0C 128 KiB; L2 192 MB [akg];
    # clock 1.8 GHz [ini] (point a2_matmul_8192 agrees: aic_mac_time 3076 µs, modeled cube 3113 µs);
    # bias table (C2) 1 KiB [catlass] (the devkit docs state no size).
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
    # clock 1.08 GHz [ini transcription]; LPDDR4X, 204.8 GB/s peak [3rd].
    # CALIBRATION [fidelity]: DRAM bandwidth 168 GB/s (82 % of the peak) and launch base 1.5 µs
    # (+0.05 µs/core: 1.9 µs per 8-core kernel), least squares of log(modeled / measured) over
    # points p310_resnet18, p310_resnet34, p310_resnet101, p310_resnet152, p310_vgg16 (the
    # vendor-like baseline of each network at batch 1, its kernels as simulated programs:
    # fusion/cost/baseline.py; benchmarks/fidelity/fit.py). L2 = 4 x DRAM as on 910B. Per-core DMA
    # bandwidths, vector issue cost and DMA setup are the 910B fit: no 310P per-kernel profile was
    # found, and the network points cannot separate them.
    "ascend310p3": with_soft_sync_all(SocSpec(
        name="ascend310p3", arch="2002", coupled=True, vector_cores=8, cube_cores=8,
        clock_ghz=1.08, ub_bytes=256 * KIB, ub_usable_bytes=248 * KIB,
        l1_bytes=1024 * KIB, l0a_bytes=64 * KIB, l0b_bytes=64 * KIB, l0c_bytes=256 * KIB,
        bt_bytes=0, l2_bytes=16 * 1024 * KIB, hbm_gbps=168.0, l2_gbps=4 * 168.0,
        launch_base_us=1.5, int8_requant="vector")),
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


@lru_cache(maxsize=4)
def cube_side(soc: SocSpec) -> SocSpec:
    """The AIC's MTE2 (GM->L1) has its own per-core bandwidth; dma_us reads gm_to_ub_gibps."""
    return replace(soc, gm_to_ub_gibps=soc.gm_to_l1_gibps)


# On-chip moves: the pipe each path busies and the SocSpec field of its rate (bytes per cycle).
# L1 -> L0A / L0B (LoadData) run on MTE1, a pipe of their own beside the cube's Mmads (pipe M):
# the two are separate instruction queues synchronised by flags (in Ascend C the A2 / B2 TQues'
# EnQue / DeQue), and the calibration point a2_matmul_8192 (4012 µs measured for 8192³ fp16 on
# 910B2, below the 5109 µs of loads and Mmads one after the other) shows the overlap. Whether a
# kernel gets it is its L0 queues' depth (schedules/steps.l0_copies: the MTE1 stage's L0 ring).
# L0C -> UB feeds the vector side, the 310P UB -> L1 is an MTE3 move. init->: InitConstValue filling L1 / L0A (no
# published rate: charged as L1 -> L0A bytes on the cube pipe; it runs once per core)
MOVE_PIPE = {"UB->L1": "MTE3", "L1->L0A": "MTE1", "L1->L0B": "MTE1", "L0C->UB": "vector", "init->L1": "cube",
             "init->L0A": "cube"}
_MOVE_RATE_FIELD = {
    "init->L1": "l1_to_l0a_bytes_per_cycle",
    "init->L0A": "l1_to_l0a_bytes_per_cycle",
    "UB->L1": "ub_to_l1_bytes_per_cycle",
    "L1->L0A": "l1_to_l0a_bytes_per_cycle",
    "L1->L0B": "l1_to_l0b_bytes_per_cycle",
    "L0C->UB": "l0c_to_ub_bytes_per_cycle",
}


def move_rate(soc: SocSpec, path: str) -> float:
    """Bytes per cycle of an on-chip move along `path` (a MOVE_PIPE key)."""
    return getattr(soc, _MOVE_RATE_FIELD[path])
