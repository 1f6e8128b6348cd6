"""Analytic cost model of the simulated Ascend target. Every figure it produces is MODELED.

Everything is derived from a KernelPlan (tile sizes, loop trip counts, buffers and their copies,
the PW engine) and the SoC table in fusion/core/soc.py; nothing is written per shape.

Primitive costs (cycles -> µs at `soc.clock_ghz`):

  DMA     t = ceil(bursts / dma_max_bursts) · dma_setup_cycles
              + bytes · (1 - h) / (bw_hbm · eff) + bytes · h / (bw_l2 · eff)
          bw_x = min(per-core bw of the direction, x_gbps / active DMA cores), x = hbm | l2
          h   = the fraction of the transfer's bytes L2 serves (see "L2" below; 0 = all HBM)
          eff = dma_short_burst_efficiency when the mean burst < dma_short_burst_bytes, else 1
          A row of a tile (w·C0 elements) is one contiguous burst in NC1HWC0; a tile that spans
          the full width is one burst per channel block.
  vector  t = instrs · vector_instr_cycles + repeats / vector_repeats_per_cycle
          one repeat = 256 B of the widest operand (64 fp32 / 128 fp16 lanes); one instruction
          covers one contiguous row of up to max_repeat repeats. Accumulating ops (DW taps, PW
          MACs) run at the fp32 accumulator width, as the plan's dw_acc / pw_acc are fp32.
  cube    t = fractals · cycles per fractal (1 for fp16, cube_fp32_cycles_per_fractal for fp32)
              + MTE1 moves L1→L0A / L1→L0B (bytes / bytes-per-cycle)
          fractals = ceil(m / 16) · k-blocks · n-blocks

Per core the steps of the lowered program (schedules/program.py) are replayed through four
in-order pipes MTE2 (GM→UB/L1), vector, cube, MTE3 (UB→GM, Fixpipe). A stage that fills a
buffer waits until the consumer of the same buffer `copies` uses back has finished (TQue
semantics: 2 copies = ping/pong). With double buffering this gives, for a run of equal steps,
exactly  first load + (n-1)·max(load, compute, store) + last compute + store;  without it the
model serialises every stage (the sum). Tiles go round-robin to `plan.cores` cores.

The fused loop nest per tile: per ci-step an input-tile DMA (halo rows/columns outside the image
are not read; a Duplicate fills the padding) and the DW on the vector unit (per tap one
multiply-add per output row, then bias, act1 and the cast); per co-step the PW weight block DMA
(hoisted out of the tile loop when there is a single co-step: loaded once per core, like the
resident w_dw, b_dw, b_pw), the residual tile, the PW and its epilogue (bias, act2, cast,
+residual), the output DMA. PW on the vector unit: one multiply-add instruction per input
channel and output-channel block over the th·tw·C0 fp32 accumulator (the broadcast of the input
channel is not counted: the plan has no buffer for it). PW on the cube of a coupled chip (310P):
UB→L1→L0A of the DW result once per tile, L1→L0B of the weight block, mmad, L0C→UB and the
epilogue on the vector unit. PW on the cube of 910B: the AIV cores write the DW result to GM, the
AIC cores (one per vector_cores/cube_cores AIVs) read it after a cross-core flag, run the GEMM
and write y through Fixpipe (bias + relu on the fly); any other act2 or a residual sends the
pre-activation back through GM to the AIV for the epilogue. All of that traffic is "handoff".

Kernel time = launch (launch_base_us + launch_per_core_us · cores launched)
            + max(busiest core, HBM bytes / hbm bandwidth, DMA bytes / l2 bandwidth),
where the HBM bytes leave out the writes L2 absorbs: those reach HBM later, behind the kernels
after it, as the vendor-like kernels' accounting has it (fusion/cost/baseline.time_program).
Bottleneck classes (the usual profiling table): launch-bound (launch >= body), memory-bound,
compute-bound (vector|cube), pipeline-bubbles (the busiest core idles > 10 % with no pipe busy).

L2 (MODELING ASSUMPTIONS, _l2_policy): every GM access goes through L2. Per kernel, the first
read of each byte of a tensor (input windows' union, each weight tensor, the residual) comes
from HBM; every re-read inside the kernel -- PW weights loaded by every core or per tile, input
halos, DW taps loaded per core -- hits L2, provided the kernel's working set (every tensor it
touches, the 910B hand-off buffer included) fits in soc.l2_bytes; a larger working set keeps,
tensor by tensor, the hits the vendor-like kernels keep (schedules/l2._l2_policy: input halo
re-reads hit, weight re-reads where the weights fit in half of L2, the hand-off stays in L2 where
it fits in half of it and otherwise goes through HBM once, a write is absorbed where its tensor
fits). L2 is write-back: the output is written to HBM once; the 910B
AIV->AIC hand-off (and pre-activation round trip) is written to L2 and consumed while resident,
so it never reaches HBM when the working set fits. A kernel boundary flushes L2: the fused
kernel's first read of its input comes from HBM. (The unfused baselines -- the vendor-like
kernels, fusion/cost/vendor_baseline.py, lowered programs on this step simulator -- let a kernel
read its predecessor's output from L2 when it fits: schedules/l2.produced_in_l2.) For
timing, each traffic kind's DMAs get the kernel-average hit fraction h = 1 - unique / DMA bytes;
hits share l2_gbps, misses hbm_gbps, and the per-core MTE2/MTE3 bandwidth caps both.
gm_read_bytes / gm_write_bytes / traffic_ratio keep counting every DMA byte (MTE2/MTE3);
hbm_read_bytes / hbm_write_bytes / hbm_traffic_ratio count what reaches HBM, l2_hit_bytes the
rest. The fused DMA bytes are the lowered program's (schedules/program_totals.py sums them before
the simulation, for the L2 policy); schedules/traffic.py gives the DMA floor any plan on N cores
must pay.

Not modeled: bank conflicts, scalar overhead, K-streaming through L0A (the plan keeps all of C1
of the cube's A operand in L0A), L2 set conflicts and other tenants of L2.

A body is at least its DMA bytes at the shared L2 bandwidth (results.l2_floor_us), on both
sides; no HBM floor charges reads and writes together (the measured networks reject it: see
l2_floor_us). Roofline bound (fusion/cost/roofline.py) = max(minimal GM bytes at the faster
level, half of those not in L2 at hbm bandwidth, FLOPs / peak of the units used), where
minimal GM bytes = input + all weights and biases + residual + output, each once (NC1HWC0,
channel tails padded), less what an earlier kernel left in L2 and the writes L2 absorbs. The
modeled HBM bytes are never below the minimal bytes.

Speed (the same results, bit for bit, as a plain replay): cores with the same tile sequence are
simulated once; a tile's steps are built from parts (ci-steps, co-steps, resident loads) shared
by every plan of the same workload and SoC; the vendor-like kernels are memoized per layer
(vendor_baseline.layer_kernel). tests/cost/test_costmodel.py pins all of it against the
straightforward paths.
"""

from fusion.cost.fused import (  # noqa: F401
    _Fused,
    _fused_l2,
    choose_engine,
    clear_part_caches,
    engine_reason,
    model_block,
    model_fused,
    pw_weights_resident,
)
from schedules.l2 import _L2, _l2_policy  # noqa: F401
from fusion.cost.pipes import (  # noqa: F401
    CoreRun,
    CStage,
    Stage,
    PipeStep,
    _compile,
    _new_run,
    _sim,
    _st,
    simulate,
)
from fusion.cost.primitives import (  # noqa: F401
    ACC_BYTES,
    ACT_OPS,
    MODELED,
    PIPES,
    TIMELINE_TILES,
    VecWork,
    cube_cycles,
    cube_fractals,
    cycles_to_us,
    dma_bandwidth,
    dma_us,
    itemsize,
    vec_op,
)
from fusion.cost.results import (  # noqa: F401
    Event,
    KernelCost,
    _Acc,
    _assemble,
    _classify,
    _cube_peak_flops_per_us,
    _launch_us,
    _vector_peak_flops_per_us,
)
from schedules.program_totals import clear_caches as clear_totals
from schedules.traffic import _input_bytes
from schedules.footprint import fused_min_bytes
from schedules.program import _tile_loops_cached
from schedules.program import tile_axes as _tile_axes
from fusion.cost.vendor_baseline import layer_kernel


def clear_caches() -> None:
    """Drop every memoized cost (tests; a long-running process that edits SoC tables)."""
    for fn in (_tile_axes, _input_bytes, _tile_loops_cached, layer_kernel):
        fn.cache_clear()
    clear_part_caches()
    clear_totals()
