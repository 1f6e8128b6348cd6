// Loop nest (schedules/program.py, PW on the cube of the same AI core), pipelined by one tile:
//   for tile t = UnitAt(core, k, blockDim), k < UnitsOf(core, nTiles, blockDim)   (schedules/loops.py)
//     for ci-step: CopyInX (GM -> UB tile with halo) ; ComputeDw (taps, +b_dw, act1 -> dw_out)
//     StageL1: dw_out UB -> L1 (NZ, rows padded to 16)
//     the previous tile's co-loop: for co-step: CopyInPw ([w_pw GM -> L1], [res]) ;
//                  Mma (L1 -> L0B, Mmad -> L0C[, + the bias Mmad]) ; Epilogue (per output block
//                  L0C -> UB, [+b_pw], act2, [+res], cast) ; CopyOut (UB -> GM)
//     StageL0A: L1 -> L0A (after the previous tile's Mmads)
//   the last tile's co-loop