                    T wk[C0];
                    for (uint32_t k = 0; k < C0; ++k) wk[k] = wDw.GetValue(((cg * tl.kh + i) * tl.kw + j) * C0 + k);
                    for (uint32_t r = 0; r < tl.th; ++r)
                        TapRow(accC[r * tl.tw * C0], x[((c * tl.ih + r * tl.sh + i) * tl.iw + j) * C0], wk);