"""The Ascend C of a block chain (fusion/driver/chain.py): several two-phase blocks, one launch.

The chain kernel composes the blocks' own emitted code (EmittedKernel.chain_body: helpers and
classes, each block in its own namespace) and runs them in order from one entry point with a
SyncAll between blocks: on 910B one MIX launch and the hard SyncAll<false>() over AIVs and AICs,
on 310P one launch of the AI cores and the soft SyncAll (the chain's own flags in the workspace, a
scoped TPipe lending the UB it polls into). Before a GEMM stage marked local_in (its cores read
only rows they wrote in the block before: schedules/local_handoff.local_ok, checked here again) a
PipeBarrier<PIPE_ALL> on the core takes the SyncAll's place. A block's residual is the chain's x or an earlier
block's output (a boundary tensor, still in the workspace). Five GM arguments whatever the chain's
length:

  x          the first block's input (NC1HWC0)
  weights    every block's w_dw, b_dw, w_pw, b_pw packed, each at a 512 B-aligned offset
  y          the last block's output (NC1HWC0)
  workspace  per block its own two-phase workspace (SyncAll flags, DW result, pre-activation),
             then the boundary tensors between blocks (NC1HWC0), each 512 B-aligned and followed
             by BOUNDARY_SLACK readable bytes, then (310P) the chain's SyncAll flags
  tiling     every block's tiling struct, 8 B-aligned

The layouts are data (ChainLayout) that the host writes and the emulator run reads: one source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from fusion.codegen.ascendc.cxx import fill, snippet, sub, template
from fusion.codegen.ascendc.emit_kernel import VERSION, EmittedKernel
from fusion.codegen.ascendc.kernel_types import ArgSpec, Launch
from fusion.core.errors import MegafuseError
from schedules.workload import ceil_div
from schedules.local_handoff import local_ok
from schedules.program_twophase import a_slack_bytes
from schedules.wave import ahead_loads, ahead_target, chain_steps, join_ok, l1_own, warm_tasks_all
from schedules.prefetch import prefetch_ranges
from schedules.lowering import build_program

ALIGN = 512           # packed GM operands start on a 512 B boundary (full-bandwidth DMA bursts)
TILING_ALIGN = 8
# readable bytes after each boundary tensor: a gemm_only GEMM stage's last M tile reads its pad rows
# past the tensor (at most 15 rows of 32 B; schedules/program_twophase.a_slack_bytes)
BOUNDARY_SLACK = 512
WEIGHTS = ("w_dw", "b_dw", "w_pw", "b_pw")
# cross-core flag of the AICs' barrier before a joined stage (mode 0); the kernels' own are 1-4
# (emit_kernel.FLAG_DW / FLAG_PW, emit_twophase.FLAG_EPI_PRE / FLAG_EPI_FREE); the devkit gives kernels 0-10
FLAG_AIC_BARRIER = 5


def _align(n: int, a: int) -> int:
    return ceil_div(n, a) * a


@dataclass(frozen=True)
class Region:
    block: str
    what: str          # w_dw | b_dw | w_pw | b_pw | workspace | boundary | slack | sync
    offset: int
    nbytes: int


@dataclass(frozen=True)
class EmittedChain:
    name: str
    symbol: str
    blocks: tuple[EmittedKernel, ...]
    source: str
    headers: tuple[tuple[str, str], ...]     # (file name, text): each block's tiling header
    weights: tuple[Region, ...]
    workspace: tuple[Region, ...]
    tiling_offsets: tuple[int, ...]
    block_dim: int
    residual_from: tuple[int | None, ...] = ()   # per block: -1 the chain's x, j block j's output
    stages: tuple[str, ...] = ()                 # blocks that are GEMM stages (fusion/driver/chain_stage.py)
    chunks: int = 1                              # image chunks (schedules/wave.py): the blocks are one chunk's kernels

    @property
    def source_name(self) -> str:
        return f"{self.symbol}.cpp"

    @property
    def coupled(self) -> bool:
        """310P: one launch of the AI cores, the soft SyncAll between blocks."""
        return self.blocks[0].plan.soc.coupled

    @property
    def launch(self) -> Launch:
        args = ("x", "weights", "y", "workspace", "tiling")
        if self.coupled:
            return Launch(self.symbol, self.block_dim, "AICORE", args,
                          f"chain of {len(self.blocks)} two-phase blocks, soft SyncAll between blocks")
        return Launch(self.symbol, self.block_dim, "MIX_AIC_1_2", args,
                      f"chain of {len(self.blocks)} two-phase blocks, SyncAll between blocks", "mix_aic_1_2")

    @property
    def weights_bytes(self) -> int:
        return max((r.offset + r.nbytes for r in self.weights), default=0)

    @property
    def workspace_bytes(self) -> int:
        return max((r.offset + r.nbytes for r in self.workspace), default=0)

    def whole(self, spec: ArgSpec) -> ArgSpec:
        """A chunk kernel's NC1HWC0 tensor at the chain's batch (every chunk, N outermost)."""
        return replace(spec, shape=(spec.shape[0] * self.chunks, *spec.shape[1:])) if self.chunks > 1 else spec

    def args(self) -> tuple[ArgSpec, ...]:
        first, last = self.blocks[0], self.blocks[-1]
        return (self.whole(first.arg("x")),
                ArgSpec("weights", "weight", "uint8", "ND", (self.weights_bytes,),
                        "every block's w_dw, b_dw, w_pw, b_pw (layouts of the block kernels), packed"),
                self.whole(last.arg("y")),
                ArgSpec("workspace", "workspace", "uint8", "ND", (self.workspace_bytes,),
                        "per block its two-phase workspace, then the boundary tensors"),
                ArgSpec("tiling", "tiling", "uint8", "ND", (len(self.tiling_bytes()),), "every block's tiling struct"))

    def tiling_bytes(self) -> bytes:
        out = bytearray()
        for off, ek in zip(self.tiling_offsets, self.blocks):
            out += bytes(off - len(out)) + ek.tiling_bytes()
        return bytes(out)

    def zeroed(self) -> tuple[tuple[int, int], ...]:
        """(offset, bytes) of the workspace the host zeroes: each block's SyncAll flags, and the
        chain's own (310P)."""
        by = {ek.block: ek for ek in self.blocks}
        own = tuple((r.offset, by[r.block].workspace_zeroed_bytes) for r in self.workspace
                    if r.what == "workspace" and by[r.block].workspace_zeroed_bytes)
        return own + tuple((r.offset, r.nbytes) for r in self.workspace if r.what == "sync")

    def manifest(self) -> str:
        """The host's layout of the packed arguments (JSON)."""
        return json.dumps({
            "symbol": self.symbol, "blocks": [ek.block for ek in self.blocks], "block_dim": self.block_dim,
            "kernel_type": "KERNEL_TYPE_AICORE" if self.coupled else "KERNEL_TYPE_MIX_AIC_1_2",
            "args": [{"name": a.name, "dtype": a.dtype, "format": a.fmt, "shape": list(a.shape)} for a in self.args()],
            "weights": [r.__dict__ for r in self.weights], "workspace": [r.__dict__ for r in self.workspace],
            "workspace_zeroed": [list(z) for z in self.zeroed()],
            "tiling_offsets": list(self.tiling_offsets), "residual_from": list(self.residual_from),
            "stages": list(self.stages), "chunks": self.chunks,
            "local": [ek.block for ek in self.blocks if ek.plan.local_in],
            "stage_weights": "a GEMM stage's w_dw is 1 and its b_dw 0 on the real channels (the identity "
                             "depthwise); its w_pw / b_pw are the 1x1 conv's folded weights and bias in the "
                             "PW layouts of the block kernel" if self.stages else "",
            "tiling_structs": [ek.tiling_struct for ek in self.blocks],
        }, indent=2) + "\n"


def _res_source(name: str, kernels: list[EmittedKernel], residual_from) -> list[int | None]:
    """Per block: where its residual comes from (-1: the chain's x, j: block j's output, None)."""
    res = list(residual_from) if residual_from else [None] * len(kernels)
    if len(res) != len(kernels):
        raise MegafuseError(f"chain {name}: {len(res)} residual sources for {len(kernels)} blocks")
    for k, (ek, j) in enumerate(zip(kernels, res)):
        has = any(a.name == "res" for a in ek.args)
        if has != (j is not None) or (j is not None and not -1 <= j < k):
            raise MegafuseError(f"chain {name}: block {ek.block}'s residual source {j} does not match its kernel")
        src = kernels[0].arg("x") if j == -1 else kernels[j].arg("y") if j is not None else None
        if src is not None and (src.shape, src.dtype) != (ek.arg("res").shape, ek.arg("res").dtype):
            raise MegafuseError(f"chain {name}: block {ek.block}'s residual does not match its source")
    return res


def emit_chain(name: str, kernels: list[EmittedKernel], residual_from=None, stages=(), chunks: int = 1) -> EmittedChain:
    """The chain kernel of `kernels` (two-phase, one SoC, in order; block k's y is block k+1's x).
    residual_from: per block, the producer of its residual (-1: the chain's x; None: none);
    stages: the blocks that are GEMM stages (identity DW; the host packs their weights so);
    chunks > 1: the kernels are one image chunk's (schedules/wave.member_plan), run per chunk in
    chain_steps' steps with a SyncAll between steps (the chain's tensors hold every chunk); a joined
    GEMM stage runs in its producer's GEMM task after a barrier (KernelPlan.joined)."""
    if len(kernels) < 2:
        raise MegafuseError(f"chain {name}: needs at least two blocks")
    soc = kernels[0].plan.soc
    for ek in kernels:
        if ek.variant != "two-phase" or not ek.chain_body:
            raise MegafuseError(f"chain {name}: block {ek.block} is not a two-phase kernel")
        if ek.plan.soc != soc:
            raise MegafuseError(f"chain {name}: block {ek.block} is built for {ek.plan.soc.name}, "
                                f"the chain for {soc.name}")
        if {a.name for a in ek.args} - {"res"} != {"x", *WEIGHTS, "y", "workspace", "tiling"}:
            raise MegafuseError(f"chain {name}: block {ek.block} has inputs besides x, its weights and a residual")
    for a, b in zip(kernels, kernels[1:]):
        if a.arg("y").shape != b.arg("x").shape or a.arg("y").dtype != b.arg("x").dtype:
            raise MegafuseError(f"chain {name}: {a.block}'s output does not match {b.block}'s input")
    if chunks > 1 and soc.coupled:
        raise MegafuseError(f"chain {name}: image chunks need separate vector and cube cores")
    for k, ek in enumerate(kernels):   # a joined stage: after a GEMM whose output leaves from the AICs
        p = ek.plan
        if (p.joined or (chunks > 1 and p.local_in)) and not (
                chunks > 1 and p.joined and k and ek.block in stages and join_ok(kernels[k - 1].plan, p)):
            raise MegafuseError(f"chain {name}: block {ek.block} cannot run in its producer's task (a GEMM stage "
                                f"after a Fixpipe GEMM, in image chunks)")
    res = _res_source(name, kernels, residual_from)
    for k, ek in enumerate(kernels):
        if ek.plan.gemm_only and a_slack_bytes(ek.plan) and (k == 0 or a_slack_bytes(ek.plan) > BOUNDARY_SLACK):
            raise MegafuseError(f"chain {name}: block {ek.block} reads past its input, which has no slack there")
    local = {k for k, ek in enumerate(kernels) if ek.plan.local_in}
    for k in sorted(local):
        if k == 0 or kernels[k].block not in stages or not local_ok(kernels[k - 1].plan, kernels[k].plan):
            raise MegafuseError(f"chain {name}: block {kernels[k].block} is marked to follow its producer on the same "
                                f"cores, but it reads rows other cores write")
    if not set(stages) <= {ek.block for ek in kernels}:
        raise MegafuseError(f"chain {name}: GEMM stages {sorted(set(stages) - {ek.block for ek in kernels})} "
                            f"are not among its blocks")
    sym = f"megafuse_{name}"
    weights, off = [], 0
    for ek in kernels:
        for w in WEIGHTS:
            n = ek.arg(w).nbytes
            weights.append(Region(ek.block, w, off, n))
            off = _align(off + n, ALIGN)
    work, off = [], 0
    for ek in kernels:   # one per chunk: a chunk's DW result is read while the next chunk's is written
        for _ in range(chunks):
            work.append(Region(ek.block, "workspace", off, ek.workspace_bytes))
            off = _align(off + ek.workspace_bytes, ALIGN)
    for ek in kernels[:-1]:
        n = ek.arg("y").nbytes * chunks
        work.append(Region(ek.block, "boundary", off, n))
        work.append(Region(ek.block, "slack", off + n, BOUNDARY_SLACK))   # readable, never written
        off = _align(off + n + BOUNDARY_SLACK, ALIGN)
    if soc.coupled:   # the soft SyncAll's flags between blocks: 32 B per core, zeroed by the host
        work.append(Region(name, "sync", off, soc.vector_cores * 32))
    tiling_offsets, off = [], 0
    for ek in kernels:
        tiling_offsets.append(off)
        off = _align(off + len(ek.tiling_bytes()), TILING_ALIGN)

    w_at = {(r.block, r.what): r.offset for r in weights}
    pf_set = _prefetch_calls(name, kernels, w_at)
    ws_at = {}
    for r in work:   # a block's (first chunk's) workspace
        if r.what == "workspace":
            ws_at.setdefault(r.block, r.offset)
    out_at = {r.block: r.offset for r in work if r.what == "boundary"}
    calls, bodies = [], []
    last = len(kernels) - 1
    for k, ek in enumerate(kernels):
        ns = f"{sym}_b{k}"
        bodies.append(f"namespace {ns} {{\n{ek.chain_body}}}  // namespace {ns}\n")
        if chunks > 1:
            continue
        prev = kernels[k - 1].block if k else ""
        block_call = template("chain_block_core.h" if soc.coupled else "chain_block.h")
        calls.append(sub(block_call, K=k, BLOCK=ek.block, NS=ns, OPTYPE=ek.op_type,
                          TILING=ek.tiling_struct, TILING_OFF=tiling_offsets[k], WS_OFF=ws_at[ek.block],
                          IN="x" if k == 0 else f"ws + {out_at[prev]}",
                          OUT="y" if k == last else f"ws + {out_at[ek.block]}",
                          IN_WHAT="x" if k == 0 else f"{prev}'s output (workspace)",
                          RES_ARG=("" if res[k] is None else "x, " if res[k] == -1
                                   else f"ws + {out_at[kernels[res[k]].block]}, "),
                          OUT_WHAT="y" if k == last else "its output (workspace)", PF_SET=pf_set.get(k, ""),
                          **{w.upper(): w_at[ek.block, w] for w in WEIGHTS}))
        if k != last and k + 1 in local:
            calls.append(snippet("CHAIN_LOCAL"))
        elif k != last:
            calls.append(sub(snippet("CHAIN_SYNC_ALL_SOFT"), SYNC_OFF=work[-1].offset, SYNC_BYTES=work[-1].nbytes)
                         if soc.coupled else snippet("CHAIN_SYNC_ALL"))
    if chunks > 1:
        calls = _wave_calls(sym, kernels, chunks, res, w_at, ws_at, out_at, tiling_offsets)
    source = fill(template("chain_entry.cpp"), VERSION=VERSION, SYM=sym, N=len(kernels),
                  TASK_TYPE="" if soc.coupled else snippet("TASK_MIX_1_2"),
                  SYNC_WHAT=("the soft SyncAll on the chain's flags" if soc.coupled
                             else "hard SyncAll<false>() over all AIVs and AICs"),
                  BLOCKS=", ".join(ek.block for ek in kernels),
                  INCLUDES="".join(f'#include "{ek.tiling_header_name}"\n' for ek in kernels),
                  BODIES="\n".join(bodies), STAGES="".join(calls),
                  WAVE_NOTE=(f"//   In {chunks} image chunks (schedules/wave.py): instead of block by block, the steps below run\n"
                             f"//   one block's phase on one chunk per role (the AIVs' DW beside the AICs' GEMM of another\n"
                             f"//   chunk), each block's kernel at batch / {chunks} on its chunk's slices, a SyncAll between steps.\n"
                             if chunks > 1 else ""))
    headers = tuple((ek.tiling_header_name, ek.tiling_header) for ek in kernels)
    return EmittedChain(name, sym, tuple(kernels), source, headers, tuple(weights), tuple(work),
                        tuple(tiling_offsets), max(ek.block_dim for ek in kernels), tuple(res), tuple(stages), chunks)


def _prefetch_calls(name: str, kernels: list[EmittedKernel], w_at: dict) -> dict[int, str]:
    """Per host block: its SetPrefetch call at the start of its range of a later block's w_pw in
    `weights` (schedules/prefetch.prefetch_ranges: the one layout); checks that each
    consumer's ranges are the w_pw_warm its plan was timed with, inside its w_pw."""
    plans = [ek.plan for ek in kernels]
    warm: dict[int, int] = {}
    out = {}
    for h, c, start, nbytes in prefetch_ranges(plans):
        if c >= len(kernels) or c <= h:
            raise MegafuseError(f"chain {name}: block {kernels[h].block} reads ahead for a block not after it")
        if start + nbytes > kernels[c].arg("w_pw").nbytes:
            raise MegafuseError(f"chain {name}: block {kernels[h].block} reads past {kernels[c].block}'s PW weights")
        warm[c] = warm.get(c, 0) + nbytes
        out[h] = sub(snippet("CHAIN_PREFETCH"), OFF=w_at[kernels[c].block, "w_pw"] + start, BYTES=nbytes,
                     WHAT=kernels[c].block)
    for c, ek in enumerate(kernels):
        if warm.get(c, 0) != ek.plan.w_pw_warm:
            raise MegafuseError(f"chain {name}: block {ek.block} was timed with {ek.plan.w_pw_warm} bytes of its PW "
                                f"weights read ahead, the chain reads {warm.get(c, 0)}")
    return out   # (a host on 910B: its own kernel refused it, schedules/prefetch.prefetch_ok)


def _wave_calls(sym: str, kernels: list[EmittedKernel], chunks: int, res, w_at, ws_at, out_at,
                tiling_offsets) -> list[str]:
    """The entry's statements of a chain in image chunks: per step (schedules/wave.chain_steps) each
    role's task -- block k's phase on chunk c, its own kernel classes on the chunk's slices of its
    tensors and its chunk's workspace; a joined stage after its producer's phase and a barrier (a
    pipe barrier where it follows on the same cores, else one over the AICs) -- then a SyncAll
    (none after the last)."""
    last = len(kernels) - 1
    progs = [build_program(ek.plan) for ek in kernels]
    steps = chain_steps(chunks, [ek.plan for ek in kernels], progs)
    warm = warm_tasks_all(steps, progs, [ek.plan for ek in kernels])
    ahead = ahead_loads(steps, progs, [ek.plan for ek in kernels])
    out = []
    for s, step in enumerate(steps):
        tasks, what = "", []
        for i, (k, ph, c) in enumerate(step):
            ek = kernels[k]
            phase = progs[k].phases[ph]
            if i and ek.plan.joined and step[i - 1][0] == k - 1:   # in its producer's task (chain_steps)
                tasks += (sub(snippet("CHAIN_WAVE_LOCAL"), ROLE=phase.role.upper()) if ek.plan.local_in else
                          sub(snippet("CHAIN_WAVE_AIC_BARRIER"), FLAG=FLAG_AIC_BARRIER))
            xb, yb = ek.arg("x").nbytes, ek.arg("y").nbytes
            src = "x" if k == 0 else f"ws + {out_at[kernels[k - 1].block]}"
            dst = "y" if k == last else f"ws + {out_at[ek.block]}"
            if res[k] is None:
                res_arg = ""
            else:
                rb = ek.arg("res").nbytes
                rsrc = "x" if res[k] == -1 else f"ws + {out_at[kernels[res[k]].block]}"
                res_arg = f"{rsrc} + {c * rb}, "
            ws_off = ws_at[ek.block] + c * _align(ek.workspace_bytes, ALIGN)   # its chunk's (laid out above)
            tasks += sub(template("chain_wave_task.h"), ROLE=phase.role.upper(), CLS=phase.role.capitalize(),
                         K=k, BLOCK=ek.block, C=c, PHASE=phase.name, PH=ph, NS=f"{sym}_b{k}", OPTYPE=ek.op_type,
                         TILING=ek.tiling_struct, TILING_OFF=tiling_offsets[k], IN=f"{src} + {c * xb}",
                         OUT=f"{dst} + {c * yb}", RES_ARG=res_arg, WS_OFF=ws_off,
                         WARM=", true" if (s, k, ph) in warm else "",
                         AHEAD=_ahead_call(kernels, k, w_at) if s in ahead and phase.role == "aic" else "",
                         **{w.upper(): w_at[ek.block, w] for w in WEIGHTS})
            what.append(f"{phase.role.upper()} {ek.block} {phase.name} chunk {c}"
                        + (" (its PW weights still in L1)" if (s, k, ph) in warm else ""))
        out.append(sub(snippet("CHAIN_WAVE_STEP"), S=s, WHAT=", ".join(what), TASKS=tasks))
        if s + 1 < len(steps):
            out.append(snippet("CHAIN_WAVE_SYNC"))
    return out


def _ahead_call(kernels: list[EmittedKernel], k: int, w_at) -> str:
    """Block k's SetAhead: the next block's w_pw in `weights`, its tiling's GEMM geometry (the N tile
    each core loads, as its own PreloadB picks it) and where in block k's L1 region it lands
    (schedules/wave.ahead_layout / ahead_target)."""
    if k + 1 >= len(kernels):
        raise MegafuseError(f"block {kernels[k].block} loads weights ahead for no block after it")
    nxt = kernels[k + 1]
    t = dict(nxt.tiling_fields)
    off, room = ahead_target([ek.plan for ek in kernels], k)
    _, nbytes, _ = l1_own(nxt.plan)
    if off < 0 or off + nbytes > room:
        raise MegafuseError(f"block {kernels[k].block}: block {nxt.block}'s weights ({nbytes:,} B at {off:,}) "
                            f"do not fit its L1 region of {room:,} B")
    return sub(snippet("CHAIN_AHEAD"), W_PW=w_at[nxt.block, "w_pw"], M_TILES=t["mTiles"], CO_STEPS=t["coSteps"],
               CORES=t["gemmCores"], COB=t["cob"], CO1=t["co1"], C1=t["c1"], OFF=off, NEXT=nxt.block,
               REGION="above its buffers" if kernels[k].plan.l1_tail else "below its buffers") + " " * 12   # RunPhase's indent


def pack_weights(ec: EmittedChain, arrays: dict[str, dict]) -> "np.ndarray":
    """arrays: block name -> {w_dw, b_dw, w_pw, b_pw: NumPy arrays in the block kernel's layout}."""
    import numpy as np

    out = np.zeros(ec.weights_bytes, np.uint8)
    by_block = {ek.block: ek for ek in ec.blocks}
    for r in ec.weights:
        spec = by_block[r.block].arg(r.what)
        a = np.ascontiguousarray(arrays[r.block][r.what], dtype=np.dtype(spec.dtype))
        if a.shape != spec.shape:
            raise MegafuseError(f"chain {ec.name}: {r.block}.{r.what} has shape {a.shape}, expected {spec.shape}")
        out[r.offset:r.offset + r.nbytes] = a.reshape(-1).view(np.uint8)
    return out


__all__ = ["ALIGN", "WEIGHTS", "EmittedChain", "Region", "emit_chain", "pack_weights"]
