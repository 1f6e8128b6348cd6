    // ---- phase 3 (910B, no Fixpipe epilogue): (M, N) tiles round-robin over the AIVs ------
    __aicore__ inline void EpiPhase(uint32_t core)
    {
        const uint32_t mine = UnitsOf(core, tl.mTiles * tl.coSteps, tl.epiCores);
        if (mine == 0) return;
@B_PW_LOAD@        for (uint32_t i = 0; i < mine; ++i) {
            SetGemmTile(UnitAt(core, i, tl.epiCores));
            LocalTensor<T> pre = preQue.AllocTensor<T>();
            DataCopy(pre, preGm[(o0 * tl.mAl + m0) * C0],
                     DataCopyParams(static_cast<uint16_t>(cbo), static_cast<uint16_t>(rows * PB),
                                    static_cast<uint16_t>((tl.mAl - rows) * PB), 0));
            preQue.EnQue(pre);
@TP_RES_IN@            pre = preQue.DeQue<T>();
@EPI_TILE@            preQue.FreeTensor(pre);
            yQue.EnQue(yT);
@TP_RES_FREE@            yT = yQue.DeQue<T>();
            CopyRows(yT, yGm, true);
            yQue.FreeTensor(yT);
        }
        bPwQue.FreeTensor(bPw);
    }
