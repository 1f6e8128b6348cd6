"""Squeeze-and-excitation in the two-phase kernel (schedules/twophase.py): the work split and the
buffers it adds. The Ascend C kernel (fusion/codegen/ascendc/emit_se.py, templates/twophase_se*.h)
issues what schedules/se_program.py counts; its timing is MODELED.

  phase 1   each DW unit (tile x channel-block group) sums its tile's pixels per channel (fp32)
            and multiplies the sums into its rows of the SE reduce conv (W1 transposed, one Axpy
            per channel): the unit's share of W1 . sum, se_pad floats, atomically added into a
            per-image GM slot (se_ws, zeroed by the host as SyncAll's flags are). W1 . mean is linear in the sums, so no core ever
            needs all channels of an image in phase 1.
  SyncAll   (kept for every SE block: the sums must be complete)
  phase se  per (image, group of se_blocks channel blocks) unit on the vector cores: the hidden
            vector (1/HW, bias, se_act), the unit's columns of the expand conv (W2 transposed: one
            Axpy per hidden channel, onto the bias), the gate, then the DW result of those blocks in the workspace
            scaled in place (per chunk of SE_CHUNK_PX pixels: in, Mul, out; L2-resident).
  SyncAll   then the GEMM reads the scaled A operand as without SE.
"""

from __future__ import annotations

from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.isa import itemsize
from schedules.workload import DwSepWorkload, ceil_div

SE_CHUNK_PX = 1024    # pixels of one channel block scaled per copy (fp16: 32 KiB, fp32: 64 KiB)
SE_W_BYTES = 8192     # SE conv weights stream through UB in pieces of at most this many bytes
ACC = "float32"


def se_blocks(wl: DwSepWorkload, cores: int) -> int:
    """Channel blocks per SE-phase unit: the images' blocks spread over the cores."""
    per_image = max(1, cores // max(1, wl.batch))
    return ceil_div(wl.c1, min(wl.c1, per_image))


def se_units(wl: DwSepWorkload, cores: int) -> int:
    return wl.batch * ceil_div(wl.c1, se_blocks(wl, cores))


def se_chunk(wl: DwSepWorkload) -> int:
    return min(wl.out_height * wl.out_width, SE_CHUNK_PX)


def se_pad(wl: DwSepWorkload) -> int:
    """Hidden channels padded to 8 (32 B of fp32: a DMA and a vector operand start are 32 B aligned)."""
    return ceil_div(wl.se_mid, 8) * 8


def w1_rows(wl: DwSepWorkload, cols: int) -> int:
    """Channels (rows of W1 transposed, se_pad floats each) per W1 piece of a unit of `cols` channels."""
    return max(1, min(cols, SE_W_BYTES // (se_pad(wl) * 4)))


def w2_rows(wl: DwSepWorkload, cores: int) -> int:
    """Hidden channels (rows of W2 transposed, the SE unit's channels each) per W2 piece."""
    return max(1, min(wl.se_mid, SE_W_BYTES // (se_blocks(wl, cores) * C0 * 4)))


def se_buffer_specs(wl: DwSepWorkload, soc: SocSpec, th: int, tw: int, cib: int, db: bool, cores: int) -> list:
    """The UB buffers SE adds to the two-phase kernel (twophase_buffer_specs' tuple form); scratch
    buffers (the kernel sets its own flags around them), one copy each but the chunk buffer, whose
    copies take turns (double-buffered: chunk i + 1 comes in while chunk i is scaled)."""
    if not wl.se:
        return []
    rp, gb = se_pad(wl), se_blocks(wl, cores)
    out = [("se_acc", "UB", (th * tw, C0), ACC, 1, "one channel block's valid pixels in fp32, summed in halves"),
           ("se_sum", "UB", (cib, C0), ACC, 1, "the unit's per-channel pixel sums"),
           ("se_w1", "UB", (w1_rows(wl, cib * C0), rp), ACC, 1, "a piece of the unit's rows of W1 transposed"),
           ("se_hid", "UB", (rp,), ACC, 1, "the unit's share of W1 . sum / the image's hidden vector"),
           ("se_b1", "UB", (rp,), ACC, 1, "the reduce conv's bias"),
           ("se_tmp", "UB", (rp,), ACC, 1, "se_act scratch"),
           ("se_w2", "UB", (w2_rows(wl, cores), gb * C0), ACC, 1, "a piece of the SE unit's columns of W2"),
           ("se_scale", "UB", (gb, C0), ACC, 1, "the SE unit's channel scales (bias, expand conv, gate)"),
           ("se_tile", "UB", (se_chunk(wl), C0), wl.dtype, 2 if db else 1,
            "a chunk of the workspace's DW result, scaled in place")]
    if itemsize(wl.dtype) == 2:
        out.append(("se_scale16", "UB", (gb, C0), wl.dtype, 1, "the channel scales in the storage dtype"))
    return [(*spec, {"in_tir": False}) for spec in out]


def se_ws_bytes(wl: DwSepWorkload) -> int:
    """GM slot of the per-image hidden sums (se_pad fp32, atomically added in phase 1, zeroed by the host)."""
    return wl.batch * se_pad(wl) * 4 if wl.se else 0


# SoCs whose Ascend C two-phase kernel writes the SE steps (fusion/codegen/ascendc/emit_se.py);
# elsewhere -t ascend keeps SE blocks unfused (fusion/driver/tile_policy.se_refusal)
SE_SOCS = ("ascend310p3", "ascend910b2")


def se_emitted(soc: SocSpec) -> bool:
    return soc.name in SE_SOCS
