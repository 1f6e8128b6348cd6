            mp.cmatrixInitVal = false;  // C starts from the bias table: C = b_pw + A x B
            Mmad(c, aL0, b2, bt, mp);
            btQue.FreeTensor(bt);
