"""Tile autotuning (`megafuse tune`): the UB-pruned search space (space), the JSON-lines tuning
database (db), the evaluators — cost model for sim/ascend, checked and timed kernels for llvm —
(evaluators), and the sweeps (search). `megafuse compile` reads the database through
db.TunedTiles, the `tuned_tiles` hook of fusion.driver.compiler.compile_model."""

from fusion.tuning.db import TunedTiles, TuningDB, default_db_path, tuning_key
from fusion.tuning.space import REASONS, SpaceOptions, TileSpace, build_space

__all__ = ["REASONS", "SpaceOptions", "TileSpace", "TunedTiles", "TuningDB", "build_space",
           "default_db_path", "tuning_key"]
