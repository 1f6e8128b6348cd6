"""Fusion levels (`--opt-level 0|1|2|3`, `fusion.compile(opt_level=)`), after the graph-kernel
fusion guide's `--opt_level` (0 off, 1 basic op fusion, 2 aggressive fusion, 3 expert).

    0  no fusion: one kernel per operator of the model (Identity dropped, Clip(0, 6) read as Relu6)
    1  folding: BatchNormalization and constant scale/shift nodes into the convolutions, the
       HardSwish spellings into one operator; on llvm conv + bias + activation (+ residual Add)
       as one kernel (passes/conv_epilogue.py, as a CPU runtime runs them)
    2  the default, unchanged: level 1 plus the DW -> PW blocks (with their fp16 post-ops and the
       modeled-slower fallback on sim/ascend), block chains with GEMM stages and deferred clips
       (sim/ascend)
    3  level 2: nothing beyond the default's numerics exists yet (a note says so)

Each level is a record of switches the driver reads; `level_effects` counts, from the graph
passes alone, what each one adds for a model (explain)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display

DEFAULT_LEVEL = 2
LEVEL3_NOTE = ("--opt-level 3 is --opt-level 2: megafuse has no fusion beyond the default's numerics yet "
               "(nothing that reorders the accumulation or drops a rounding)")


@dataclass(frozen=True)
class OptLevel:
    level: int
    fold: bool          # BN / constant scale-shift into convs; HardSwish spellings into one operator
    epilogues: bool     # llvm: conv + bias + act (+ residual) in one kernel
    fuse: bool          # DW -> PW blocks (fp16 post-ops, the fallback gate on sim/ascend)
    chain: bool         # sim/ascend: block chains, GEMM stages, deferred clips
    adds: str

    @property
    def note(self) -> str | None:
        return LEVEL3_NOTE if self.level == 3 else None


LEVELS = {
    0: OptLevel(0, False, False, False, False, "no fusion: one kernel per operator"),
    1: OptLevel(1, True, True, False, False,
                "folding: BatchNormalization and constant scale/shift into the convs, HardSwish spellings into "
                "one operator; llvm: conv + bias + activation (+ residual) as one kernel"),
    2: OptLevel(2, True, True, True, True,
                "DW -> PW blocks in one kernel (fp16 post-ops; sim/ascend: the modeled-slower fallback), "
                "block chains with GEMM stages and deferred clips (sim/ascend) -- the default"),
    3: OptLevel(3, True, True, True, True, "nothing yet: = level 2"),
}


def get_level(n) -> OptLevel:
    if isinstance(n, bool) or not isinstance(n, int) or n not in LEVELS:
        raise MegafuseError(f"opt_level must be one of 0, 1, 2, 3, got {n!r}")
    return LEVELS[n]


def level_arg(text: str):
    """argparse type of --opt-level: 0..3, or 'all' (bench)."""
    if text == "all":
        return "all"
    if text in ("0", "1", "2", "3"):
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 0, 1, 2, 3 or all, got '{display(text, 20)}'")


level_arg.__name__ = "--opt-level"


def single_level(args) -> int:
    """The level of a command that compiles once ('all' is bench's)."""
    lv = getattr(args, "opt_level", DEFAULT_LEVEL)
    if lv == "all":
        raise MegafuseError("--opt-level all compares the levels side by side: it is for bench; give 0, 1, 2 or 3")
    return lv


__all__ = ["DEFAULT_LEVEL", "LEVELS", "LEVEL3_NOTE", "OptLevel", "get_level", "level_arg", "single_level"]
