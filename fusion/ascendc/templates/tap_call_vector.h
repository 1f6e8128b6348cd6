                    const LocalTensor<T> wk = wDw[((cg * tl.kh + i) * tl.kw + j) * C0];
                    for (uint32_t r = 0; r < tl.th; ++r)
                        TapRow(tacc[r * tl.tw * C0], x[((c * tl.ih + r * tl.sh + i) * tl.iw + j) * C0], wk);