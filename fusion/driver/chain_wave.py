"""A chain's members in image chunks, the DW of one chunk beside the GEMM of another (schedules/wave.py).
MODELED.

Pattern: a chain on a SoC with separate vector and cube cores at batch > 1.
Legality: every member passes schedules/wave.wave_refusal for the chunk count (a member that follows
its producer on the same cores is taken without that pairing: the wave's steps end in a SyncAll).
Rewrite: every member's plan marked `chunks` = K, for the K of CHUNKS whose wave the simulator times
shortest (fusion/cost/wave.py), where that beats the chain as it was; a log line either way.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from schedules.wave import wave_refusal

log = logging.getLogger("megafuse.chain")

CHUNKS = (2, 4)   # image chunks tried (MobileNetV1 b32 on 910B2, MODELED: 2 best, 4 re-reads weights)


def waved(chain, plans: dict, chunks: int) -> dict | None:
    """The chain's plans marked to run in `chunks` image chunks, or None (a log line says why)."""
    out = {}
    for n in chain.blocks:
        p = replace(plans[n], local_in=False, chunks=1)
        why = wave_refusal(p, chunks)
        if why is not None:
            log.info("chain: %s not in %d image chunks: %s %s", chain.name, chunks, n, why)
            return None
        out[n] = replace(p, chunks=chunks)
    return out


def candidates(chain, plans: dict):
    """(chunks, plans) of every chunk count whose wave is legal."""
    for k in CHUNKS:
        got = waved(chain, plans, k)
        if got is not None:
            yield k, got


__all__ = ["CHUNKS", "candidates", "waved"]
