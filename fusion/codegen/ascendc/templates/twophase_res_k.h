            // the residual as cbo more K blocks (schedules/twophase.res_in_cube): block j's rows of
            // res times the identity into C's column block j, so the Fixpipe writes PW + bias + res
            for (uint32_t j = 0; j < cbo; ++j) {
                LocalTensor<T> a1 = aL1Que.AllocTensor<T>();
                if (mEnd - m0 < rows)   // the last tile's pad rows: zeros (their output rows are dropped)
                    InitConstValue(a1[(mEnd - m0) * C0], InitConstValueParams<T>(1, static_cast<uint16_t>(rows - (mEnd - m0)),
                                                                               0, static_cast<T>(0)));
                CopyResRows(a1, o0 + j);
                aL1Que.EnQue(a1);
                a1 = aL1Que.DeQue<T>();
                LocalTensor<T> a2 = aL0Que.AllocTensor<T>();
                LoadAK(a2, a1, rows / 16, 1, 0);
                aL0Que.EnQue(a2);
                aL1Que.FreeTensor(a1);
                a2 = aL0Que.DeQue<T>();
                MmadParams mp;
                mp.m = rows;
                mp.n = C0;
                mp.k = C0;
                mp.cmatrixInitVal = false;
                Mmad(c[j * rows * C0], a2, eye, mp);
                aL0Que.FreeTensor(a2);
            }
