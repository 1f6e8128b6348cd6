            PreluBlock(accC, thw, 2, sDw[cg * C0], @SCRATCH@);  // act1
