    // ---- (M, N) tile u of the GEMM with an M tile per DW tile (plan.tile_m): DW tile t's ohv x owv
    // pixels as rows [0, rows) (mEnd real, the rest fractal padding), blocks [o0, o0 + cbo)
    __aicore__ inline void SetGemmTile(uint32_t u)
    {
        const uint32_t j = UnitInner(u, tl.coSteps);
        SetTile(UnitOuter(u, tl.coSteps));
        m0 = 0;
        mEnd = ohv * owv;
        rows = (mEnd + 15) / 16 * 16;
        o0 = BlockStart(j, tl.cob);
        cbo = BlockLen(j, tl.cob, tl.co1);
    }

    // the tile's pixels of its blocks <-> NC1HWC0: one run per tile row, packed owv apart in UB
    __aicore__ inline void CopyRows(const LocalTensor<T>& ub, const GlobalTensor<T>& gm, bool toGm)
    {
        const uint32_t ohw = tl.oh * tl.ow;
        DataCopyParams p;
        p.blockCount = ohv;
        p.blockLen = owv * PB;
        p.srcGap = toGm ? 0 : (tl.ow - owv) * PB;
        p.dstGap = toGm ? (tl.ow - owv) * PB : 0;
        for (uint32_t j = 0; j < cbo; ++j) {
            const uint32_t g = ((n * tl.co1 + o0 + j) * ohw + oh0 * tl.ow + ow0) * C0, l = j * rows * C0;
            if (toGm)
                DataCopy(gm[g], ub[l], p);
            else
                DataCopy(ub[l], gm[g], p);
        }
    }
