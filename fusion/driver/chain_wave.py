"""A chain's members in image chunks, the DW of one chunk beside the GEMM of another (schedules/wave.py).
MODELED.

Pattern: a chain on a SoC with separate vector and cube cores at batch > 1.
Legality: every member passes schedules/wave.wave_refusal for the chunk count. In one candidate each
GEMM stage joins its producer's GEMM task where it may (after a pipe barrier where it follows its
producer on the same cores and its chunk plans allow it, else after a barrier over the AICs); in the
other every stage is a task of its own after a SyncAll (local pairings dropped).
Rewrite: every member's plan marked `chunks` = K, for the candidate (K of CHUNKS, stages joined or
not) whose wave the simulator times shortest (fusion/cost/wave.py), where that beats the chain as it
was; a log line either way.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from schedules.wave import wave_refusal

log = logging.getLogger("megafuse.chain")

CHUNKS = (2, 4)   # image chunks tried (MobileNetV1 b32 on 910B2, MODELED: 2 best, 4 re-reads weights)


def waved(chain, plans: dict, chunks: int, join: bool = True) -> dict | None:
    """The chain's plans marked to run in `chunks` image chunks, or None (a log line says why);
    join: each GEMM stage in its producer's GEMM task where it may (module doc)."""
    out, prev = {}, None
    for n in chain.blocks:
        p = replace(plans[n], chunks=1, joined=False)
        tries = (replace(p, joined=True), replace(p, joined=True, local_in=False)) if join and n in chain.stages else ()
        p = next((q for q in tries if wave_refusal(q, chunks, prev) is None), replace(p, local_in=False))
        why = wave_refusal(p, chunks, prev)
        if why is not None:
            log.info("chain: %s not in %d image chunks: %s %s", chain.name, chunks, n, why)
            return None
        out[n], prev = replace(p, chunks=chunks), p
    return out


def candidates(chain, plans: dict):
    """(chunks, plans) of every legal wave: per chunk count, the stages joined, and not where that
    differs."""
    for k in CHUNKS:
        seen = []
        for join in (True, False):
            got = waved(chain, plans, k, join)
            if got is not None and got not in seen:
                seen.append(got)
                yield k, got


__all__ = ["CHUNKS", "candidates", "waved"]
