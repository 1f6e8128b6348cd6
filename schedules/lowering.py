"""Lower a KernelPlan to its kernel program: the one entry every consumer calls."""

from __future__ import annotations

from schedules.plan import KernelPlan
from schedules.program import KernelProgram, build_onephase
from schedules.program_twophase import TwoPhaseProgram, build_twophase


def build_program(plan: KernelPlan) -> KernelProgram | TwoPhaseProgram:
    """A two-phase plan has its own builder (phases and barriers, not one loop nest per tile)."""
    return build_twophase(plan) if plan.two_phase else build_onephase(plan)
