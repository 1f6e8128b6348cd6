// One MIX kernel (1 AIC + 2 AIVs per block), tiles round-robin over the plan's AIVs:
//   AIV i: for round k: [DW of tile i + k*cores -> its GM slot] ; CrossCoreSetFlag(FLAG_DW)
//                       finish round k - LAG: CrossCoreWaitFlag(FLAG_PW) [; epilogue from the pre-activation slot]
//   AIC g: for round k: CrossCoreWaitFlag(FLAG_DW) ; for the tiles of AIVs 2g, 2g+1 in round k:
//            slot GM -> L1 -> L0A ; per co-step: [w_pw GM -> L1] -> L0B, Mmad, Fixpipe (y, or pre-activation slot)
//          CrossCoreSetFlag(FLAG_PW)