// Two-phase kernel (SyncAll between the phases):
//   phase 1  DW core i: for unit u = i, i + blockDim, ... (u = tile x ciSteps + q):
//              x block -> UB, DW + bias + act1, DW result -> GM workspace (C1, M padded to 16, C0)
//   SyncAll
//   phase 2  GEMM core g: for (M, N) tile u = g, g + gemmCores, ... (u = mi x coSteps + j):
//              for K block k0 = 0, kb, ...: A (workspace) and B (w_pw) -> L1 -> L0A / L0B, Mmad (accumulate in L0C)
//              [310P: the bias Mmad (ones x bias fractals)]
//              epilogue: Fixpipe y (910B) | pre-activation -> GM, then flag EPI_PRE to the group's AIVs (910B) |
//                        L0C -> UB, [bias], act2, [+res], y (310P)
//  [phase 3  (910B, no Fixpipe epilogue; no SyncAll) AIV g x 2 + s: for each tile u of AIC g, in its order:
//            wait EPI_PRE, part s of u's rows: pre-activation in, [answer EPI_FREE,] bias, act2, [+res], y out
//            (AIC g waits for the answer to tile i - EPI_LAG before signalling tile i: flag counters stop at 15)]
