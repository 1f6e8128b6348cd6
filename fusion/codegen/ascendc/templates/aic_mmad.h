            Mmad(c, aL0, b2, mp);  // C = A x B (cmatrixInitVal true: C starts at 0); the AIV adds the bias
