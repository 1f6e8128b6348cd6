// Loop nest (schedules/dwsep_schedule.py):
//   for tile t = GetBlockIdx(); t < nTiles; t += GetBlockNum()
//     for ci-step: CopyInX (GM -> UB tile with halo, padding zero-filled) ; ComputeDw (taps, +b_dw, act1 -> dw_out)
//     for co-step: CopyInPw ([w_pw], [res]) ; ComputePw (MACs, +b_pw, act2, [+res] -> y) ; CopyOut (UB -> GM)