"""Per-block kernel planning and scheduling: TileConfig → KernelPlan → TE + s_tir schedule."""
