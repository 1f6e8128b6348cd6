                mp.cmatrixInitVal = false;  // the first K block starts C from the bias table, the others accumulate
                if (k0 == 0) {
                    LocalTensor<float> bt = btQue.AllocTensor<float>();  // the tile's bias, L1 -> bias table
                    DataCopy(bt, bPwL1[o0 * C0], DataCopyParams(1, static_cast<uint16_t>(cbo), 0, 0));
                    btQue.EnQue(bt);
                    bt = btQue.DeQue<float>();
                    Mmad(c, a2, b2, bt, mp);
                    btQue.FreeTensor(bt);
                } else {
                    Mmad(c, a2, b2, mp);
                }
