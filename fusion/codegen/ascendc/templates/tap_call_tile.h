                    TapTile(tacc, x[((c * tl.ih + i) * tl.iw + j) * C0], wDw[((cg * tl.kh + i) * tl.kw + j) * C0]@TAP_FIRST@);
