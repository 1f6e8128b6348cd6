// Loop nest (schedules/dwsep_schedule.py, PW on the cube of the same AI core):
//   for tile t = GetBlockIdx(); t < nTiles; t += GetBlockNum()
//     for ci-step: CopyInX (GM -> UB tile with halo) ; ComputeDw (taps, +b_dw, act1 -> dw_out)
//     StageA: dw_out UB -> L1 (NZ, rows padded to 16) -> L0A
//     for co-step: CopyInPw ([w_pw GM -> L1], [res]) ; Mma (L1 -> L0B, Mmad -> L0C)
//                  Epilogue (per output block L0C -> UB fp32, +b_pw, act2, [+res], cast) ; CopyOut (UB -> GM)