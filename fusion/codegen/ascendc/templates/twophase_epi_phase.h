    // ---- phase 3 (910B, no Fixpipe epilogue): AIV g x RATIO + s finishes part s of the rows of
    // every tile AIC g wrote, in the AIC's order, as soon as the AIC's flag for it arrives --------
    __aicore__ inline void EpiPhase(uint32_t core)
    {
        const uint32_t g = UnitOuter(core, @EPI_RATIO@), s = UnitInner(core, @EPI_RATIO@);
        const uint32_t mine = @EPI_UNITS@;
        if (mine == 0) return;
@B_PW_LOAD@        for (uint32_t i = 0; i < mine; ++i) {
            SetGemmTile(@EPI_UNIT@);
            {   // this AIV's part of the tile's rows (whole fractals; the last part ragged or empty)
                const uint32_t step = PartRows(rows, @EPI_RATIO@, 16);
                const uint32_t n = LoopMax(0, BlockLen(s, step, rows));
                m0 += LoopMin(BlockStart(s, step), rows);
                rows = n;
                mEnd = m0 + WindowValid(m0, rows, tl.m);
            }
            CrossCoreWaitFlag(@FLAG_EPI_PRE@);  // the AIC's Fixpipe of tile i is in the workspace
            // the answer, on MTE2 after this tile's reads: the AIC waits for tile i's before it
            // signals tile i + LAG (the last LAG tiles are not waited for, so not answered)
            const bool answer = i + @EPI_LAG@ < mine;
            if (rows == 0) {   // an empty part: the flags only
                if (answer) CrossCoreSetFlag<2, PIPE_MTE2>(@FLAG_EPI_FREE@);
                continue;
            }
            LocalTensor<T> pre = preQue.AllocTensor<T>();
            DataCopy(pre, preGm[(o0 * tl.mAl + m0) * C0],
                     DataCopyParams(static_cast<uint16_t>(cbo), static_cast<uint16_t>(rows * PB),
                                    static_cast<uint16_t>((tl.mAl - rows) * PB), 0));
            preQue.EnQue(pre);
@TP_RES_IN@            if (answer) CrossCoreSetFlag<2, PIPE_MTE2>(@FLAG_EPI_FREE@);
            pre = preQue.DeQue<T>();
@EPI_TILE@            preQue.FreeTensor(pre);
            yQue.EnQue(yT);
@TP_RES_FREE@            yT = yQue.DeQue<T>();
            CopyRows(yT, yGm, true);
            yQue.FreeTensor(yT);
        }
        bPwQue.FreeTensor(bPw);
    }
