    // ---- (M, N) tile u of the GEMM: rows [m0, m0 + rows) (mEnd: the last real pixel + 1), blocks [o0, o0 + cbo)
    __aicore__ inline void SetGemmTile(uint32_t u)
    {
        const uint32_t mi = UnitOuter(u, tl.coSteps), j = UnitInner(u, tl.coSteps);
        m0 = BlockStart(mi, tl.bm);
        rows = BlockLen(mi, tl.bm, tl.mAl);
        mEnd = m0 + WindowValid(m0, rows, tl.m);   // past the last real pixel: fractal padding rows
        o0 = BlockStart(j, tl.cob);
        cbo = BlockLen(j, tl.cob, tl.co1);
    }

    // rows [m0, mEnd) of the tile's blocks <-> NC1HWC0: one contiguous run per block and image
    __aicore__ inline void CopyRows(const LocalTensor<T>& ub, const GlobalTensor<T>& gm, bool toGm)
    {
        const uint32_t ohw = tl.oh * tl.ow;
        for (uint32_t j = 0; j < cbo; ++j) {
            for (uint32_t r = m0; r < mEnd;) {
                const uint32_t img = RowImage(r, ohw), end = LoopMin(BlockStart(img + 1, ohw), mEnd);
                const uint32_t g = ((img * tl.co1 + o0 + j) * ohw + r - img * ohw) * C0, l = (j * rows + r - m0) * C0;
                if (toGm)
                    DataCopy(gm[g], ub[l], (end - r) * C0);
                else
                    DataCopy(ub[l], gm[g], (end - r) * C0);
                r = end;
            }
        }
    }
