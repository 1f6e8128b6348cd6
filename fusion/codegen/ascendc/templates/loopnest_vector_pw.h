// Loop nest (schedules/program.py):
//   for tile t = UnitAt(core, k, blockDim), k < UnitsOf(core, nTiles, blockDim)   (schedules/loops.py)
//     for ci-step: CopyInX (GM -> UB tile with halo, padding zero-filled) ; ComputeDw (taps, +b_dw, act1 -> dw_out)
//     for co-step: CopyInPw ([w_pw], [res]) ; ComputePw (MACs, +b_pw, act2, [+res] -> y) ; CopyOut (UB -> GM)