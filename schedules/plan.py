"""KernelPlan: every on-chip buffer of one fused kernel with its bytes, derived from a TileConfig.

The plan is the one source of truth: the UB budget check, the cost model, the LLVM schedule and
the Ascend C emitter all read tile sizes, buffers and loop trip counts from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fusion.core.errors import UBOverflowError
from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.activations import needs_scratch, needs_slope
from schedules.dw_forms import pool_form, wide_taps
from schedules.isa import itemsize
from schedules.channel_norm import add_ln_buffers
from schedules.loops import window_span
from schedules.twophase import (b_resident, bias_gemm_buffers, bias_gemm_rows, bias_in_cube, dw_grouped, dw_post16,
                                dw_wide_ok, epi_post16)
from schedules.workload import DwSepWorkload, TileConfig, buffer_copies, ceil_div
from schedules import twophase

ACC_BYTES = 4  # fp32 accumulators and biases
# rounds a 910B MIX AIV runs ahead of its AIC: it starts round k + 1 once the AIC has finished
# round k - MIX_LAG, so at most MIX_LAG + 1 cross-core flags are outstanding (the counters stop at
# 15). The emitted kernel paces by it and the cost model gates the AIV's tiles by it.
MIX_LAG = 2


def align(nbytes: int, to: int) -> int:
    return -(-nbytes // to) * to


# bytes per read ahead into L2 (KernelPlan.prefetch; schedules/prefetch.py): its L1 scratch, and
# 0.8 us of a 310P3 core's share of HBM
PF_PIECE = 16 * 1024

@dataclass(frozen=True)
class BufferPlan:
    name: str
    scope: str            # UB | L1 | L0A | L0B | L0C | BT (bias table)
    shape: tuple[int, ...]
    dtype: str
    copies: int           # 2 = ping/pong (double-buffered)
    role: str             # what it holds, for reports
    in_tir: bool = True   # materialised in the LLVM kernel's TIR (weights are read from memory there)
    tir_shape: tuple[int, ...] | None = None  # when the TIR's copy is unpadded (cube fractal rows)
    # False: a buffer of the LLVM build only (the TIR cross-check needs it), not allocated by the
    # Ascend C kernel and not in its budget
    in_kernel: bool = True

    @property
    def bytes_per_copy(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    @property
    def tir_bytes_per_copy(self) -> int:
        shape = self.tir_shape or self.shape
        return int(np.prod(shape)) * np.dtype(self.dtype).itemsize

    def aligned_bytes(self, alignment: int) -> int:
        return align(self.bytes_per_copy, alignment) * self.copies


def tile_sizes(wl: DwSepWorkload, tile: TileConfig) -> tuple[int, int, int, int]:
    """(th, tw, cob, cib) of a tile on a workload: the TileConfig's sizes clamped to the output
    and channel blocks (cib 0 = all of C1). Every consumer of the loop nest reads these."""
    # a channel LayerNorm in the DW unit needs every channel of the tile's pixels at once: all of
    # C1 (cib = C1); with a norm phase of its own (tile.norm_phase) the DW tile is free
    in_unit = wl.ln_eps is not None and not tile.norm_phase
    cib = wl.c1 if in_unit else min(tile.cib or wl.c1, wl.c1)
    return (min(tile.th, wl.out_height), min(tile.tw, wl.out_width), min(tile.cob, wl.co1), cib)


@dataclass(frozen=True)
class KernelPlan:
    workload: DwSepWorkload
    tile: TileConfig
    soc: SocSpec
    buffers: tuple[BufferPlan, ...] = field(default=())
    # two-phase, 910B: the DW is the identity and x already has the GEMM's A layout (a chain's GEMM
    # stage, fusion/driver/chain_stage.py), so phase 1 and its SyncAll are left out: the GEMM reads x
    gemm_only: bool = False
    # a chain member whose producer's clip (relu6 = min(relu, 6)) was deferred to it: min(x, x_max)
    # on each x tile before the taps (fusion/driver/chain.py; the producer's Fixpipe then does the relu)
    x_max: float | None = None
    # a chain's GEMM stage whose cores read only rows they wrote themselves in the member before
    # (fusion/driver/chain_local.py): the chain orders the two with a pipe barrier, not a SyncAll
    local_in: bool = False
    # two-phase on 310P (one core runs both phases): each core's GEMM tiles read only DW rows the
    # same core wrote, all channel blocks of its DW tiles being its own (schedules/local_handoff.
    # dw_local_ok; fusion/driver/chain_dw_local.py), so a pipe barrier on the core, not a
    # SyncAll, separates the phases; DW units and GEMM tiles both dealt by tile (loops.by_m_tile)
    local_dw: bool = False
    # a local_in stage after a local_dw producer: its M tiles dealt in the producer's bands of this
    # many (loops.by_band; 0 = one: by M tile)
    m_band: int = 0
    # local_dw with a GEMM M tile per DW tile (its valid pixels gathered by tile row from the
    # workspace, y and the residual stored / read by tile row): any tile shape is local, not only
    # rows of tiles that fill whole image rows (schedules/program_twophase.tile_m_tile)
    tile_m: bool = False
    # a chain member run as `chunks` image chunks, the DW of one beside the GEMM of another
    # (schedules/wave.py: its kernel is the plan at batch / chunks, once per chunk)
    chunks: int = 1
    # in a chain in image chunks, a GEMM stage run in its producer's GEMM task on the same chunk: after
    # a pipe barrier where local_in, else after a barrier over the AICs alone (schedules/wave.py)
    joined: bool = False
    # in a chain in image chunks: PW weights loaded for it by the AICs' task before (w_pw_ahead), by it for the
    # next member (w_pw_next); L1 held before / after its buffers for that (schedules/wave.ahead_layout)
    w_pw_ahead: bool = False
    w_pw_next: bool = False
    l1_lead: int = 0
    l1_tail: int = 0
    # in a chain (fusion/driver/chain_prefetch.py): bytes of a later member's PW weights this
    # member's DW phase reads ahead into L2 (schedules/prefetch.py), and bytes of this member's
    # own w_pw an earlier member read ahead (its first read of them hits L2)
    prefetch: int = 0
    prefetch_to: int = 0     # the member read ahead for: this many members later
    w_pw_warm: int = 0

    # --- loop structure -------------------------------------------------------------------
    @cached_property
    def _sizes(self) -> tuple[int, int, int, int]:
        return tile_sizes(self.workload, self.tile)

    @property
    def th(self) -> int:
        return self._sizes[0]

    @property
    def tw(self) -> int:
        return self._sizes[1]

    @property
    def cob(self) -> int:
        return self._sizes[2]

    @property
    def cib(self) -> int:
        return self._sizes[3]

    @property
    def in_tile_h(self) -> int:
        return window_span(self.th, self.workload.stride[0], self.workload.kernel[0])

    @property
    def in_tile_w(self) -> int:
        return window_span(self.tw, self.workload.stride[1], self.workload.kernel[1])

    @property
    def tiles_h(self) -> int:
        return ceil_div(self.workload.out_height, self.th)

    @property
    def tiles_w(self) -> int:
        return ceil_div(self.workload.out_width, self.tw)

    @property
    def n_tiles(self) -> int:
        return self.workload.batch * self.tiles_h * self.tiles_w

    @property
    def ci_steps(self) -> int:
        return ceil_div(self.workload.c1, self.cib)

    @property
    def co_steps(self) -> int:
        return ceil_div(self.workload.co1, self.cob)

    @property
    def cores(self) -> int:
        """Vector cores launched: one per tile at most (two-phase: per (tile, ci-block) unit)."""
        limit = self.soc.vector_cores
        want = self.tile.cores or limit
        units = self.n_tiles * (self.ci_steps if self.two_phase else 1)
        return max(1, min(want, limit, units))

    @property
    def two_phase(self) -> bool:
        """The two-phase variant (schedules/twophase.py): DW on all cores, SyncAll, M x N GEMM."""
        return self.tile.pw_engine == "twophase"

    @property
    def norm_phase(self) -> bool:
        """Two-phase with a channel LayerNorm: the norm runs in a phase of its own between the DW
        and the GEMM over the GM workspace (schedules/norm_phase.py), not inside the DW units."""
        return self.two_phase and self.tile.norm_phase and self.workload.ln_eps is not None

    @property
    def dw_grouped(self) -> bool:
        """Two-phase: phase 1 issues the grouped DW form (schedules/twophase.dw_grouped)."""
        if not self.two_phase:
            return False
        return dw_grouped(self.workload, self.soc, self.th, self.tw, self.cib)

    @property
    def dw_pool(self) -> bool:
        """Two-phase: phase 1 issues the grouped form's pool variant, a head block's window summed
        in halves with no taps read (schedules/dw_forms.pool_form)."""
        return self.dw_grouped and pool_form(self.workload, self.th, self.tw)

    @property
    def dw_post16(self) -> bool:
        """The DW bias and act1 in the storage dtype (schedules/twophase.dw_post16): two-phase
        phase 1, and the 310P cube kernel, whose cube reads the fp16 DW result."""
        if not (self.two_phase or self.variant == "cube-pw"):
            return False
        return dw_post16(self.workload)

    @property
    def dw_wide(self) -> bool:
        """The per-block fp16 DW form walks the tile as wide rows (schedules/dw_forms.wide_taps):
        dw_pitch is iw (dw_out is sized for that wherever it is legal, twophase.dw_wide_ok)."""
        if not self.dw_post16 or self.dw_grouped or not dw_wide_ok(self.workload):
            return False
        return wide_taps(self.soc, self.workload, self.th, self.tw)

    @property
    def dw_pitch(self) -> int:
        """Pixels between the rows of a DW result block in dw_out: the input tile's width where
        the DW walks wide rows (the grouped form, the wide per-block form), else tw."""
        return self.in_tile_w if self.dw_grouped or self.dw_wide else self.tw

    @property
    def epi_post16(self) -> bool:
        """The vector epilogue after the cube in the storage dtype (schedules/twophase.epi_post16):
        two-phase GEMM tiles (310P after L0C -> UB, 910B phase 3), and the 310P cube kernel's
        output blocks (the L0C -> UB move casts)."""
        if not (self.two_phase or self.variant == "cube-pw"):
            return False
        return epi_post16(self.workload, self.soc)

    @property
    def bias_in_cube(self) -> bool:
        """The PW bias added by a K = 16 Mmad and relu in the L0C -> UB move (schedules/twophase.
        bias_in_cube): the 310P kernels with the 16-bit epilogue (cube kernel, two-phase GEMM)
        whose tile leaves L0A / L0B room for its operands (twophase.bias_gemm_rows)."""
        if not (self.epi_post16 and bias_in_cube(self.workload, self.soc)):
            return False
        thw_al = None if self.two_phase else self.thw_al
        return bool(bias_gemm_rows(self.workload, self.soc, self.cob, self.tile.double_buffer, thw_al,
                                   self.tile.gemm_bm if thw_al is None else 0)[1])

    @property
    def b_resident(self) -> bool:
        """Two-phase: each GEMM core holds its N tile of PW weights in L1, loaded while phase 1
        runs (schedules/twophase.b_resident)."""
        if not self.two_phase:
            return False
        return b_resident(self.workload, self.soc, self.cob, self.tile.double_buffer, self.gemm_cap,
                          self.tile.b_stream, self.tile.gemm_bm)

    @property
    def a_keep(self) -> int:
        """Two-phase: each GEMM core keeps its A panel in L1 across its tiles of one M tile, the
        tiles dealt in contiguous ranges (schedules/twophase.a_keep): the panel's copies, 0 = not."""
        if not self.two_phase or self.gemm_only:
            return 0
        return twophase.a_keep(self.workload, self.soc, self.cob, self.tile.double_buffer, self.gemm_cap,
                               self.tile.b_stream, self.tile.gemm_bm)

    @property
    def gemm_rows(self) -> int:
        """Two-phase: rows of a GEMM tile (schedules/twophase.gemm_rows; the tile's gemm_bm where set)."""
        return twophase.gemm_rows(self.workload, self.soc, self.cob, self.tile.copies, self.tile.gemm_bm)

    @property
    def gemm_cap(self) -> int:
        """Two-phase: the vector cores the launch may hold, which bound the GEMM phase's cores
        (schedules/twophase.gemm_cap; the DW phase runs on `cores` of them)."""
        return twophase.gemm_cap(self.workload, self.soc, self.tile.cores, self.cores)

    @property
    def pw_on_cube(self) -> bool:
        return self.tile.pw_engine == "cube"

    @property
    def handoff_via_gm(self) -> bool:
        """PW on the cube of a decoupled chip (910B): the DW result goes to the cube core via GM/L2."""
        return self.pw_on_cube and not self.soc.coupled

    @property
    def variant(self) -> str:
        """vector-pw (DW and PW on the vector unit) | cube-pw (PW on the cube of the same AI core:
        310P) | cube-pw-mix (910B MIX kernel: DW on the AIVs, PW on the AICs, hand-off via GM) |
        two-phase (schedules/twophase.py)."""
        if self.two_phase:
            return "two-phase"
        if not self.pw_on_cube:
            return "vector-pw"
        return "cube-pw" if self.soc.coupled else "cube-pw-mix"

    @property
    def pw_weights_resident(self) -> bool:
        """With one co-step the PW weight block is the same for every tile: the kernel loads it
        once per core (loop-invariant hoist) instead of once per tile."""
        return self.co_steps == 1

    @property
    def fixpipe_epilogue(self) -> bool:
        """See uses_fixpipe_epilogue."""
        return uses_fixpipe_epilogue(self.workload, self.soc, self.pw_on_cube)

    @property
    def thw_al(self) -> int:
        """Tile pixels padded to the cube's 16-row fractals (rows of the A and C matrices)."""
        return align(self.th * self.tw, self.soc.cube_fractal[0])

    @property
    def aic_ratio(self) -> int:
        """AIV cores per AIC (910B: 2); tiles of AIV i are served by AIC i // aic_ratio."""
        return max(1, self.soc.vector_cores // max(1, self.soc.cube_cores))

    @property
    def mix_lag(self) -> int:
        """See MIX_LAG (910B MIX plans)."""
        return MIX_LAG

    @property
    def aic_cores(self) -> int:
        """AICs a 910B cube plan launches (one per group of aic_ratio AIVs); 0 otherwise."""
        return ceil_div(self.cores, self.aic_ratio) if self.handoff_via_gm else 0

    @property
    def handoff_slot_elems(self) -> tuple[int, int]:
        """910B: elements of one tile's GM slot for the DW result (c1, th*tw, C0) and for the
        pre-activation (co1, th*tw, C0; 0 with a Fixpipe epilogue). Every tile has its own slots."""
        if not self.handoff_via_gm:
            return 0, 0
        thw = self.th * self.tw
        wl = self.workload
        return wl.c1 * thw * C0, (0 if self.fixpipe_epilogue else wl.co1 * thw * C0)

    @property
    def handoff_bytes(self) -> int:
        """GM workspace the 910B hand-off needs: every tile's slots."""
        dw, pre = self.handoff_slot_elems
        return self.n_tiles * (dw + pre) * np.dtype(self.workload.dtype).itemsize

    @property
    def kernel_buffers(self) -> tuple[BufferPlan, ...]:
        """The buffers the Ascend C kernel allocates (the budget's buffers)."""
        return tuple(b for b in self.buffers if b.in_kernel)

    # --- budget ---------------------------------------------------------------------------
    @cached_property
    def scope_bytes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for b in self.kernel_buffers:
            out[b.scope] = out.get(b.scope, 0) + b.aligned_bytes(self.soc.ub_align)
        # the reads ahead's L1 scratch (schedules/prefetch.py), the regions around a wave member's buffers
        extra = (PF_PIECE if self.prefetch else 0) + self.l1_lead + self.l1_tail
        if extra:
            out["L1"] = out.get("L1", 0) + extra
        return out

    def capacity(self, scope: str) -> int:
        s = self.soc
        return {"UB": s.ub_usable_bytes, "L1": s.l1_bytes, "L0A": s.l0a_bytes,
                "L0B": s.l0b_bytes, "L0C": s.l0c_bytes, "BT": s.bt_bytes}[scope]

    @property
    def ub_bytes(self) -> int:
        return self.scope_bytes.get("UB", 0)

    def overflows(self) -> list[tuple[str, int, int]]:
        return [(sc, used, self.capacity(sc)) for sc, used in self.scope_bytes.items()
                if used > self.capacity(sc)]

    def fits(self) -> bool:
        return not self.overflows()

    def largest_buffer(self, scope: str) -> BufferPlan:
        return max((b for b in self.kernel_buffers if b.scope == scope),
                   key=lambda b: b.aligned_bytes(self.soc.ub_align))

    def buffer(self, name: str) -> BufferPlan:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)


def uses_fixpipe_epilogue(wl: DwSepWorkload, soc: SocSpec, cube: bool) -> bool:
    """910B cube plans whose epilogue Fixpipe does on the way out of L0C (bias from the bias
    table, relu on the fly); any other act2 or a residual goes back to the AIV through GM."""
    return cube and not soc.coupled and wl.act2 in soc.fixpipe_acts and not wl.residual


def l0_operand_copies(wl: DwSepWorkload, soc: SocSpec, thw_al, cob, db, coupled: bool):
    """Copies of the one-phase cube kernel's L0A / L0B operands (its A2 / B2 queues): 2 where the
    plan is double-buffered and two of each fit L0A / L0B -- the next load (MTE1) then fills the
    other buffer while the Mmad reads this one (an MTE1 stage, schedules/steps.L0_RING) -- else 1, loads
    and Mmads one after the other. The 910B MIX AIC only: the 310P kernel's bias GEMM
    (twophase.bias_gemm_rows) budgets L0 for one copy of each. Scalars or arrays of tiles."""
    if coupled:
        return 1
    b = itemsize(wl.dtype)
    fits = (2 * wl.c1 * thw_al * C0 * b <= soc.l0a_bytes) & (2 * wl.c1 * C0 * cob * C0 * b <= soc.l0b_bytes)
    return np.where(np.asarray(db) & fits, 2, 1) if np.ndim(fits) or np.ndim(db) else (2 if db and fits else 1)


def buffer_specs(wl: DwSepWorkload, soc: SocSpec, th, tw, cob, cib, db, cube: bool) -> list[tuple]:
    """Every buffer of the fused kernel as (name, scope, dims, dtype, copies, role, options) for
    clamped tile sizes th, tw, cob, cib and double buffering db -- Python ints or NumPy arrays of
    them (the tile space evaluates whole arrays of tiles at once); `cube`: PW on the cube. The one
    definition of the buffers: make_plan builds the plan from it, budget_bytes sums it.

    Three variants, each listing exactly what its Ascend C kernel allocates
    (fusion/codegen/ascendc/emit_kernel.py takes every InitBuffer size from here):
      vector PW      DW and PW on the vector unit, all in UB;
      cube, coupled  (310P) DW in UB, dw_out UB -> L1 -> L0A, weights GM -> L1 -> L0B, Mmad into
                     L0C; one output block at a time L0C -> UB into dw_acc (free once the DW of
                     the tile is done) for the epilogue -- or, 16-bit forms, cast on the way
                     straight into y_tile, the DW post-ops in dw_out and no dw_acc at all;
      cube, 910B     the AIV's UB holds the DW (and, without a Fixpipe epilogue, the epilogue:
                     the pre-activation read back from GM, widened block by block in dw_acc);
                     the AIC's L1/L0 the GEMM of the DW result read back from the GM hand-off,
                     with the bias in the bias table (BT) when Fixpipe does the epilogue.
    """
    dt = wl.dtype
    copies = np.where(db, 2, 1) if np.ndim(db) else buffer_copies(db)   # arrays: the tuner's sweep
    c1 = wl.c1
    kh, kw = wl.kernel
    ih, iw = window_span(th, wl.stride[0], kh), window_span(tw, wl.stride[1], kw)
    thw = th * tw
    thw_al = align(thw, soc.cube_fractal[0])
    coupled = soc.coupled
    fix = uses_fixpipe_epilogue(wl, soc, cube)
    out = []

    def add(name, scope, dims, dtype, n, role, **opts):
        out.append((name, scope, tuple(dims), dtype, n, role, opts))

    # 310P cube kernel, 16-bit forms (schedules/twophase.dw_post16, epi_post16): the DW post-ops
    # run on dw_out and the L0C -> UB move casts into y_tile -- with both, dw_acc is the LLVM build's
    dw16 = cube and coupled and dw_post16(wl)
    epi16 = cube and coupled and epi_post16(wl, soc)
    if dw16 and epi16:
        add("dw_acc", "UB", (cib, th, tw, C0), "float32", 1,
            "DW accumulator of the LLVM build (the Ascend C kernel's DW and epilogue run in the storage dtype)",
            in_kernel=False)
    elif cube and coupled:   # dw_acc also lands one padded L0C block
        land = "DW accumulator; then one PW output block moved L0C -> UB"
        if np.ndim(thw):
            add("dw_acc", "UB", (np.maximum(cib * thw, thw_al), C0), "float32", 1, land)
        elif cib * thw < thw_al:
            add("dw_acc", "UB", (thw_al, C0), "float32", 1, land, tir_shape=(cib, th, tw, C0))
        else:
            add("dw_acc", "UB", (cib, th, tw, C0), "float32", 1, land)
    else:
        then = "" if not cube else "; then one pre-activation block widened to fp32"
        add("dw_acc", "UB", (cib, th, tw, C0), "float32", 1, "DW accumulator" + then)
    dw_acc = out.pop()
    add("x_tile", "UB", (cib, ih, iw, C0), dt, copies, "input tile with halo (one input-channel block)")
    add("w_dw", "UB", (c1, kh, kw, C0), dt, 1, "depthwise taps, resident", in_tir=False)
    add("b_dw", "UB", (c1, C0), "float32", 1, "folded BN1 bias, resident", in_tir=False)
    if dw16:
        add("b_dw16", "UB", (c1, C0), dt, 1, "folded BN1 bias in the storage dtype", in_tir=False)
    if needs_slope(wl.act1):
        add("s_dw", "UB", (c1, C0), "float32", 1, "act1 per-channel slopes (PRelu), resident", in_tir=False)
    out.append(dw_acc)
    # (one role text: the stride decides the shape, and plans differing in it share a kernel text)
    what = "DW result after bias+act: the fused intermediate (rows dwPitch pixels apart)"
    if dw16 and dw_wide_ok(wl):   # rows at the input tile's pitch (the wide DW form may walk them)
        add("dw_out", "UB", (c1, th, iw, C0), dt, 1, what, tir_shape=(c1, th, tw, C0))
    else:
        add("dw_out", "UB", (c1, th, tw, C0), dt, 1, what)
    if wl.ln_eps is not None:   # schedules/channel_norm.py
        add_ln_buffers(add, th, tw)
    if not cube:
        add("w_pw", "UB", (c1 * C0, cob * C0), dt, copies, "PW weight block", in_tir=False)
        add("pw_acc", "UB", (cob, th, tw, C0), "float32", 1, "PW accumulator")
    else:
        if coupled:   # 310P: UB -> L1 on chip
            add("dw_out_l1", "L1", (c1, thw_al, C0), dt, 1, "DW result staged for the cube (NZ: C0 column "
                "blocks of the tile's pixels padded to 16 rows)", in_tir=False)
        else:         # 910B: the AIC reads every tile's DW result from its GM slot
            add("dw_in_l1", "L1", (c1, thw_al, C0), dt, copies,
                "DW result read back from the GM hand-off (cube A operand, NZ)", in_tir=False)
        # the cube's operands: A (pixels x Cin) and C (pixels x Cout) in 16-row fractals
        l0 = l0_operand_copies(wl, soc, thw_al, cob, db, coupled)
        add("a_l0a", "L0A", (c1, thw_al, C0), dt, l0, "cube A operand (DW result, ZZ fractals)", in_tir=False)
        add("w_pw_l1", "L1", (c1 * C0, cob * C0), dt, copies, "PW weight block (FRACTAL_Z)", in_tir=False)
        add("b_l0b", "L0B", (c1 * C0, cob * C0), dt, l0, "cube B operand (weights, ZN fractals)", in_tir=False)
        add("pw_acc", "L0C", (cob, thw_al, C0), "float32", 1, "PW accumulator (L0C, NZ)", tir_shape=(cob, th, tw, C0))
        if epi16 and bias_in_cube(wl, soc):   # the bias GEMM's operands (schedules/twophase.bias_in_cube)
            for spec in bias_gemm_buffers(wl, soc, cob, db, thw_al, "co-step"):
                add(*spec, in_tir=False)
        if fix:
            add("b_pw_l1", "L1", (wl.co1, C0), "float32", 1,
                "folded BN2 bias, resident in L1 (bias-table source)", in_tir=False)
            add("bias_bt", "BT", (cob, C0), "float32", 1,
                "the co-step's bias in the bias table: Mmad starts C from it", in_tir=False)
        elif not coupled:
            add("pre_tile", "UB", (cob, th, tw, C0), dt, copies,
                "pre-activation tile read back from the GM hand-off", in_tir=False)
        # hardswish needs an fp32 scratch; on the vector path pw_acc / dw_acc serve, here dw_acc
        # is busy on both sides of the act (DW result / the landed output block)
        if needs_scratch(wl.act1) or (not fix and needs_scratch(wl.act2)):
            add("act_tmp", "UB", (th, tw, C0), "float32", 1, "activation scratch", in_tir=False)
    if not fix:   # bias + act2 (+ residual) + cast on the vector unit, y through UB
        add("b_pw", "UB", (wl.co1, C0), "float32", 1, "folded BN2 bias, resident", in_tir=False)
        if epi16:
            add("b_pw16", "UB", (wl.co1, C0), dt, 1, "folded BN2 bias in the storage dtype", in_tir=False)
        if needs_slope(wl.act2):
            add("s_pw", "UB", (wl.co1, C0), "float32", 1, "act2 per-channel slopes (PRelu), resident", in_tir=False)
        if wl.residual:
            add("res_tile", "UB", (cob, th, tw, C0), dt, copies, "residual input tile")
        if epi16:   # each block lands thw_al rows: the last one's padding rows run past the tile
            add("y_tile", "UB", (cob * thw + thw_al - thw, C0), dt, copies,
                "output tile (+ the last block's fractal padding rows, landed from L0C)", tir_shape=(cob, th, tw, C0))
        else:
            add("y_tile", "UB", (cob, th, tw, C0), dt, copies, "output tile")
    else:  # Fixpipe writes y from L0C: the tile exists in the LLVM build only
        add("y_tile", "UB", (cob, th, tw, C0), dt, copies,
            "output tile of the LLVM build (on 910B Fixpipe writes y from L0C)", in_kernel=False)
    return out


def make_plan(wl: DwSepWorkload, tile: TileConfig, soc: SocSpec) -> KernelPlan:
    """Lay out every live buffer of the fused kernel for this tile (no budget check)."""
    th, tw, cob, cib = tile_sizes(wl, tile)
    if tile.pw_engine == "twophase":
        cores = KernelPlan(wl, tile, soc).cores   # from the tile alone (no buffers needed)
        specs = twophase.twophase_buffer_specs(wl, soc, th, tw, cob, cib, tile.double_buffer, cores,
                                               tile.norm_phase, twophase.gemm_cap(wl, soc, tile.cores, cores),
                                               tile.b_stream, tile.gemm_bm)
        bufs = tuple(BufferPlan(name, scope, tuple(int(d) for d in dims), dtype, int(n), role, **opts)
                     for name, scope, dims, dtype, n, role, opts in specs)
        return KernelPlan(wl, tile, soc, bufs)
    specs = buffer_specs(wl, soc, th, tw, cob, cib, tile.double_buffer, tile.pw_engine == "cube")
    bufs = tuple(BufferPlan(name, scope, tuple(int(d) for d in dims), dtype, int(n), role, **opts)
                 for name, scope, dims, dtype, n, role, opts in specs)
    return KernelPlan(wl, tile, soc, bufs)


def check_budget(plan: KernelPlan) -> KernelPlan:
    """Raise UBOverflowError naming bytes needed vs available, the dominant buffer and a fix."""
    over = plan.overflows()
    if not over:
        return plan
    scope, used, cap = over[0]
    big = plan.largest_buffer(scope)
    hint = suggest_tile(plan.workload, plan.soc, plan.tile)
    fix = (f"try --tile {hint.th}x{hint.tw} --cout-block {hint.cob} --cin-block {hint.cib or plan.workload.c1}"
           if hint else "no tile of this block fits: it cannot be fused")
    if plan.tile.double_buffer:
        fix += " or --no-double-buffer"
    raise UBOverflowError(
        f"tile {plan.tile.describe()} of block {plan.workload.describe()} needs {used:,} B "
        f"({used / 1024:.1f} KiB) of {scope} but {plan.soc.name} has {cap:,} B ({cap / 1024:.1f} KiB); "
        f"largest buffer: {big.name} {big.aligned_bytes(plan.soc.ub_align):,} B "
        f"({'×2 double-buffered' if big.copies == 2 else 'single'}); {fix}")


def suggest_tile(wl: DwSepWorkload, soc: SocSpec, like: TileConfig | None = None,
                 min_tiles: int = 1) -> TileConfig | None:
    """The largest (th·tw, then tw, then cob, then cib) tile that fits, keeping `like`'s other
    knobs, with at least `min_tiles` tiles when the output has that many pixels."""
    base = like or TileConfig(1, 1)
    oh, ow = wl.out_height, wl.out_width
    need = min(min_tiles, wl.batch * oh * ow)
    best = None
    for th in balanced_sizes(oh):
        for tw in balanced_sizes(ow):
            if wl.batch * ceil_div(oh, th) * ceil_div(ow, tw) < need:
                continue
            if best is not None and (th * tw, tw) <= (best.th * best.tw, best.tw):
                continue
            cand = TileConfig(th, tw, 1, 1, base.double_buffer, base.pw_engine, base.cores, base.norm_phase)
            if make_plan(wl, cand, soc).fits():
                best = cand
    if best is None:
        return None
    for cob in range(wl.co1, 0, -1):  # then grow the channel blocks as far as they fit
        cand = TileConfig(best.th, best.tw, cob, 1, base.double_buffer, base.pw_engine, base.cores, base.norm_phase)
        if make_plan(wl, cand, soc).fits():
            best = cand
            break
    for cib in range(wl.c1, 0, -1):
        cand = TileConfig(best.th, best.tw, best.cob, cib, base.double_buffer, base.pw_engine, base.cores, base.norm_phase)
        if make_plan(wl, cand, soc).fits():
            return TileConfig(best.th, best.tw, best.cob, 0 if cib == wl.c1 else cib,
                              base.double_buffer, base.pw_engine, base.cores, base.norm_phase)
    return best


def balanced_sizes(extent: int) -> list[int]:
    """Tile sizes that split `extent` into k near-equal tiles (no sliver at the end): ceil(extent/k)."""
    return sorted({ceil_div(extent, k) for k in range(1, extent + 1)})


def smallest_plan(wl: DwSepWorkload, soc: SocSpec) -> KernelPlan:
    """The plan with the smallest UB footprint (1×1 tile, one channel block, single-buffered)."""
    return make_plan(wl, TileConfig(1, 1, 1, 1, double_buffer=False), soc)
