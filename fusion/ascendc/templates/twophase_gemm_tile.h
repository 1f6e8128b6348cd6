    // ---- (M, N) tile u of the GEMM: rows [m0, m0 + rows) (mEnd: the last real pixel + 1), blocks [o0, o0 + cbo)
    __aicore__ inline void SetGemmTile(uint32_t u)
    {
        m0 = (u / tl.coSteps) * tl.bm;
        rows = tl.mAl - m0 < tl.bm ? tl.mAl - m0 : tl.bm;
        mEnd = tl.m - m0 < rows ? tl.m : m0 + rows;
        o0 = (u % tl.coSteps) * tl.cob;
        cbo = tl.co1 - o0 < tl.cob ? tl.co1 - o0 : tl.cob;
    }

    // rows [m0, mEnd) of the tile's blocks <-> NC1HWC0: one contiguous run per block and image
    __aicore__ inline void CopyRows(const LocalTensor<T>& ub, const GlobalTensor<T>& gm, bool toGm)
    {
        const uint32_t ohw = tl.oh * tl.ow;
        for (uint32_t j = 0; j < cbo; ++j) {
            for (uint32_t r = m0; r < mEnd;) {
                const uint32_t img = r / ohw, end = (img + 1) * ohw < mEnd ? (img + 1) * ohw : mEnd;
                const uint32_t g = ((img * tl.co1 + o0 + j) * ohw + r - img * ohw) * C0, l = (j * rows + r - m0) * C0;
                if (toGm)
                    DataCopy(gm[g], ub[l], (end - r) * C0);
                else
                    DataCopy(ub[l], gm[g], (end - r) * C0);
                r = end;
            }
        }
    }
