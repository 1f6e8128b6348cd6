                mp.cmatrixInitVal = k0 == 0;  // the first K block starts C at 0, the others accumulate
                Mmad(c, a2, b2, mp);
