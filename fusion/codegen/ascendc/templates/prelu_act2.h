        PreluBlock(acc, thw, 2, sPw[cg * C0], @SCRATCH@);  // act2
