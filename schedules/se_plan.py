"""Squeeze-and-excitation in the two-phase kernel (schedules/twophase.py): the work split and the
buffers it adds. MODELED (the Ascend C emitter does not write the SE phase yet: such blocks are
refused on -t ascend, fusion/driver/tile_policy.py).

  phase 1   each DW unit (tile x channel-block group) sums its tile's pixels per channel (fp32)
            and multiplies the sums into its columns of the SE reduce conv: the unit's share of
            W1 . sum, se_mid floats, atomically added into a per-image GM slot (se_ws, zeroed by
            the host as SyncAll's flags are). W1 . mean is linear in the sums, so no core ever
            needs all channels of an image in phase 1.
  SyncAll   (kept for every SE block: the sums must be complete)
  phase se  per (image, group of se_blocks channel blocks) unit on the vector cores: the hidden
            vector (bias, 1/HW, se_act), the unit's rows of the expand conv (one Axpy per hidden
            channel), bias and the gate, then the DW result of those blocks in the workspace
            scaled in place (per chunk of SE_CHUNK_PX pixels: in, Mul, out; L2-resident).
  SyncAll   then the GEMM reads the scaled A operand as without SE.
"""

from __future__ import annotations

from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from schedules.isa import itemsize
from schedules.workload import DwSepWorkload, buffer_copies, ceil_div

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


def w1_rows(wl: DwSepWorkload, cols: int) -> int:
    """Hidden channels of the reduce conv per W1 piece of `cols` columns."""
    return max(1, min(wl.se_mid, SE_W_BYTES // (cols * 4)))


def w2_chans(wl: DwSepWorkload, chans: int) -> int:
    """Channels of the expand conv per W2 piece (channel-major rows of se_mid)."""
    return max(1, min(chans, SE_W_BYTES // (wl.se_mid * 4)))


def se_buffer_specs(wl: DwSepWorkload, soc: SocSpec, th: int, tw: int, cib: int, db: bool, cores: int) -> list:
    """The UB buffers SE adds to the two-phase kernel (twophase_buffer_specs' tuple form)."""
    if not wl.se:
        return []
    r, gb = wl.se_mid, se_blocks(wl, cores)
    out = [("se_acc", "UB", (th * tw, C0), ACC, 1, "one channel block of the DW tile in fp32, summed in halves"),
           ("se_sum", "UB", (cib, C0), ACC, 1, "the unit's per-channel pixel sums"),
           ("se_w1", "UB", (w1_rows(wl, cib * C0), cib * C0), ACC, 1, "a piece of the unit's columns of W1"),
           ("se_prod", "UB", (max(w1_rows(wl, cib * C0) * cib * C0, w2_chans(wl, gb * C0) * r),), ACC, 1,
            "SE conv products before the row sums"),
           ("se_hid", "UB", (max(r, 8),), ACC, 1, "the unit's share of W1 . sum / the image's hidden vector"),
           ("se_w2", "UB", (w2_chans(wl, gb * C0), r), ACC, 1, "a piece of the SE unit's rows of W2"),
           ("se_scale", "UB", (gb, C0), ACC, 1, "the SE unit's channel scales (gate output)"),
           ("se_tile", "UB", (se_chunk(wl), C0), wl.dtype, buffer_copies(db),
            "a chunk of the workspace's DW result, scaled in place")]
    if itemsize(wl.dtype) == 2:
        out.append(("se_scale16", "UB", (gb, C0), wl.dtype, 1, "the channel scales in the storage dtype"))
    return [(*spec, {"in_tir": False}) for spec in out]


def se_ws_bytes(wl: DwSepWorkload) -> int:
    """GM slot of the per-image hidden sums (fp32, atomically added in phase 1, zeroed by the host)."""
    return wl.batch * wl.se_mid * 4 if wl.se else 0
